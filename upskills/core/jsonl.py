"""Append-only JSONL files of pydantic records: written as produced, readable after a crash.

Lift runs, batch checks and executors all keep their results this way: one flushed (and
fsynced) line per record, a record's ``key`` written once, a torn last line from a killed
writer cut on reopen and ignored on read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)


class RunStoreError(ValueError):
    """A run file line does not validate; names the file and line."""


def _cut_partial_tail(path: Path) -> None:
    """Drop a last line that has no newline (a write interrupted by a kill)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        data = path.read_bytes()
        f.truncate(data.rfind(b"\n") + 1)


def read_records(path: Path, model: type[T]) -> list[T]:
    """Read and validate a run JSONL file; an interrupted last line is ignored.

    Args:
        path: the file (missing means empty).
        model: The record model (a pydantic model with a ``key`` field).

    Returns:
        Records in file order, first occurrence of each key only, except that a record
        carrying an infrastructure ``error`` (a field of lift generations) is replaced by a
        later one of the same key: a retried sample.

    Raises:
        RunStoreError: a complete line that is not valid JSON or not a valid record.
    """
    out: list[T] = []
    seen: dict[str, int] = {}
    if not path.exists():
        return out
    raw = path.read_text(encoding="utf-8")
    lines = raw.split("\n")
    if not raw.endswith("\n"):
        lines = lines[:-1]  # a partial last line from a killed write
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = model.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RunStoreError(f"{path}:{no}: not a valid {model.__name__}: {msg}") from None
        key = getattr(rec, "key")  # noqa: B009
        if key not in seen:
            seen[key] = len(out)
            out.append(rec)
        elif getattr(out[seen[key]], "error", None) is not None:
            out[seen[key]] = rec  # a retried sample replaces its infrastructure error
    return out


class RecordWriter:
    """Appends records to a JSONL file, one flushed line each; skips keys already present."""

    def __init__(self, path: Path, existing: set[str] | None = None) -> None:
        """Open ``path`` for appending after cutting any partial last line."""
        path.parent.mkdir(parents=True, exist_ok=True)
        _cut_partial_tail(path)
        self.path = path
        self.keys: set[str] = set(existing or ())
        self._f = path.open("a", encoding="utf-8")

    def write(self, record: BaseModel) -> bool:
        """Append one record unless its key is already written; returns whether it was."""
        key = getattr(record, "key")  # noqa: B009
        if key in self.keys:
            return False
        self._f.write(record.model_dump_json() + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.keys.add(key)
        return True

    def close(self) -> None:
        """Close the file."""
        self._f.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
