"""Re-checks of a corpus's final kernels: a later ``upskills check`` of each, its times kept.

``benchmarks/corpus_live/recheck.py`` writes one JSON line per final kernel it judges again,
and the same GPU call can measure the ceilings (``benchmarks/device/ceilings.py``); the corpus
report then takes those kernels' times from the re-check (``upskills traces report --recheck``),
so its percentages of the ceilings compare numbers of one run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from upskills.report.corpus import TaskRow
    from upskills.verify.verdict import Verdict

RECHECK_TOLERANCE = 0.05
"""A re-check reproduces its kernel's speedup when within this fraction of the recorded one
(issue 10's bar; ``benchmarks/corpus_live/recheck.py`` marks ``within_5pct`` so)."""


class Recheck(BaseModel):
    """One row of a re-check file: a final kernel judged again by ``upskills check``."""

    model_config = ConfigDict(extra="ignore")

    candidate_hash: str
    """Hash of the kernel re-checked (the verdict's ``candidate_hash``)."""
    passed: bool | None = None
    """Whether the re-check passed."""
    median_ms: float | None = None
    """Its median time at the main variant."""
    speedup: float | None = None
    """Its speedup vs eager."""
    speedup_compile: float | None = None
    """Its speedup vs torch.compile."""
    gpu: str | None = None
    """GPU that re-checked it."""
    ratio: float | None = None
    """Its speedup vs eager over the one recorded for the kernel in the trace (its benchmark
    verdict); None when the trace recorded none."""
    flush: str = "write"
    """How L2 was flushed before its timed calls (``upskills check --flush``); rows from before
    the choice were all timed after the write flush."""
    recorded_from: str | None = None
    """The earlier re-check file ``ratio`` was computed against (``recheck.py --recorded``),
    instead of the trace's benchmark verdict; None: the trace's."""
    recorded_flush: str | None = None
    """The flush of what ``ratio`` was computed against."""
    guard: str | None = None
    """The guard that refused it, where one did (the report's note names it)."""


def load_rechecks(file: str | Path) -> dict[str, Recheck]:
    """Re-check rows by kernel hash, from a JSON-lines file (``benchmarks/corpus_live/recheck.py``).

    Rows without a ``candidate_hash`` (older files, or a re-check that never produced a
    verdict) are skipped: a time is only ever attributed to the kernel it measured.

    Raises:
        ValueError: the file cannot be read, or a line is not a JSON object (names the line).
    """
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{file}: cannot read re-check file: {exc}") from exc
    rows: dict[str, Recheck] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            if raw.get("candidate_hash"):
                rows[raw["candidate_hash"]] = Recheck.model_validate(raw)
        except (ValueError, ValidationError) as exc:
            raise ValueError(f"{file}:{number}: bad re-check row: {exc}") from exc
    return rows


def use_recheck(
    row: TaskRow, recheck: Recheck | None, ceilings_gpu: str | None, benchmarks: list[Verdict]
) -> None:
    """Replace the final kernel's times with its re-check's, when it passed with a time.

    ``benchmarks``: the kernel's passing benchmark verdicts in these traces, in the order they
    were given. The latest one's speedup vs eager is compared with the re-check's when the
    re-check row has no ratio (its session never benchmarked the kernel, as when that benchmark
    ran out of memory and a later session timed the same kernel): the latest, as the kernel's
    final verdict is its latest submission. When the ratio is outside the tolerance, a note
    gives their times and spreads: a recorded verdict timed with a wide spread is the first
    suspect.
    """
    benchmarked = benchmarks[-1].speedup_eager if benchmarks else None
    recorded = benchmarks[-1].timing if benchmarks else None
    if recheck is None:
        return
    if not recheck.passed or recheck.median_ms is None:
        why = f" (guard {recheck.guard})" if recheck.guard else ""
        row.notes.append(f"the re-check of {row.final_kernel} did not pass{why}: trace times kept")
        return
    row.times_from, row.median_ms = "recheck", recheck.median_ms
    row.recheck_ratio = recheck.ratio
    recorded_flush = recorded.flush if recorded is not None else "write"
    if recheck.recorded_from and recheck.ratio is not None:  # against an earlier re-check
        recorded_flush = recheck.recorded_flush or "write"
        row.notes.append(
            f"re-check compared with the earlier re-check in {recheck.recorded_from} "
            f"({recorded_flush} flush), not with the trace's verdict"
        )
    if recheck.flush != recorded_flush:  # another method, not a reproduction: not compared
        row.recheck_ratio, benchmarked = None, None
        row.notes.append(
            f"re-checked after a {recheck.flush} flush, recorded after a {recorded_flush} "
            "flush: its speedup is not compared with the recorded one"
        )
    if row.recheck_ratio is None and benchmarked and recheck.speedup:
        row.recheck_ratio = round(recheck.speedup / benchmarked, 4)
        row.notes.append(
            f"re-check compared with the kernel's benchmark verdict in another session "
            f"({benchmarked:.4g}x)"
        )
    if row.recheck_ratio is not None and abs(row.recheck_ratio - 1) > RECHECK_TOLERANCE:
        timed = [
            f"{v.speedup_eager:.4g}x at {v.timing.median_ms:.4g} ms, spread {v.timing.spread:.2f}"
            for v in benchmarks
            if v.timing is not None
        ]
        row.notes.append(
            f"re-check {row.recheck_ratio:.3f} of the recorded speedup, re-checked at "
            f"{recheck.median_ms:.4g} ms; the kernel's benchmark verdicts: "
            + ("; ".join(timed) if timed else "none in these traces")
        )
    row.speedup_eager, row.speedup_compile = recheck.speedup, recheck.speedup_compile
    if recheck.gpu and ceilings_gpu and recheck.gpu != ceilings_gpu:
        row.notes.append(f"re-checked on {recheck.gpu}, ceilings measured on {ceilings_gpu}")
