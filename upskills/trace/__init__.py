"""Traces: the event schema, an append-and-flush writer, a validating reader, stats, export.

See ``events`` for the schema (OTel GenAI attribute names), ``writer.TraceWriter``,
``reader.read_trace``/``iter_events``, ``stats.trace_stats``, ``otel.export_otel`` and
``importers.claude_code``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from upskills._lazy import lazy_face

if TYPE_CHECKING:
    from upskills.trace.events import TraceEvent, dump_event, parse_event
    from upskills.trace.reader import (
        TraceFile,
        TraceFormatError,
        TraceLineError,
        iter_events,
        iter_trace_files,
        read_trace,
    )
    from upskills.trace.redact import redact
    from upskills.trace.stats import TraceStats, trace_stats
    from upskills.trace.writer import TraceWriter

__all__ = [
    "TraceEvent",
    "TraceFile",
    "TraceFormatError",
    "TraceLineError",
    "TraceStats",
    "TraceWriter",
    "dump_event",
    "iter_events",
    "iter_trace_files",
    "parse_event",
    "read_trace",
    "redact",
    "trace_stats",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "TraceEvent": "upskills.trace.events",
        "dump_event": "upskills.trace.events",
        "parse_event": "upskills.trace.events",
        "TraceFile": "upskills.trace.reader",
        "TraceFormatError": "upskills.trace.reader",
        "TraceLineError": "upskills.trace.reader",
        "iter_events": "upskills.trace.reader",
        "iter_trace_files": "upskills.trace.reader",
        "read_trace": "upskills.trace.reader",
        "redact": "upskills.trace.redact",
        "TraceStats": "upskills.trace.stats",
        "trace_stats": "upskills.trace.stats",
        "TraceWriter": "upskills.trace.writer",
    },
)
