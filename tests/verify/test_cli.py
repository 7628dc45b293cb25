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
