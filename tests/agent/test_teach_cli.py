"""`upskills teach` as a user runs it: a subprocess, killed with SIGKILL mid-run, then resumed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from upskills.trace import read_trace

from .helpers import calls, kernel

SCRIPT = [
    calls(("read_task", {})),
    calls(("write_kernel", {"source": kernel("vector_add")}), ("check", {})),
    calls(("submit", {})),
    calls(("check", {"source": kernel("relu")})),
    calls(("submit", {})),
]


def _teach(out: Path, script: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "upskills._cli.main",
        "teach",
        "vector_add",
        "relu",
        "--teacher",
        f"mock/{script}",
        "--out",
        str(out),
        "--device",
        "cpu",
        "--seeds",
        "1",
        "--no-progress",
    ]


def _has_tool_result(trace: Path, other_than: str | None) -> bool:
    """Does ``trace`` (not the run ``other_than``) hold a tool_result yet?

    A resumed run moves the earlier trace aside to ``.partial`` before it starts its own, so the
    file can vanish between two reads here (seen once in CI): then it has none yet.
    """
    try:
        return '"tool_result"' in trace.read_text() and read_trace(trace).trace_id != other_than
    except FileNotFoundError:
        return False


def _interrupt_after_first_tool_result(
    cmd: list[str], trace: Path, sig: int, log: Path, other_than: str | None = None
) -> int:
    """Start ``cmd``, send ``sig`` once ``trace`` (a new one) has a tool_result; exit code."""
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while not _has_tool_result(trace, other_than):
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "no tool_result within 120 s"
                time.sleep(0.02)
            os.kill(proc.pid, sig)
            proc.wait(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
            proc.wait()
    return proc.returncode


def test_teach_killed_mid_run_leaves_a_readable_trace_and_resumes(tmp_path: Path) -> None:
    script = tmp_path / "teacher.json"
    script.write_text(json.dumps([r.model_dump(mode="json") for r in SCRIPT]))
    out = tmp_path / "run"
    first = out / "vector_add.jsonl"
    code = _interrupt_after_first_tool_result(
        _teach(out, script), first, signal.SIGKILL, tmp_path / "1.log"
    )
    assert code == -signal.SIGKILL
    killed = read_trace(first, strict=True)  # a valid prefix: every line whole
    assert killed.start is not None and killed.end is None
    assert not (out / "relu.jsonl").exists()

    # SIGTERM: the run ends its trace as "aborted" (and is not counted as finished)
    code = _interrupt_after_first_tool_result(
        _teach(out, script), first, signal.SIGTERM, tmp_path / "2.log", killed.trace_id
    )
    assert code != 0
    terminated = read_trace(first, strict=True)
    assert terminated.end is not None and terminated.end.outcome == "aborted"

    done = subprocess.run(_teach(out, script), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "solved" in done.stdout
    for name in ("vector_add", "relu"):
        trace = read_trace(out / f"{name}.jsonl", strict=True)
        assert trace.end is not None and trace.end.outcome == "solved"
        assert trace.start is not None and trace.start.task == name
    kept = [out / "vector_add.jsonl.partial", out / "vector_add.jsonl.partial.1"]
    assert [read_trace(p, strict=True).trace_id for p in kept] == [
        killed.trace_id,
        terminated.trace_id,
    ]

    # a fourth run has nothing to do: the (empty) script is never asked
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    before = {p.name: p.read_text() for p in out.iterdir()}
    again = subprocess.run(_teach(out, empty), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert {p.name: p.read_text() for p in out.iterdir()} == before


def test_teach_cli_bad_input_fails_before_any_work(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from upskills._cli.main import main

    out = tmp_path / "run"
    bad_task = CliRunner().invoke(
        main, ["teach", "relu", "no_such_task", "--teacher", "mock/x.json", "--out", str(out)]
    )
    assert bad_task.exit_code != 0 and "no_such_task" in bad_task.output
    bad_spec = CliRunner().invoke(main, ["teach", "relu", "--teacher", "nope", "--out", str(out)])
    assert bad_spec.exit_code != 0 and "bad provider spec 'nope'" in bad_spec.output
    assert not list(out.glob("*.jsonl"))
