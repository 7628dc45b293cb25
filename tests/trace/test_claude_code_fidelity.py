"""The Claude Code importer on transcripts shaped like the real ones: bad rows, subagents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from upskills._cli.main import main
from upskills.trace import read_trace, trace_stats
from upskills.trace.events import ModelCall, Note, RunEnd, ToolCall
from upskills.trace.importers.claude_code import import_claude_code, session_files

from .claude_code_rows import MODEL, SESSION, Rows, text, tool_use
from .conftest import make_verdict


def _session(folder: Path) -> Path:
    """A session that spawns one subagent through Task; its transcript sits in subagents/."""
    m = Rows()
    m.raw({"type": "queue-operation", "operation": "dequeue", "sessionId": SESSION,
           "timestamp": "2026-11-30T10:00:00.000Z"})  # fmt: skip
    m.user("Write a fast row_sum kernel and check it with upskills")
    m.assistant("msg_1", [text("I'll ask a subagent to survey the task.")], (4, 20, 1000, 200))
    m.assistant(
        "msg_1",
        [tool_use("toolu_task", "Task", {"subagent_type": "general-purpose",
                                          "description": "survey", "prompt": "Read the task"})],
        (4, 60, 1000, 200), "tool_use",
    )  # fmt: skip
    # The subagent runs here (its rows are in its own file), then the Task result comes back.
    m.t += 30
    m.result(
        "toolu_task",
        "The reference sums rows of a (B, N) fp32 tensor.\nagentId: a748733",
        toolUseResult={"status": "completed", "prompt": "Read the task", "agentId": "a748733",
                       "content": [text("The reference sums rows.")], "totalDurationMs": 30000,
                       "totalTokens": 900, "totalToolUseCount": 1},
    )  # fmt: skip
    m.assistant(
        "msg_2",
        [tool_use("toolu_w", "Write", {"file_path": "/home/dev/kernels/k.py",
                                        "content": "import triton\n"})],
        (2, 80, 1200, 0), "tool_use",
    )  # fmt: skip
    m.result("toolu_w", "File created successfully at: /home/dev/kernels/k.py")
    m.raw({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}})
    m.assistant(
        "msg_3",
        [tool_use("toolu_c", "Bash", {"command": "upskills check row_sum k.py --json"})],
        (2, 30, 1300, 0), "tool_use",
    )  # fmt: skip
    m.result("toolu_c", make_verdict(True, speedup=1.8).model_dump_json())
    m.assistant("msg_4", [text("Done: 1.8x faster than eager.")], (2, 12, 1400, 0), "end_turn")
    main_file = m.write(folder / f"{SESSION}.jsonl")

    s = Rows(sidechain=True, agent_id="a748733", t0=3)
    s.user("Read the task")
    s.assistant("msg_s1", [tool_use("toolu_s1", "Read", {"file_path": "/x/row_sum.py"})],
                (10, 15, 0, 500), "tool_use")  # fmt: skip
    s.result("toolu_s1", "     1→import torch")
    s.assistant("msg_s2", [text("The reference sums rows.")], (10, 25, 500, 0), "end_turn")
    s.write(folder / SESSION / "subagents" / "agent-a748733.jsonl")
    return main_file


def test_subagent_transcript_becomes_child_spans_of_its_task_call(tmp_path: Path) -> None:
    main_file = _session(tmp_path / "proj")
    out = tmp_path / "t.jsonl"
    res = import_claude_code(main_file, out, task="row_sum")
    assert res.skipped == [] and res.subagents == 1
    trace = read_trace(out, strict=True)
    task_call = next(e for e in trace.events if isinstance(e, ToolCall) and e.tool_name == "Task")
    note = next(e for e in trace.events if isinstance(e, Note) and e.kind == "subagent")
    assert note.parent_span_id == task_call.span_id and note.text == "agent-a748733"
    sub_calls = [e for e in trace.events if isinstance(e, ModelCall) and e.parent_span_id]
    assert [c.response_text for c in sub_calls] == ["", "The reference sums rows."]
    assert all(c.parent_span_id == note.span_id for c in sub_calls)
    read = next(e for e in trace.events if isinstance(e, ToolCall) and e.tool_name == "Read")
    assert read.parent_span_id == note.span_id
    # The subagent sits between the Task call and its result.
    kinds = [(type(e).__name__, getattr(e, "tool_name", "")) for e in trace.events]
    assert kinds.index(("Note", "")) < kinds.index(("ToolResult", "Task"))


def test_model_provider_timestamps_and_totals_come_from_the_transcript(tmp_path: Path) -> None:
    main_file = _session(tmp_path / "proj")
    out = tmp_path / "t.jsonl"
    import_claude_code(main_file, out, task="row_sum")
    trace = read_trace(out, strict=True)
    start, end = trace.start, trace.end
    assert start is not None and start.model == MODEL and start.provider == "anthropic"
    assert start.environment["session_id"] == SESSION
    last_row = json.loads(main_file.read_text().splitlines()[-1])
    assert end is not None and end.ts == last_row["timestamp"]
    assert end.outcome == "solved" and end.best_speedup == 1.8
    # 4 main messages + 2 subagent messages; input = uncached + cache reads + cache writes.
    main_in = (4 + 1000 + 200) + (2 + 1200) + (2 + 1300) + (2 + 1400)
    sub_in = (10 + 500) + (10 + 500)
    assert end.totals.turns == 6 and end.totals.input_tokens == main_in + sub_in
    assert end.totals.output_tokens == 60 + 80 + 30 + 12 + 15 + 25
    st = trace_stats(trace)
    assert (st.turns, st.input_tokens, st.output_tokens) == (
        end.totals.turns, end.totals.input_tokens, end.totals.output_tokens,
    )  # fmt: skip
    res = CliRunner().invoke(main, ["traces", "stats", str(out), "--json"])
    assert json.loads(res.output)["traces"][0]["input_tokens"] == end.totals.input_tokens


def test_a_session_folder_is_accepted(tmp_path: Path) -> None:
    main_file = _session(tmp_path / "proj")
    folder = main_file.with_suffix("")
    assert session_files(folder) == (main_file, [folder / "subagents" / "agent-a748733.jsonl"])
    res = import_claude_code(folder, tmp_path / "t.jsonl")
    assert res.subagents == 1 and res.events > 10


def test_sidechain_rows_of_older_logs_are_child_spans(tmp_path: Path) -> None:
    m = Rows()
    m.user("Check the kernel")
    m.assistant("msg_1", [tool_use("toolu_t", "Task", {"prompt": "look"})], stop="tool_use")
    side = Rows(sidechain=True, t0=m.t)
    side.user("look")
    side.assistant("msg_s", [text("looked")], (5, 6, 0, 0), "end_turn")
    m.rows += side.rows
    m.t = side.t
    m.result("toolu_t", "looked")
    out = tmp_path / "t.jsonl"
    import_claude_code(m.write(tmp_path / "old.jsonl"), out)
    trace = read_trace(out, strict=True)
    task_call = next(e for e in trace.events if isinstance(e, ToolCall))
    note = next(e for e in trace.events if isinstance(e, Note) and e.kind == "subagent")
    assert note.parent_span_id == task_call.span_id
    sub = [e for e in trace.events if isinstance(e, ModelCall) and e.parent_span_id]
    assert [c.response_text for c in sub] == ["looked"]


MALFORMED = {
    "content null": lambda r: r.user(None),
    "message as a string": lambda r: r.raw(r._base("user") | {"message": "hello"}),
    "tool input as a string": lambda r: r.assistant("msg_b", [tool_use("t1", "Bash", "ls")]),
    "tool input as a list": lambda r: r.assistant("msg_b", [tool_use("t1", "Bash", ["ls"])]),
    "integer tool id": lambda r: r.assistant("msg_b", [tool_use(17, "Bash", {"command": "ls"})]),
    "invalid UTF-8": lambda r: r.raw(b'{"type": "user", "message": {"content": "\xff\xfe"}}'),
    "row is a list": lambda r: r.raw([1, 2]),
    "torn line": lambda r: r.raw('{"type": "assistant", "mess'),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_row_is_skipped_with_its_line(tmp_path: Path, case: str) -> None:
    r = Rows()
    r.user("start")
    r.assistant("msg_1", [text("ok")], (1, 2, 0, 0), "end_turn")
    MALFORMED[case](r)  # line 3
    r.assistant("msg_2", [text("still here")], (1, 2, 0, 0), "end_turn")
    src = r.write(tmp_path / "s.jsonl")
    out = tmp_path / "t.jsonl"
    res = import_claude_code(src, out)
    assert [(e.path, e.line) for e in res.skipped] == [(src, 3)], res.skipped
    trace = read_trace(out, strict=True)
    texts = [e.response_text for e in trace.events if isinstance(e, ModelCall)]
    assert texts == ["ok", "still here"]
    assert isinstance(trace.events[-1], RunEnd)


def test_cli_warns_with_file_and_line_and_leaves_no_partial_file(tmp_path: Path) -> None:
    r = Rows()
    r.user("start")
    r.assistant("msg_b", [tool_use(17, "Bash", {"command": "ls"})])
    src = r.write(tmp_path / "s.jsonl")
    out = tmp_path / "traces" / "t.jsonl"
    res = CliRunner().invoke(main, ["traces", "import", "claude-code", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"{src}:2:" in res.output and "message.content" in res.output
    assert "Traceback" not in res.output and out.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["t.jsonl"]


def test_a_failing_import_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from upskills.trace.importers import claude_code

    src = Rows()
    src.user("start")
    path = src.write(tmp_path / "s.jsonl")

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(claude_code._Builder, "run", boom)
    out = tmp_path / "out" / "t.jsonl"
    with pytest.raises(RuntimeError):
        import_claude_code(path, out)
    assert not out.exists() and list(out.parent.iterdir()) == []
