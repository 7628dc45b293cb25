"""`upskills mcp` driven by the mcp package's own stdio client through a whole solve."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from upskills.trace import iter_trace_files, read_trace
from upskills.trace.events import Note, RunEnd, RunStart, ToolResult

from .helpers import kernel

TOOLS = {
    "start_session",
    "read_task",
    "write_kernel",
    "check",
    "benchmark",
    "profile",
    "submit",
    "note",
    "end_session",
}


def _text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _drive(out: Path) -> dict[str, str]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "upskills._cli.main",
            "mcp",
            "--out",
            str(out),
            "--device",
            "cpu",
            "--seeds",
            "1",
        ],
    )
    seen: dict[str, str] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        listed = await client.list_tools()
        seen["tools"] = ",".join(sorted(t.name for t in listed.tools))
        early = await client.call_tool("check", {})
        seen["early"] = f"{early.is_error}:{_text(early)}"
        started = await client.call_tool(
            "start_session", {"task": "row_sum", "agent_name": "claude-code", "model": "m"}
        )
        seen["start"] = _text(started)
        await client.call_tool("note", {"text": "start simple"})
        await client.call_tool("write_kernel", {"source": kernel("row_sum_bad")})
        seen["bad"] = _text(await client.call_tool("check", {}))
        seen["good"] = _text(await client.call_tool("check", {"source": kernel("row_sum")}))
        seen["profile"] = _text(await client.call_tool("profile", {}))
        seen["submit"] = _text(await client.call_tool("submit", {}))
        seen["end"] = _text(await client.call_tool("end_session", {}))
        after = await client.call_tool("read_task", {})
        seen["after"] = f"{after.is_error}:{_text(after)}"
    return seen


def test_mcp_client_drives_a_traced_solve(tmp_path: Path) -> None:
    seen = anyio.run(_drive, tmp_path)
    assert set(seen["tools"].split(",")) == TOOLS
    assert seen["early"].startswith("True:") and "start_session" in seen["early"]
    assert "session folder:" in seen["start"] and "Sum of each row" in seen["start"]
    assert seen["bad"].startswith("FAILED (mismatch")
    assert seen["good"].startswith("PASSED on cpu")
    assert seen["profile"].startswith("profile of row_sum at variant")
    assert "profiling needs a GPU" in seen["profile"]
    assert "accepted" in seen["submit"] and seen["end"].startswith("session ended: solved")
    assert seen["after"].startswith("True:") and "has ended" in seen["after"]

    (trace_path,) = list(iter_trace_files([tmp_path]))
    assert trace_path.parent.parent == tmp_path and trace_path.name == "trace.jsonl"
    trace = read_trace(trace_path, strict=True)
    start, end = trace.events[0], trace.events[-1]
    assert isinstance(start, RunStart) and isinstance(end, RunEnd)
    assert (start.agent_role, start.agent_name, start.model) == ("external", "claude-code", "m")
    results = [e for e in trace.events if isinstance(e, ToolResult)]
    assert [r.tool_name for r in results] == [
        "read_task",
        "write_kernel",
        "check",
        "check",
        "profile",
        "submit",
    ]
    assert [r.verdict.passed for r in results if r.verdict] == [False, True, True, True]
    (profiled,) = [r.profile for r in results if r.profile is not None]
    assert profiled.task == "row_sum" and profiled.bytes > 0 and profiled.device == "cpu"
    assert [n.text for n in trace.events if isinstance(n, Note)] == ["start simple"]
    assert end.outcome == "solved" and end.best_kernel_source == kernel("row_sum")
