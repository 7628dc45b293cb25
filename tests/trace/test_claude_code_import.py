from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from upskills._cli.main import main
from upskills.trace import read_trace, trace_stats
from upskills.trace.events import ModelCall, ToolCall, ToolResult
from upskills.trace.importers.claude_code import import_claude_code

from .conftest import make_verdict


def _session(path: Path) -> None:
    verdict_fail = make_verdict(False).model_dump_json()
    verdict_pass = make_verdict(True, speedup=2.5).model_dump_json()
    base = {"sessionId": "s1", "version": "2.0.61", "cwd": "/repo", "isSidechain": False}
    recs = [
        {"type": "summary", "summary": "kernels", "leafUuid": "x"},
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "timestamp": "2026-11-30T10:00:00.000Z",
            "message": {"role": "user", "content": "Write a fast row_sum kernel"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "timestamp": "2026-11-30T10:00:05.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "I'll write it."}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a2",
            "timestamp": "2026-11-30T10:00:06.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "Write",
                        "input": {"file_path": "k.py", "content": "import triton\n"},
                    }
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 10, "output_tokens": 40, "cache_read_input_tokens": 900},
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "timestamp": "2026-11-30T10:00:07.000Z",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu1", "content": "File created"}
                ],
            },
        },
        "{this line is torn",
        {
            **base,
            "type": "assistant",
            "uuid": "a3",
            "timestamp": "2026-11-30T10:00:09.000Z",
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu2",
                        "name": "Bash",
                        "input": {"command": "upskills check row_sum k.py --json"},
                    }
                ],
                "usage": {"input_tokens": 3, "output_tokens": 7},
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u3",
            "timestamp": "2026-11-30T10:00:20.000Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu2",
                        "content": verdict_fail,
                        "is_error": True,
                    }
                ],
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a4",
            "timestamp": "2026-11-30T10:00:25.000Z",
            "message": {
                "id": "msg_3",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu3",
                        "name": "Bash",
                        "input": {"command": "upskills check row_sum k.py --json"},
                    }
                ],
                "usage": {"input_tokens": 3, "output_tokens": 7},
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u4",
            "timestamp": "2026-11-30T10:00:40.000Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu3",
                        "content": [{"type": "text", "text": verdict_pass}],
                    }
                ],
            },
        },
    ]
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in recs) + "\n")


def test_import_maps_blocks_to_events(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    _session(src)
    out = tmp_path / "traces" / "row_sum.jsonl"
    res = import_claude_code(src, out, task="row_sum", task_hash="abc")
    assert [e.line for e in res.skipped] == [6]
    trace = read_trace(out, strict=True)
    calls = [e for e in trace.events if isinstance(e, ModelCall)]
    assert len(calls) == 3  # msg_1 split over two lines is one call
    assert calls[0].response_text == "I'll write it." and calls[0].usage.output_tokens == 40
    assert calls[0].usage.cache_read_tokens == 900 and calls[0].model == "claude-sonnet-4-5"
    tools = [e for e in trace.events if isinstance(e, ToolCall)]
    assert [t.tool_name for t in tools] == ["Write", "Bash", "Bash"]
    results = [e for e in trace.events if isinstance(e, ToolResult)]
    assert results[0].kernel_source == "import triton\n"
    assert results[1].verdict is not None and results[1].verdict.passed is False
    assert results[1].error is not None
    assert results[2].verdict is not None and results[2].verdict.speedup_eager == 2.5
    start = trace.start
    assert (
        start is not None and start.agent_role == "external" and start.agent_name == "claude-code"
    )
    assert start.ts.startswith("2026-11-30T10:00:0")
    st = trace_stats(trace)
    # both checks judged the one kernel written: a pass after a failure of the same kernel
    # (nothing changed) is not a repair
    assert st.solved and st.repaired_failures == 0 and st.best_speedup == 2.5


def test_import_cli_refuses_to_overwrite(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    _session(src)
    out = tmp_path / "t.jsonl"
    runner = CliRunner()
    res = runner.invoke(main, ["traces", "import", "claude-code", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "skipped" in res.output and ":6:" in res.output
    res = runner.invoke(main, ["traces", "import", "claude-code", str(src), "--out", str(out)])
    assert res.exit_code != 0 and "exists" in res.output
    with pytest.raises(FileExistsError):
        import_claude_code(src, out)
