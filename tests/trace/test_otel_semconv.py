"""The OTLP/JSON export parses into opentelemetry-proto messages and follows GenAI semconv."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest

from upskills.trace import TraceWriter, read_trace
from upskills.trace.events import (
    ModelCall,
    RunEnd,
    RunStart,
    ToolCall,
    ToolResult,
    Usage,
)
from upskills.trace.importers.claude_code import import_claude_code
from upskills.trace.otel import export_otel

from .test_claude_code_fidelity import _session

trace_pb2 = pytest.importorskip("opentelemetry.proto.trace.v1.trace_pb2")
json_format = pytest.importorskip("google.protobuf.json_format")
collector = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")


def _to_proto(doc: dict[str, Any]) -> Any:
    """Parse OTLP/JSON into ExportTraceServiceRequest.

    OTLP/JSON writes trace and span ids as hex, where the proto3 JSON mapping wants base64
    (the OTLP spec's one deviation), so ids are converted first; the rest parses as it is,
    and an unknown field or a wrong type fails.
    """
    doc = copy.deepcopy(doc)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    msg = collector.ExportTraceServiceRequest()
    json_format.ParseDict(doc, msg)
    return msg


def _attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        which = kv.value.WhichOneof("value")
        val = getattr(kv.value, which)
        if which == "array_value":
            val = [v.string_value for v in val.values]
        out[kv.key] = val
    return out


def _write(path: Path) -> None:
    with TraceWriter(path) as w:
        t = w.trace_id
        w.write(RunStart(trace_id=t, task="row_sum", task_hash="abc", agent_role="teacher",
                         provider="anthropic", model="claude-sonnet-4-5"))  # fmt: skip
        w.write(ModelCall(trace_id=t, provider="anthropic", model="claude-sonnet-4-5",
                          usage=Usage(input_tokens=10, output_tokens=7, cache_read_tokens=900,
                                      cache_write_tokens=50), latency_s=1.0,
                          stop_reason="tool_use"))  # fmt: skip
        w.write(ToolCall(trace_id=t, tool_name="check", call_id="c1"))
        w.write(ToolResult(trace_id=t, tool_name="check", call_id="c1", output="boom",
                           error="RuntimeError: worker died"))  # fmt: skip
        w.write(ModelCall(trace_id=t, provider="anthropic", model="claude-sonnet-4-5",
                          error="ProviderError: rate limited after 5 retries"))  # fmt: skip
        w.write(ToolCall(trace_id=t, tool_name="benchmark", call_id="c2"))  # never answered
        w.write(RunEnd(trace_id=t, outcome="unsolved"))


def test_export_is_valid_otlp_with_current_genai_names(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write(path)
    req = _to_proto(export_otel([read_trace(path)]))
    spans = list(req.resource_spans[0].scope_spans[0].spans)
    assert all(len(s.trace_id) == 16 and len(s.span_id) == 8 for s in spans)
    root, chat_ok, tool_err, chat_err, tool_open = spans
    assert root.kind == trace_pb2.Span.SPAN_KIND_INTERNAL and not root.parent_span_id
    assert root.status.code == trace_pb2.Status.STATUS_CODE_UNSET

    a = _attrs(chat_ok)
    assert chat_ok.name == "chat claude-sonnet-4-5"
    assert chat_ok.kind == trace_pb2.Span.SPAN_KIND_CLIENT
    assert chat_ok.status.code == trace_pb2.Status.STATUS_CODE_UNSET
    assert a["gen_ai.provider.name"] == "anthropic" and "gen_ai.system" not in a
    assert a["gen_ai.usage.input_tokens"] == 10 + 900 + 50
    assert a["gen_ai.usage.cache_read.input_tokens"] == 900
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 50
    assert a["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert "error.type" not in a
    assert chat_ok.end_time_unix_nano - chat_ok.start_time_unix_nano == 1_000_000_000

    assert tool_err.kind == trace_pb2.Span.SPAN_KIND_INTERNAL
    assert tool_err.status.code == trace_pb2.Status.STATUS_CODE_ERROR
    assert _attrs(tool_err)["error.type"] == "RuntimeError"
    assert _attrs(chat_err)["error.type"] == "ProviderError"
    assert chat_err.status.code == trace_pb2.Status.STATUS_CODE_ERROR

    assert tool_open.name == "execute_tool benchmark"
    assert _attrs(tool_open)["upskills.tool.result_missing"] is True
    assert tool_open.status.code == trace_pb2.Status.STATUS_CODE_UNSET
    assert all(s.parent_span_id == root.span_id for s in spans[1:])
    assert _attrs(root)["gen_ai.usage.input_tokens"] == 960


def test_imported_session_exports_subagents_as_nested_spans(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    import_claude_code(_session(tmp_path / "proj"), out)
    req = _to_proto(export_otel([read_trace(out)]))
    spans = list(req.resource_spans[0].scope_spans[0].spans)
    by_id = {s.span_id: s for s in spans}
    agent = next(s for s in spans if s.name == "invoke_agent agent-a748733")
    assert by_id[agent.parent_span_id].name == "execute_tool Task"
    inner = [s for s in spans if s.parent_span_id == agent.span_id]
    assert sorted(s.name for s in inner) == [
        "chat claude-opus-4-5-20251101",
        "chat claude-opus-4-5-20251101",
        "execute_tool Read",
    ]
    assert agent.end_time_unix_nano >= max(s.end_time_unix_nano for s in inner)
