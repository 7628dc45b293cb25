"""The task a session folder carries with it.

``upskills session start`` embeds the whole task (its source, tags, dtypes, variants) in the
folder's ``state.json``, so the task of a session's trace is known without the file it was
loaded from (a KernelBench problem under the git-ignored ``.kb/``) and on any machine.
"""

from __future__ import annotations

import json
from pathlib import Path

from upskills.tasks.model import Task


def embedded_task(trace_path: str | Path) -> Task | None:
    """The task embedded in the ``state.json`` beside a session's ``trace.jsonl``, if any.

    Raises:
        ValueError: the ``state.json`` exists but holds no valid task (names the file).
    """
    path = Path(trace_path)
    state = path.parent / "state.json"
    if path.name != "trace.jsonl" or not state.is_file():
        return None
    try:
        return Task.model_validate(json.loads(state.read_text(encoding="utf-8"))["task"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{state}: no valid embedded task ({exc})") from exc
