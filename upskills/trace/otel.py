"""Export traces as OpenTelemetry spans in OTLP/JSON, on the GenAI semantic conventions.

One trace becomes one ``invoke_agent`` root span (run_start to run_end); each model call a
``chat {model}`` span of kind CLIENT (a call to a remote model); each tool call an
``execute_tool {name}`` span of kind INTERNAL, closed by its tool_result or, when the result
never came, kept and ended with the trace (``upskills.tool.result_missing``). A subagent
(a ``note`` of kind ``subagent``) becomes an ``invoke_agent`` span, parent of its own calls.

Attributes follow the conventions as they stand (semconv 1.37+): ``gen_ai.provider.name``
(not the deprecated ``gen_ai.system``); ``gen_ai.usage.input_tokens`` counts every prompt token,
cached ones included, with ``gen_ai.usage.cache_read.input_tokens`` and
``gen_ai.usage.cache_creation.input_tokens`` beside it. Span status is left unset on success;
a failed model call or tool call has status ERROR and ``error.type``.

IDs: OTLP/JSON writes ``traceId`` (16 bytes) and ``spanId`` (8 bytes) as hex strings.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import Any

from upskills import __version__
from upskills.trace.events import (
    PROVIDER_KEY,
    ModelCall,
    Note,
    RunEnd,
    RunOutcome,
    RunStart,
    ToolCall,
    ToolResult,
    TraceEvent,
)
from upskills.trace.reader import TraceFile

OTelValue = str | bool | int | float | list[str] | None
"""An attribute value the exporter writes (None values are dropped)."""


class SpanKind(IntEnum):
    """OTLP ``Span.SpanKind``."""

    INTERNAL = 1
    CLIENT = 3


class StatusCode(IntEnum):
    """OTLP ``Status.StatusCode``."""

    UNSET = 0
    ERROR = 2


_ERROR_TYPE = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def error_type(message: str) -> str:
    """Low-cardinality ``error.type``: the exception class a message starts with, or ``_OTHER``."""
    match = _ERROR_TYPE.match(message.strip())
    return match.group(1) if match else "_OTHER"


def _ns(ts: str) -> int:
    return int(datetime.fromisoformat(ts).timestamp() * 1e9)


def _attr(key: str, value: OTelValue) -> dict[str, Any]:
    v: dict[str, Any]
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, list):
        v = {"arrayValue": {"values": [{"stringValue": str(x)} for x in value]}}
    else:
        v = {"stringValue": str(value)}
    return {"key": key, "value": v}


def _hex(value: str, chars: int) -> str:
    if len(value) >= chars and re.fullmatch(r"[0-9a-f]+", value[:chars]):
        return value[:chars]
    return hashlib.sha256(value.encode()).hexdigest()[:chars]


@dataclass
class _Span:
    span_id: str
    parent: str | None
    name: str
    kind: SpanKind
    start: int
    end: int
    attrs: dict[str, OTelValue]
    error: str | None = None

    def to_otlp(self, trace_id: str) -> dict[str, Any]:
        attrs = dict(self.attrs)
        status: dict[str, Any] = {}
        if self.error is not None:
            attrs["error.type"] = error_type(self.error)
            status = {"code": int(StatusCode.ERROR), "message": self.error[:1000]}
        span: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": _hex(self.span_id, 16),
            "name": self.name,
            "kind": int(self.kind),
            "startTimeUnixNano": str(self.start),
            "endTimeUnixNano": str(max(self.end, self.start)),
            "attributes": [_attr(k, v) for k, v in attrs.items() if v is not None],
            "status": status,
        }
        if self.parent:
            span["parentSpanId"] = _hex(self.parent, 16)
        return span


def _chat(e: ModelCall, parent: str) -> _Span:
    u = e.usage
    attrs: dict[str, OTelValue] = {
        "gen_ai.operation.name": e.operation_name,
        PROVIDER_KEY: e.provider,
        "gen_ai.request.model": e.model,
        "gen_ai.response.model": e.response_model,
        "gen_ai.usage.input_tokens": u.total_input_tokens,
        "gen_ai.usage.output_tokens": u.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": u.cache_read_tokens or None,
        "gen_ai.usage.cache_creation.input_tokens": u.cache_write_tokens or None,
        "gen_ai.response.finish_reasons": [e.stop_reason] if e.stop_reason else None,
        "upskills.tool_calls": [c.name for c in e.tool_calls] or None,
    }
    end = _ns(e.ts)
    start = end - int(e.latency_s * 1e9)
    name = f"{e.operation_name} {e.model}"
    return _Span(e.span_id, parent, name, SpanKind.CLIENT, start, end, attrs, e.error)


def _tool(call: ToolCall | None, result: ToolResult | None, parent: str, end: int) -> _Span:
    ev = call or result
    assert ev is not None
    attrs: dict[str, OTelValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": ev.tool_name,
        "gen_ai.tool.call.id": ev.call_id,
        "gen_ai.tool.type": "function",
    }
    error = None
    if result is None:
        attrs["upskills.tool.result_missing"] = True
    else:
        error = result.error
        attrs["upskills.kernel.hash"] = result.kernel_hash
        v = result.verdict
        if v is not None:
            attrs |= {
                "upskills.verdict.passed": v.passed,
                "upskills.verdict.error_class": str(v.error_class) if v.error_class else None,
                "upskills.verdict.speedup_eager": v.speedup_eager,
                "upskills.verdict.device": v.device,
                "upskills.verdict.gpu": v.gpu,
            }
        end = _ns(result.ts)
    if call is not None:
        start = _ns(call.ts)
    else:
        assert result is not None
        start = end - int(result.duration_s * 1e9)
    name = f"execute_tool {ev.tool_name}"
    return _Span(ev.span_id, parent, name, SpanKind.INTERNAL, start, end, attrs, error)


def _root(trace: TraceFile, root_id: str) -> _Span:
    start_ev, end_ev = trace.start, trace.end
    attrs: dict[str, OTelValue] = {"gen_ai.operation.name": "invoke_agent"}
    name = "invoke_agent"
    if isinstance(start_ev, RunStart):
        name = f"invoke_agent {start_ev.agent_name}"
        attrs |= {
            "gen_ai.agent.name": start_ev.agent_name,
            PROVIDER_KEY: start_ev.provider,
            "gen_ai.request.model": start_ev.model,
            "upskills.agent.role": start_ev.agent_role,
            "upskills.task": start_ev.task,
            "upskills.task.hash": start_ev.task_hash,
        }
    error = None
    if isinstance(end_ev, RunEnd):
        calls = [e for e in trace.events if isinstance(e, ModelCall)]
        attrs |= {
            "upskills.outcome": str(end_ev.outcome),
            "upskills.best_speedup": end_ev.best_speedup,
            "gen_ai.usage.input_tokens": sum(c.usage.total_input_tokens for c in calls),
            "gen_ai.usage.output_tokens": sum(c.usage.output_tokens for c in calls),
        }
        if end_ev.outcome == RunOutcome.ERROR:
            error = f"upskills.run_error: {end_ev.message}"
    attrs["upskills.notes"] = sum(
        isinstance(e, Note) and e.kind != "subagent" for e in trace.events
    )
    t0, t1 = _ns(trace.events[0].ts), _ns(trace.events[-1].ts)
    return _Span(root_id, None, name, SpanKind.INTERNAL, t0, t1, attrs, error)


def trace_to_spans(trace: TraceFile) -> list[dict[str, Any]]:
    """Convert one trace's events into OTLP/JSON span objects (root first)."""
    if not trace.events:
        return []
    tid = _hex(trace.trace_id or str(trace.path), 32)
    start_ev = trace.start
    root_id = start_ev.span_id if start_ev else trace.events[0].span_id
    known = {e.span_id for e in trace.events}

    def parent_of(e: TraceEvent) -> str:
        parent = e.parent_span_id
        return parent if parent is not None and parent in known else root_id

    spans: list[_Span] = [_root(trace, root_id)]
    agents: dict[str, _Span] = {}
    calls: dict[str, ToolCall] = {}
    answered: set[str] = set()
    for e in trace.events:
        if isinstance(e, ModelCall):
            spans.append(_chat(e, parent_of(e)))
        elif isinstance(e, ToolCall):
            calls[e.call_id] = e
        elif isinstance(e, ToolResult):
            call = calls.get(e.call_id)
            answered.add(e.call_id)
            parent = parent_of(call) if call is not None else root_id
            spans.append(_tool(call, e, parent, _ns(e.ts)))
        elif isinstance(e, Note) and e.kind == "subagent":
            t = _ns(e.ts)
            agent = _Span(e.span_id, parent_of(e), f"invoke_agent {e.text}", SpanKind.INTERNAL,
                          t, t, {"gen_ai.operation.name": "invoke_agent",
                                 "gen_ai.agent.name": e.text})  # fmt: skip
            agents[e.span_id] = agent
            spans.append(agent)
    last = _ns(trace.events[-1].ts)
    for cid, call in calls.items():
        if cid not in answered:
            spans.append(_tool(call, None, parent_of(call), max(last, _ns(call.ts))))
    by_id = {s.span_id: s for s in spans}
    for s in sorted(spans, key=lambda s: s.end, reverse=True):
        parent = by_id.get(s.parent) if s.parent else None
        while parent is not None and parent.span_id in agents:
            parent.end = max(parent.end, s.end)
            parent = by_id.get(parent.parent) if parent.parent else None
    return [s.to_otlp(tid) for s in spans]


def export_otel(traces: list[TraceFile]) -> dict[str, Any]:
    """An OTLP/JSON ``{"resourceSpans": [...]}`` document for the given traces."""
    spans = [s for t in traces for s in trace_to_spans(t)]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "upskills")]},
                "scopeSpans": [
                    {"scope": {"name": "upskills.trace", "version": __version__}, "spans": spans}
                ],
            }
        ]
    }
