"""Resumable batches: run work units on an executor, appending each result as it arrives.

The results file is append-only JSONL of :class:`UnitResult` (one flushed, fsynced line each,
the lift store's writer). Keys already in the file are skipped, so rerunning the same batch after
a kill (of the driver, a worker or a node) finishes it without judging anything twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from upskills.executor.base import Executor, UnitResult, WorkUnit


def run_units(
    units: Sequence[WorkUnit],
    executor: Executor,
    out: Path | None = None,
    on_result: Callable[[UnitResult], None] | None = None,
) -> list[UnitResult]:
    """Judge ``units`` (skipping those already in ``out``) and return every result.

    Args:
        units: the batch; keys must be unique.
        executor: where to judge them.
        out: JSONL file of results to resume from and append to (None: keep in memory).
        on_result: called with each new result as it arrives (progress, printing).

    Returns:
        One result per unit, in the order of ``units``.

    Raises:
        ValueError: two units share a key.
    """
    from upskills.core.jsonl import RecordWriter, read_records

    keys = [u.key for u in units]
    if len(set(keys)) != len(keys):
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"work unit keys given twice: {', '.join(dupes[:5])}")
    have = {r.key: r for r in read_records(out, UnitResult)} if out is not None else {}
    todo = [u for u in units if u.key not in have]
    writer = RecordWriter(out, set(have)) if out is not None else None
    try:
        for result in executor.run(todo):
            if writer is not None:
                writer.write(result)
            have[result.key] = result
            if on_result is not None:
                on_result(result)
    finally:
        if writer is not None:
            writer.close()
    return [have[k] for k in keys if k in have]
