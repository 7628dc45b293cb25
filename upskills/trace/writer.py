"""Append-and-flush trace writer: a run killed at any point leaves a valid prefix.

Each event is serialized to one line, redacted, written with a single ``write`` call on a file
opened in append mode, and flushed (``fsync`` too when ``durable=True``). A reader therefore sees
whole lines only, except possibly a torn last line after a power loss, which the reader reports
and skips.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from types import TracebackType
from typing import IO

from pydantic import BaseModel

from upskills.trace.events import EVENT_ADAPTER
from upskills.trace.redact import env_secret_values, redact


class TraceWriter:
    """Writes events of one trace to a JSONL file.

    Args:
        path: the trace file; parent folders are created; an existing file is appended to.
        trace_id: id shared by every event; defaults to a new uuid4 hex.
        durable: also ``fsync`` after every event (slower; for crash-safety beyond a kill).
    """

    def __init__(self, path: str | Path, trace_id: str | None = None, durable: bool = False):
        self.path = Path(path)
        self.trace_id = trace_id or uuid.uuid4().hex
        self.durable = durable
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        self._secrets = env_secret_values()
        self.count = 0

    def write(self, event: BaseModel) -> BaseModel:
        """Validate, redact, append and flush one event; returns the event as written."""
        if self._fh is None:
            raise ValueError(f"trace writer for {self.path} is closed")
        data = redact(event.model_dump(mode="json", by_alias=True), self._secrets)
        written = EVENT_ADAPTER.validate_python(data)
        line = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._fh.write(line)
        self._fh.flush()
        if self.durable:
            os.fsync(self._fh.fileno())
        self.count += 1
        return written

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
