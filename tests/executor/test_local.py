"""The local executor and the resumable batch runner, on CPU."""

from __future__ import annotations

import sys

import pytest

from upskills.executor import ExecutorConfig, ExecutorError, make_executor, run_units
from upskills.lift.store import read_records


def test_local_verdicts_are_the_expected_outcomes(local_results):
    got = {k: (r.verdict.passed, r.verdict.error_class) for k, r in local_results.items()}
    assert got == {
        "softmax_rows": (True, None),
        "softmax_rows__no_load_mask": (False, "runtime"),
        "row_sum_fp16": (True, None),
        "row_sum_fp16__drops_tail": (False, "mismatch"),
        "transpose_2d": (True, None),
        "syntax": (False, "syntax"),
        "no-own-kernel": (False, "guard"),
    }
    assert {r.worker for r in local_results.values()} == {"local:0"}


class _Replay:
    """A test double standing in for an executor: returns recorded results, counts units run."""

    name = "replay"
    device = "cpu"

    def __init__(self, results, stop_after=None):
        self.results, self.stop_after, self.ran = results, stop_after, []

    def run(self, units):
        for unit in units:
            if self.stop_after is not None and len(self.ran) == self.stop_after:
                raise KeyboardInterrupt("driver killed")
            self.ran.append(unit.key)
            yield self.results[unit.key]


def test_run_units_resumes_without_duplicates(tmp_path, units, local_results):
    from upskills.executor import UnitResult

    out = tmp_path / "results.jsonl"
    first = _Replay(local_results, stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        run_units(units, first, out)
    assert len(read_records(out, UnitResult)) == 3  # appended as they arrived
    with out.open("a") as f:
        f.write('{"key": "half a line')  # a write cut by the kill
    second = _Replay(local_results)
    results = run_units(units, second, out)
    assert second.ran == [u.key for u in units[3:]]  # nothing judged twice
    lines = out.read_text().splitlines()
    assert len(lines) == len(units) == len({r.key for r in read_records(out, UnitResult)})
    assert [r.key for r in results] == [u.key for u in units]


def test_duplicate_keys_are_refused(units):
    with pytest.raises(ValueError, match="given twice"):
        run_units([units[0], units[0]], _Replay({}))


def test_ray_executor_without_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ExecutorError, match=r"pip install 'upskills\[ray\]'"):
        make_executor(ExecutorConfig(name="ray"), "cpu")


def test_cli_ray_executor_without_ray_is_a_clear_error(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from upskills._cli.main import main

    monkeypatch.setitem(sys.modules, "ray", None)
    (tmp_path / "k.py").write_text("x = 1\n")
    args = ["check", "transpose_2d", str(tmp_path), "--device", "cpu", "--executor", "ray"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert "upskills[ray]" in result.output
