from __future__ import annotations

from pathlib import Path

import pytest

from upskills.trace import TraceWriter
from upskills.trace.events import (
    ModelCall,
    Note,
    RunEnd,
    RunStart,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    Totals,
    Usage,
)
from upskills.verify.verdict import ErrorClass, Verdict


def make_verdict(
    passed: bool, speedup: float | None = None, error: ErrorClass | None = None
) -> Verdict:
    return Verdict(
        task="row_sum",
        task_hash="abc",
        candidate_hash="k1",
        device="cuda",
        gpu="NVIDIA H200",
        passed=passed,
        error_class=None if passed else (error or ErrorClass.MISMATCH),
        message="ok" if passed else "variant ragged: max abs err 3.1 > atol 1e-4",
        speedup_eager=speedup,
        timing_status="measured" if speedup else "unavailable",
    )


def write_sample_trace(path: Path) -> str:
    """A small, complete trace: one failing check repaired by a passing one."""
    with TraceWriter(path) as w:
        tid = w.trace_id
        w.write(
            RunStart(
                trace_id=tid,
                task="row_sum",
                task_hash="abc",
                agent_role="teacher",
                provider="mock",
                model="script",
                parameters={"temperature": 0.0},
            )
        )
        w.write(
            ModelCall(
                trace_id=tid,
                provider="mock",
                model="script",
                response_text="writing",
                tool_calls=[ToolCallRequest(id="c1", name="check", arguments={"source": "x"})],
                usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=5),
                latency_s=0.5,
                stop_reason="tool_use",
            )
        )
        call = w.write(
            ToolCall(trace_id=tid, tool_name="check", call_id="c1", arguments={"source": "x"})
        )
        w.write(
            ToolResult(
                trace_id=tid,
                tool_name="check",
                call_id="c1",
                parent_span_id=call.span_id,
                output="FAIL",
                verdict=make_verdict(False),
                kernel_source="bad",
                kernel_hash="h1",
            )
        )
        w.write(Note(trace_id=tid, text="mask the tail"))
        w.write(
            ModelCall(
                trace_id=tid,
                provider="mock",
                model="script",
                response_text="fixed",
                usage=Usage(input_tokens=150, output_tokens=30),
                latency_s=0.25,
                stop_reason="tool_use",
            )
        )
        w.write(ToolCall(trace_id=tid, tool_name="benchmark", call_id="c2"))
        w.write(
            ToolResult(
                trace_id=tid,
                tool_name="benchmark",
                call_id="c2",
                output="PASS",
                verdict=make_verdict(True, speedup=1.7),
                kernel_source="good",
                kernel_hash="h2",
            )
        )
        w.write(
            RunEnd(
                trace_id=tid,
                outcome="solved",
                best_speedup=1.7,
                best_kernel_hash="h2",
                best_kernel_source="good",
                totals=Totals(turns=2, tool_calls=2),
            )
        )
        return tid


@pytest.fixture
def sample_trace(tmp_path: Path) -> Path:
    path = tmp_path / "run" / "row_sum.jsonl"
    write_sample_trace(path)
    return path
