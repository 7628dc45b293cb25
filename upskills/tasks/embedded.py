"""The task a session folder carries with it.

``upskills session start`` embeds the whole task (its source, tags, dtypes, variants and
origin) in the folder's ``state.json``, so the task of a session's trace is known without the
file it was loaded from (a KernelBench problem under the git-ignored ``.kb/``) and on any
machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from upskills.tasks.model import Task


def _embedded(trace_path: str | Path) -> tuple[Path, Any] | None:
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


def embedded_task(trace_path: str | Path) -> Task | None:
    """The task embedded in the ``state.json`` beside a session's ``trace.jsonl``, if any.

    Raises:
        ValueError: the ``state.json`` exists but holds no valid task (names the file).
    """
    found = _embedded(trace_path)
    if found is None:
        return None
    state, raw = found
    try:
        return Task.model_validate(raw)
    except ValueError as exc:
        raise ValueError(f"{state}: no valid embedded task ({exc})") from exc


def embedded_origin(trace_path: str | Path) -> str | None:
    """Where a session's task came from (``builtin`` or its file), as ``state.json`` says.

    Sessions of the first corpus rounds (2026-11-30) did not yet record ``task_origin`` in
    their ``run_start``; their ``state.json`` does. None: not a session's trace, or no
    readable origin there.
    """
    try:
        found = _embedded(trace_path)
    except ValueError:
        return None
    raw = found[1].get("origin") if found and isinstance(found[1], dict) else None
    return raw if isinstance(raw, str) and raw else None
