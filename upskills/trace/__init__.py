"""Traces: the event schema, an append-and-flush writer, a validating reader, stats, export.

See ``events`` for the schema (OTel GenAI attribute names), ``writer.TraceWriter``,
``reader.read_trace``/``iter_events``, ``stats.trace_stats``, ``otel.export_otel`` and
``importers.claude_code``.
"""

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
