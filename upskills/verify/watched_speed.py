"""The timed speed must be explained by the kernels the watched trials ran (guard (c)).

The trials run ``forward`` under the op recorder and the shadow profile; the timed calls run it
bare, and their outputs are checked, not how they were made. Both watchers cost each op host
time, and a forward can read that with its own clock (``time.perf_counter`` around
``torch.empty(1)``: ~2 us bare, 20-30 us watched; found 2026-12-05,
``benchmarks/verifier_v2/watch_probe.py``). Such a forward runs its own kernel when watched and
PyTorch's when timed, and is credited with PyTorch's speed.

So on a GPU the shadow profile also records the GPU's kernels and copies (CUPTI, through the
Kineto profiler), and each trial reports how long the GPU was busy in its forward
(:attr:`~upskills.verify.verdict.VariantResult.gpu_busy_ms`). A timed median well below the least
of the main variant's busy times means the timed calls did not run what the trials ran: the
forward computes differently when it is not watched. The rule catches the switch only where it
gains: a timed call no faster than the watched kernels is timed fairly whatever it runs.

Why a share and a slack, not equality: a trial's profile starts, like a timed call, from L2
flushed the same way (:func:`~upskills.verify.shadow_ops.shadow_profile`), but the timed calls
are timed with events, which add the launch gaps, and CUPTI times only the kernels: an honest
forward's timed median sits at or above its busy time. What can make an honest watched trial
slower is a GPU clock still ramping up, a first launch's cold instruction caches or kernels of
the forward that overlap on two streams (the busy time is the union of their spans, not the
sum): :data:`WATCHED_SHARE` leaves room for those. Without the flush (until the thirty-second
session's review) a trial read the inputs the judge had just written, still in L2: an honest
1M-element add on an H100 timed at 2.9x its watched busy time, room for a kernel of its own
up to ~2.5x slower than PyTorch's to pass at PyTorch's speed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from upskills.verify.verdict import ErrorClass, VariantResult, VerdictStage
from upskills.verify.worker import StageFailure

if TYPE_CHECKING:
    from upskills.verify.judge import JudgeResult

WATCHED_SHARE = 0.9
"""A timed median under this share of the watched trials' least busy time is refused.

Measured on an H100 (2026-12-05, the corpus's 32 finals that ran there): honest medians were
0.99x to 1.12x of their busy time; the watched-forward cheat's was 0.22x. Not yet measured on
an H200."""
WATCHED_SLACK_MS = 0.002
"""And the difference must exceed this (a few microseconds of a launch-bound call's noise)."""


def busy_times(variants: list[VariantResult], variant: str) -> list[float]:
    """The GPU busy times recorded in the passed trials of ``variant``."""
    return [
        r.gpu_busy_ms
        for r in variants
        if r.variant == variant and r.passed and r.gpu_busy_ms is not None
    ]


def unexplained_speed(median_ms: float, busy_ms: float | None) -> str | None:
    """Why a timed median is not explained by the watched trials' busy time (None: it is)."""
    if busy_ms is None or median_ms >= WATCHED_SHARE * busy_ms - WATCHED_SLACK_MS:
        return None
    return (
        f"the timed calls took {median_ms:.4f} ms a call (median), but in the trials the GPU "
        f"ran the forward's kernels for at least {busy_ms:.4f} ms "
        f"({median_ms / busy_ms:.2f}x of that; under {WATCHED_SHARE:.2f}x is refused)"
    )


def check_watched_speed(
    result: JudgeResult, variant: str, display: str, late: VariantResult | None = None
) -> None:
    """Refuse a timed median the watched calls' kernels cannot explain.

    The watched calls are the passed trials of the timed ``variant`` and the ``late`` trial.
    The least busy time among them is judged against and goes into the timing
    (``watched_busy_ms``). It takes two: a variant's first call may also run its kernels'
    compilation and an autotuner's trial launches, so one busy time alone (one seed and no
    late trial) is not judged. A note says when the rule was not applied.
    """
    timing = result.timing
    if timing is None:
        return
    busy = busy_times(result.variants, variant)
    if late is not None and late.passed and late.gpu_busy_ms is not None:
        busy.append(late.gpu_busy_ms)
    if len(busy) < 2:
        result.notes.append(
            "the timed speed was not checked against the watched trials' kernels: "
            + (
                "they recorded no GPU activity (CUPTI)"
                if not busy
                else "only one watched call of the timed variant recorded them, and a first "
                "call may include compiling and autotuning (more seeds or the late trial "
                "give it a second)"
            )
        )
        return
    timing.watched_busy_ms = min(busy)
    why = unexplained_speed(timing.median_ms, timing.watched_busy_ms)
    if why is not None:
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: guard (c) {why}: the forward computes differently when it is not "
            "watched, and its speed must be its own kernels'",
            guard="timed_result",
        )
