"""External-agent sessions through the CLI: start, call, note, end; a folder that moves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from upskills._cli.main import main
from upskills.agent.session import Session, SessionError
from upskills.trace import read_trace
from upskills.trace.events import Note, RunEnd, RunStart, ToolCall, ToolResult

from .helpers import KERNELS, kernel


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_session_start_call_note_end_across_a_move(tmp_path: Path) -> None:
    first = tmp_path / "machine-a" / "sess"
    out = run(
        "session",
        "start",
        "row_sum",
        "--dir",
        str(first),
        "--agent-name",
        "claude-code",
        "--device",
        "cpu",
    )
    assert "Sum of each row" in out and "ragged: M=67, N=1003" in out
    run("session", "note", str(first), "plan: one program per row")
    out = run(
        "session", "call", str(first), "write_kernel", "--file", str(KERNELS / "row_sum_bad.py")
    )
    assert out.startswith("stored kernel ")
    out = run("session", "call", str(first), "check", "--device", "cpu", "--json", "--seeds", "1")
    failed = json.loads(out)
    assert failed["verdict"]["passed"] is False and failed["verdict"]["error_class"] == "mismatch"
    assert failed["verdict"]["env"]  # the machine that checked it

    # the folder moves to another place (another machine: same layout, no absolute paths)
    state = (first / "state.json").read_text()
    assert str(tmp_path) not in state
    moved = tmp_path / "machine-b" / "sess"
    shutil.move(str(first), str(moved))
    data = json.loads(state)
    data["last_host"] = "machine-a-host"  # as if the previous call ran elsewhere
    (moved / "state.json").write_text(json.dumps(data))

    out = run(
        "session",
        "call",
        str(moved),
        "check",
        "--file",
        str(KERNELS / "row_sum.py"),
        "--device",
        "cpu",
        "--seeds",
        "1",
    )
    assert out.startswith("PASSED on cpu")
    out = run("session", "call", str(moved), "submit", "--device", "cpu", "--seeds", "1")
    assert "accepted" in out
    out = run("session", "end", str(moved))
    assert out.startswith("solved: 4 tool calls")
    run("session", "call", str(moved), "read_task", code=1)  # ended sessions refuse calls

    trace = read_trace(moved / "trace.jsonl", strict=True)
    start, end = trace.events[0], trace.events[-1]
    assert isinstance(start, RunStart) and isinstance(end, RunEnd)
    assert start.agent_role == "external" and start.agent_name == "claude-code"
    assert start.provider is None and start.model is None
    assert end.outcome == "solved" and end.totals.tool_calls == 4 and end.totals.turns == 0
    assert end.best_kernel_source == (KERNELS / "row_sum.py").read_text()
    results = [e for e in trace.events if isinstance(e, ToolResult)]
    assert [r.tool_name for r in results] == ["write_kernel", "check", "check", "submit"]
    assert [r.verdict.passed for r in results if r.verdict] == [False, True, True]
    assert len([e for e in trace.events if isinstance(e, ToolCall)]) == 4
    notes = [e for e in trace.events if isinstance(e, Note)]
    assert [n.kind for n in notes] == ["note", "environment"]
    assert "session moved from machine-a-host" in notes[1].text
    assert {e.trace_id for e in trace.events} == {start.trace_id}


def test_session_errors_are_clear(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    out = CliRunner().invoke(main, ["session", "call", str(folder), "check"])
    assert out.exit_code != 0 and "no session here" in out.output
    run("session", "start", "relu", "--dir", str(folder), "--device", "cpu")
    out = CliRunner().invoke(main, ["session", "start", "relu", "--dir", str(folder)])
    assert out.exit_code != 0 and "already holds a session" in out.output
    out = run("session", "call", str(folder), "check", code=1)
    assert "no kernel yet" in out
    out = CliRunner().invoke(main, ["session", "call", str(folder), "explode"])
    assert out.exit_code != 0 and "unknown tool 'explode'" in out.output
    out = CliRunner().invoke(main, ["session", "call", str(folder), "read_task", "--arg", "x"])
    assert out.exit_code != 0 and "'x' is not k=v" in out.output
    (folder / "state.json").write_text('{"schema_version": 1}')
    out = CliRunner().invoke(main, ["session", "end", str(folder)])
    assert out.exit_code != 0 and "state.json: field 'trace_id'" in out.output


def test_session_end_without_submit_is_unsolved_and_keeps_the_best_kernel(
    tmp_path: Path, cpu_verifier: object
) -> None:
    session = Session.start("relu", tmp_path / "s", model="m1", device="cpu")
    outcome = session.call("check", {"source": kernel("relu")}, verifier=cpu_verifier)
    assert outcome.verdict is not None and outcome.verdict.passed
    reopened = Session.open(tmp_path / "s")
    assert reopened.state.current_source == kernel("relu") and reopened.state.tool_calls == 1
    end = reopened.end()
    assert end.outcome == "unsolved" and "without a submit" in end.message
    trace = read_trace(tmp_path / "s" / "trace.jsonl", strict=True)
    assert trace.start.model == "m1" and trace.start.provider is None
    assert trace.end.best_kernel_source == kernel("relu")
    with pytest.raises(SessionError, match="has ended"):
        reopened.note("late")
    with pytest.raises(SessionError, match="outcome 'great' is not one of"):
        Session.start("relu", tmp_path / "t", device="cpu").end("great")  # type: ignore[arg-type]


def test_concurrent_calls_on_one_folder_lose_nothing(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    Session.start("relu", tmp_path / "s", device="cpu")

    def write(i: int) -> None:
        Session.open(tmp_path / "s").call("write_kernel", {"source": f"# kernel {i}\n"})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(8)))
    state = Session.open(tmp_path / "s").state
    assert state.tool_calls == 8
    trace = read_trace(tmp_path / "s" / "trace.jsonl", strict=True)
    results = [e for e in trace.events if isinstance(e, ToolResult)]
    assert len(results) == 8 and state.current_source == results[-1].kernel_source
