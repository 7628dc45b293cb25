"""``upskills check``: readable and JSON verdicts, exit codes, bad task files."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.verify.conftest import GOOD_ADD, VECTOR_ADD_REF
from upskills._cli.main import main

pytest.importorskip("triton")


@pytest.fixture
def files(tmp_path):
    task = tmp_path / "small_add.py"
    task.write_text(VECTOR_ADD_REF.replace("N = 4096", "N = 1003"))
    good = tmp_path / "good.py"
    good.write_text(GOOD_ADD)
    bad = tmp_path / "bad.py"
    bad.write_text(GOOD_ADD.replace("x + y, mask=mask", "x - y, mask=mask"))
    return task, good, bad


def test_check_json_pass_and_fail(files):
    task, good, bad = files
    runner = CliRunner()
    res = runner.invoke(
        main, ["check", str(task), str(good), "--device", "cpu", "--json", "--seeds", "2"]
    )
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.output)
    assert verdict["passed"] is True and verdict["task"] == "small_add"
    assert len(verdict["variants"]) == 4 and verdict["timing_status"] == "unavailable"
    res = runner.invoke(main, ["check", str(task), str(bad), "--device", "cpu", "--seeds", "1"])
    assert res.exit_code == 1
    assert "FAILED (mismatch, stage correctness)" in res.output
    assert "bad.py: variant 'default' seed" in res.output


def test_malformed_task_file_is_a_clear_error(tmp_path, files):
    _, good, _ = files
    broken = tmp_path / "broken_task.py"
    broken.write_text("import torch\n\nclass Model(:\n    pass\n")
    res = CliRunner().invoke(main, ["check", str(broken), str(good), "--device", "cpu"])
    assert res.exit_code not in (0, 1)
    assert "broken_task.py" in res.output


def test_missing_candidate_file(files):
    task, _, _ = files
    res = CliRunner().invoke(main, ["check", str(task), "nope.py", "--device", "cpu"])
    assert res.exit_code == 2 and "nope.py" in res.output


def test_cuda_without_a_gpu_is_a_clear_error(files):
    from tests.conftest import cuda_available

    if cuda_available():
        pytest.skip("this machine has a GPU")
    task, good, _ = files
    res = CliRunner().invoke(main, ["check", str(task), str(good), "--device", "cuda"])
    assert res.exit_code == 2 and "no CUDA GPU" in res.output


def test_verdict_messages_do_not_carry_this_machines_paths():
    import os
    import sys

    from upskills.verify.verifier import redact_paths

    inside = os.path.join(sys.prefix, "lib", "torch", "nn", "functional.py")
    home = os.path.join(os.path.expanduser("~"), "work", "kernel.py")
    import upskills.verify.judge as judge

    ours = judge.__file__
    text = redact_paths(f"ImportError: cannot import name 'X' ({inside}); see {home}; at {ours}")
    assert sys.prefix not in text and os.path.expanduser("~") + "/" not in text
    assert "<python>/lib/torch/nn/functional.py" in text and "~/work/kernel.py" in text
    assert text.endswith("at upskills/verify/judge.py")


def test_a_batch_judges_each_entry_through_one_verifier_and_resumes(tmp_path, files):
    """Different entries in one process: a pass, a fail, a missing file and an unknown task
    each get their line; a second run with the same --out judges only what had no verdict."""
    task, good, bad = files
    entries = [
        {"key": "good", "task": str(task), "candidate": str(good)},
        {"key": "bad", "task": str(task), "candidate": str(bad)},
        {"key": "gone", "task": str(task), "candidate": str(tmp_path / "gone.py")},
        {"key": "nope", "task": "no_such_task", "candidate": str(good)},
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(e) + "\n" for e in entries))
    out = tmp_path / "out.jsonl"
    args = ["check", "--batch", str(batch), "--device", "cpu", "--seeds", "1", "--json"]
    res = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert res.exit_code == 1, res.output
    rows = {r["key"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["good"]["verdict"]["passed"] is True
    assert rows["bad"]["verdict"]["error_class"] == "mismatch"
    assert "gone.py" in rows["gone"]["error"] and "no_such_task" in rows["nope"]["error"]
    # printed as they came, one JSON line each
    assert [json.loads(line)["key"] for line in res.output.splitlines()] == [
        "good",
        "bad",
        "gone",
        "nope",
    ]
    (tmp_path / "gone.py").write_text(GOOD_ADD)
    again = CliRunner().invoke(main, [*args, "--out", str(out)])
    # judged again: only the two that had no verdict; the missing file now passes
    assert [json.loads(line)["key"] for line in again.output.splitlines()] == ["gone", "nope"]
    last = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(last) == 6 and last[4]["verdict"]["passed"] is True


def test_a_batch_and_a_task_together_or_a_malformed_batch_are_clear_errors(tmp_path, files):
    task, good, _ = files
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"key": "a", "task": "row_sum"}\n')
    res = CliRunner().invoke(main, ["check", "--batch", str(batch), "--device", "cpu"])
    assert res.exit_code == 2 and "batch.jsonl:1: not a batch entry" in res.output
    res = CliRunner().invoke(
        main, ["check", str(task), str(good), "--batch", str(batch), "--device", "cpu"]
    )
    assert res.exit_code == 2 and "--batch replaces TASK and CANDIDATE" in res.output
    res = CliRunner().invoke(main, ["check", "--device", "cpu"])
    assert res.exit_code == 2 and "give TASK and CANDIDATE" in res.output
