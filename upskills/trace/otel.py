"""Export traces as OpenTelemetry spans in OTLP/JSON, following the GenAI conventions.

One trace becomes one ``invoke_agent`` root span (run_start to run_end), a ``chat {model}`` child
span per model call and an ``execute_tool {name}`` child span per tool call, closed by its
tool_result. Event fields whose names are OTel attributes (``gen_ai.*``) are copied as they are,
so no renaming happens on the way out.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from upskills import __version__
from upskills.trace.events import ModelCall, Note, RunEnd, RunStart, ToolCall, ToolResult
from upskills.trace.reader import TraceFile


def _ns(ts: str) -> int:
    return int(datetime.fromisoformat(ts).timestamp() * 1e9)


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, list | tuple):
        v = {"arrayValue": {"values": [{"stringValue": str(x)} for x in value]}}
    else:
        v = {"stringValue": str(value)}
    return {"key": key, "value": v}


def _trace_id(trace_id: str) -> str:
    return hashlib.sha256(trace_id.encode()).hexdigest()[:32]


def _span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start: int,
    end: int,
    attrs: dict[str, Any],
    error: str | None = None,
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id[:16].rjust(16, "0"),
        "name": name,
        "kind": 1 if parent else 2,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(max(end, start)),
        "attributes": [_attr(k, v) for k, v in attrs.items() if v is not None],
        "status": {"code": 2, "message": error} if error else {"code": 1},
    }
    if parent:
        span["parentSpanId"] = parent[:16].rjust(16, "0")
    return span


def _model_call_span(tid: str, root: str, e: ModelCall) -> dict[str, Any]:
    end = _ns(e.ts)
    data = e.model_dump(by_alias=True)
    attrs = {k: v for k, v in data.items() if k.startswith("gen_ai.")}
    attrs.update(e.usage.model_dump(by_alias=True))
    attrs["gen_ai.response.finish_reasons"] = [e.stop_reason] if e.stop_reason else None
    attrs["upskills.tool_calls"] = [c.name for c in e.tool_calls] or None
    start = end - int(e.latency_s * 1e9)
    return _span(tid, e.span_id, root, f"chat {e.model}", start, end, attrs, e.error)


def trace_to_spans(trace: TraceFile) -> list[dict[str, Any]]:
    """Convert one trace's events into OTLP/JSON span objects."""
    if not trace.events:
        return []
    tid = _trace_id(trace.trace_id or str(trace.path))
    start_ev, end_ev = trace.start, trace.end
    root_id = start_ev.span_id if start_ev else trace.events[0].span_id
    spans: list[dict[str, Any]] = []
    open_tools: dict[str, ToolCall] = {}
    notes: list[str] = []
    for e in trace.events:
        if isinstance(e, ModelCall):
            spans.append(_model_call_span(tid, root_id, e))
        elif isinstance(e, ToolCall):
            open_tools[e.call_id] = e
        elif isinstance(e, ToolResult):
            call = open_tools.pop(e.call_id, None)
            start = _ns(call.ts) if call else _ns(e.ts) - int(e.duration_s * 1e9)
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": e.tool_name,
                "gen_ai.tool.call.id": e.call_id,
                "upskills.kernel.hash": e.kernel_hash,
            }
            if e.verdict is not None:
                v = e.verdict
                attrs |= {
                    "upskills.verdict.passed": v.passed,
                    "upskills.verdict.error_class": str(v.error_class) if v.error_class else None,
                    "upskills.verdict.speedup_eager": v.speedup_eager,
                    "upskills.verdict.device": v.device,
                    "upskills.verdict.gpu": v.gpu,
                }
            span_id = call.span_id if call else e.span_id
            name = f"execute_tool {e.tool_name}"
            spans.append(_span(tid, span_id, root_id, name, start, _ns(e.ts), attrs, e.error))
        elif isinstance(e, Note):
            notes.append(e.text)
    root_attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent"}
    if start_ev is not None:
        root_attrs |= {
            k: v
            for k, v in start_ev.model_dump(by_alias=True).items()
            if k.startswith(("gen_ai.", "upskills.")) and v is not None
        }
        root_attrs["upskills.task"] = start_ev.task
        root_attrs["upskills.task.hash"] = start_ev.task_hash
    if isinstance(end_ev, RunEnd):
        root_attrs["upskills.outcome"] = end_ev.outcome
        root_attrs["upskills.best_speedup"] = end_ev.best_speedup
        root_attrs["gen_ai.usage.input_tokens"] = end_ev.totals.input_tokens
        root_attrs["gen_ai.usage.output_tokens"] = end_ev.totals.output_tokens
    root_attrs["upskills.notes"] = len(notes)
    t0 = _ns(trace.events[0].ts)
    t1 = _ns(trace.events[-1].ts)
    name = (
        f"invoke_agent {start_ev.agent_name}" if isinstance(start_ev, RunStart) else "invoke_agent"
    )
    spans.insert(0, _span(tid, root_id, None, name, t0, t1, root_attrs))
    return spans


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
