"""The task a session folder carries with it.

``upskills session start`` embeds the whole task (its source, tags, dtypes, variants and
origin) in the folder's ``state.json``, so the task of a session's trace is known without the
file it was loaded from (a KernelBench problem under the git-ignored ``.kb/``) and on any
machine. The file is read by :mod:`upskills.core.session_state` (its origin alone too).
"""

from __future__ import annotations

from pathlib import Path

from upskills.core.session_state import embedded_task_entry
from upskills.tasks.model import Task


def embedded_task(trace_path: str | Path) -> Task | None:
    """The task embedded in the ``state.json`` beside a session's ``trace.jsonl``, if any.

    Raises:
        ValueError: the ``state.json`` exists but holds no valid task (names the file).
    """
    found = embedded_task_entry(trace_path)
    if found is None:
        return None
    state, raw = found
    try:
        return Task.model_validate(raw)
    except ValueError as exc:
        raise ValueError(f"{state}: no valid embedded task ({exc})") from exc
