"""Writing tool calls into a trace, and keeping the best passing kernel of a run.

Shared by the driven loop, the external-agent session and the MCP server, so the three leave
identical ``tool_call``/``tool_result`` events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from upskills.agent.toolbox import ToolOutcome
from upskills.trace.events import ToolCall, ToolResult


class BestKernel(BaseModel):
    """The best passing kernel seen so far: highest speedup vs eager, latest on ties."""

    model_config = ConfigDict(extra="forbid")

    hash: str | None = None
    """Hash of the best passing kernel; None until one passes."""
    source: str | None = None
    """Its source."""
    speedup: float | None = None
    """Its speedup vs eager (None when untimed, e.g. on CPU)."""

    def offer(self, outcome: ToolOutcome) -> bool:
        """Consider a tool outcome; returns True when it became the best kernel."""
        verdict = outcome.verdict
        if verdict is None or not verdict.passed or outcome.kernel_source is None:
            return False
        new = verdict.speedup_eager
        if (
            self.hash is not None
            and self.speedup is not None
            and (new is None or new < self.speedup)
        ):
            return False
        self.hash, self.source, self.speedup = outcome.kernel_hash, outcome.kernel_source, new
        return True


def record_tool(
    writer: Any,
    *,
    parent_span_id: str | None,
    name: str,
    arguments: Mapping[str, Any],
    call_id: str,
    run: Callable[[], ToolOutcome],
) -> ToolOutcome:
    """Write ``tool_call``, run the tool, write ``tool_result``; returns the outcome.

    An exception inside the tool (a verifier bug, not a failing verdict) is recorded as the
    tool_result's error and then re-raised.

    Args:
        writer: the run's ``TraceWriter``.
        parent_span_id: span the call belongs to (the model call, or the run for external agents).
        name: tool name.
        arguments: arguments as passed.
        call_id: the tool call id (the model's, or a generated one).
        run: runs the tool.
    """
    call = ToolCall(
        trace_id=writer.trace_id,
        parent_span_id=parent_span_id,
        tool_name=name,
        call_id=call_id,
        arguments=dict(arguments),
    )
    writer.write(call)
    t0 = time.perf_counter()
    try:
        outcome = run()
    except Exception as exc:
        writer.write(
            ToolResult(
                trace_id=writer.trace_id,
                parent_span_id=call.span_id,
                tool_name=name,
                call_id=call_id,
                error=f"internal error: {type(exc).__name__}: {exc}",
                duration_s=time.perf_counter() - t0,
            )
        )
        raise
    writer.write(
        ToolResult(
            trace_id=writer.trace_id,
            parent_span_id=call.span_id,
            tool_name=name,
            call_id=call_id,
            output=outcome.output,
            error=outcome.error,
            duration_s=time.perf_counter() - t0,
            verdict=outcome.verdict,
            profile=outcome.profile,
            kernel_source=outcome.kernel_source,
            kernel_hash=outcome.kernel_hash,
        )
    )
    return outcome
