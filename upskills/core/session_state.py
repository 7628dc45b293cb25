"""What a session folder's ``state.json`` says of its task, read without the task model.

``upskills session start`` embeds the whole task in the folder's ``state.json`` beside its
``trace.jsonl``. This leaf reads that entry (``tasks.embedded`` validates it into a ``Task``;
``trace`` and ``distill`` read its origin), so no layer reads the file twice over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast


def embedded_task_entry(trace_path: str | Path) -> tuple[Path, Any] | None:
    """``(state.json, its "task" entry)`` beside a session's ``trace.jsonl``; None: no session.

    Raises:
        ValueError: the ``state.json`` exists but cannot be read or has no task entry.
    """
    path = Path(trace_path)
    state = path.parent / "state.json"
    if path.name != "trace.jsonl" or not state.is_file():
        return None
    try:
        return state, json.loads(state.read_text(encoding="utf-8"))["task"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{state}: no valid embedded task ({exc})") from exc


def embedded_origin(trace_path: str | Path) -> str | None:
    """Where a session's task came from (``builtin`` or its file), as ``state.json`` says.

    Sessions of the first corpus rounds (2026-11-30) did not yet record ``task_origin`` in
    their ``run_start``; their ``state.json`` does. None: not a session's trace, or no
    readable origin there.
    """
    try:
        found = embedded_task_entry(trace_path)
    except ValueError:
        return None
    if found is None or not isinstance(found[1], dict):
        return None
    raw = cast("dict[str, Any]", found[1]).get("origin")
    return raw if isinstance(raw, str) and raw else None
