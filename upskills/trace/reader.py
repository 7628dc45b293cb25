"""Read and validate trace files, streaming, naming file and line for every bad line.

By default a bad line (not JSON, not a known event, a field of the wrong type) is recorded as a
``TraceLineError`` and skipped, so one torn or hand-edited line loses one event, not the trace;
``strict=True`` raises ``TraceFormatError`` at the first one instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from upskills.trace.events import EVENT_ADAPTER, RunEnd, RunStart, TraceEvent


@dataclass(frozen=True)
class TraceLineError:
    """A line that could not be read as an event."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class TraceFormatError(ValueError):
    """A trace line is malformed and reading is strict."""

    def __init__(self, error: TraceLineError):
        super().__init__(str(error))
        self.error = error


@dataclass
class TraceFile:
    """The events of one trace file and the lines that could not be read."""

    path: Path
    events: list[TraceEvent] = field(default_factory=list[TraceEvent])
    errors: list[TraceLineError] = field(default_factory=list[TraceLineError])

    @property
    def start(self) -> RunStart | None:
        """The run_start event, if present."""
        return next((e for e in self.events if isinstance(e, RunStart)), None)

    @property
    def end(self) -> RunEnd | None:
        """The last run_end event, if present (None for a run that was killed)."""
        return next((e for e in reversed(self.events) if isinstance(e, RunEnd)), None)

    @property
    def trace_id(self) -> str | None:
        """The trace id of the first event."""
        return self.events[0].trace_id if self.events else None


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{first.get('msg', 'invalid')} at field '{where}'" if where else first["msg"]


def iter_events(
    path: str | Path, strict: bool = False, errors: list[TraceLineError] | None = None
) -> Iterator[tuple[int, TraceEvent]]:
    """Yield ``(line_number, event)`` for each valid line of a trace file, streaming.

    Args:
        path: a ``.jsonl`` trace file.
        strict: raise ``TraceFormatError`` on the first bad line instead of skipping it.
        errors: when given, bad lines are appended here.

    Raises:
        FileNotFoundError: the file does not exist.
        TraceFormatError: a bad line, when ``strict``.
    """
    path = Path(path)
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
                if not isinstance(data, dict):
                    raise ValueError("line is not a JSON object")
                event = EVENT_ADAPTER.validate_python(data)
            except json.JSONDecodeError as exc:
                err = TraceLineError(
                    path, lineno, f"not valid JSON ({exc.msg}, column {exc.colno})"
                )
            except ValidationError as exc:
                err = TraceLineError(path, lineno, f"not a valid trace event: {_describe(exc)}")
            except ValueError as exc:
                err = TraceLineError(path, lineno, str(exc))
            else:
                yield lineno, event
                continue
            if strict:
                raise TraceFormatError(err)
            if errors is not None:
                errors.append(err)


def read_trace(path: str | Path, strict: bool = False) -> TraceFile:
    """Read a whole trace file (see ``iter_events``)."""
    trace = TraceFile(Path(path))
    for _, event in iter_events(path, strict=strict, errors=trace.errors):
        trace.events.append(event)
    return trace


def iter_trace_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Expand files and folders (recursively, ``*.jsonl``) into trace files, sorted per folder.

    Raises:
        FileNotFoundError: a path does not exist.
        NotADirectoryError: never; a non-jsonl file given explicitly is yielded as is.
    """
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*.jsonl") if q.is_file())
        elif p.is_file():
            yield p
        else:
            raise FileNotFoundError(f"no trace file or folder at {p}")
