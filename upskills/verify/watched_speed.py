"""The timed speed must be explained by the kernels a watched trial ran (guard (c)).

The trials run ``forward`` under the op recorder and the shadow profile; the timed calls run it
bare, and their outputs are checked, not how they were made. Both watchers cost each op host
time, and a forward can read that with its own clock (``time.perf_counter`` around
``torch.empty(1)``: ~2 us bare, 20-30 us watched; found 2026-12-05,
``benchmarks/verifier_v2/watch_probe.py``). Such a forward runs its own kernel when watched and
PyTorch's when timed, and is credited with PyTorch's speed.

So on a GPU the late trial (:func:`~upskills.verify.judge_rules.late_trial`, after every
timed call) also records the GPU's kernels and copies (CUPTI, through the Kineto profiler) and
reports how long the GPU was busy in its forward
(:attr:`~upskills.verify.verdict.VariantResult.gpu_busy_ms`). A timed median well below that
busy time means the timed calls did not run what the watched call ran: the forward computes
differently when it is not watched. The rule catches the switch only where it gains: a timed
call no faster than the watched kernels is timed fairly whatever it runs.

Why the late trial alone: CUPTI, once it has traced a process, stays attached to it (Kineto
tears it down only where ``TEARDOWN_CUPTI=1``) and every launch after it pays for that. In the
thirty-second session every trial recorded its kernels, so the timing ran with CUPTI attached;
in the thirty-third session's H100 run an honest host-bound add was refused, its CUDA-graph
replays at 0.021 ms each against 0.0044 ms by its events, which is what a per-launch cost does
to a replay of one small kernel (the cause is inferred, not yet measured apart). The late trial
comes after every timed call, and after thousands of calls its kernels are compiled and
autotuned: its busy time is the forward's own.

Why a share and a slack, not equality: the trial's profile starts, like a timed call, from L2
flushed the same way (:func:`~upskills.verify.shadow_ops.shadow_profile`), but the timed calls
are timed with events, which add the launch gaps, and CUPTI times only the kernels: an honest
forward's timed median sits at or above its busy time. What can make an honest watched trial
slower is a GPU clock still ramping up, a first launch's cold instruction caches or kernels of
the forward that overlap on two streams (the busy time is the union of their spans, not the
sum): :data:`WATCHED_SHARE` leaves room for those. Without the flush (until the thirty-second
session's review) a trial read the inputs the judge had just written, still in L2: an honest
1M-element add on an H100 timed at 2.9x its watched busy time; with it, 1.49x (thirty-third
session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from upskills.verify.verdict import ErrorClass, FlushMode, VariantResult, VerdictStage
from upskills.verify.worker import StageFailure

if TYPE_CHECKING:
    from upskills.verify.judge import JudgeResult

WATCHED_SHARE = 0.8
"""A timed median under this share of the watched busy time is refused.

Measured on an H100 (2026-12-05, the corpus's 32 finals that ran there, their busy time the
least of every trial's and the late trial's): honest medians were 0.99x to 1.12x of their busy
time; the watched-forward cheat's was 0.22x. On an H200 (thirty-eighth session, the re-check of
all 34 finals, ``recheck_h200_run32.jsonl``, busy time the late trial's alone) they were 0.896x
to 1.061x: five of KernelBench's eight largest tasks (3 to 4 ms a call, 12 GB or more moved)
ran 5 to 12% slower in the late trial than timed (the other three 0 to 2%), and the share was
then 0.9, so an honest ReLU (0.896x) was refused. The probe of that
(``benchmarks/verifier_v2/late_trial_probe.py``, H100, thirty-ninth session) found neither the
input's VMM mapping nor the first CUPTI session slower, but the same ReLU watched at 0.859x of
its timed median once the allocator's cache had been emptied (the late trial follows such a
release). The forty-first session found why (:mod:`~upskills.verify.clearing`): for a while
after memory is given back to the driver, any memory-bound kernel runs 10-14% slower, timed
or watched alike, and the late trial now waits that window out. Until the five large tasks
re-check on an H200 with the wait, 0.8 stays: it keeps the honest H200 minimum 11% above the
bar and the cheat 3.6 times below it; a forward whose switch gains less than 1.25x is not
caught."""
WATCHED_SLACK_MS = 0.002
"""And the difference must exceed this (a few microseconds of a launch-bound call's noise)."""


def trial_flush(device: str, flush: FlushMode, late: bool) -> FlushMode | None:
    """A trial's ``Trial.flush``: L2 flushed and the GPU's kernels recorded, or None.

    Set for a GPU check's late trial alone, so no timed call runs after CUPTI has attached.
    """
    return flush if late and device != "cpu" else None


def unexplained_speed(median_ms: float, busy_ms: float | None) -> str | None:
    """Why a timed median is not explained by the watched busy time (None: it is)."""
    if busy_ms is None or median_ms >= WATCHED_SHARE * busy_ms - WATCHED_SLACK_MS:
        return None
    return (
        f"the timed calls took {median_ms:.4f} ms a call (median), but in the trial after them "
        f"the GPU ran the forward's kernels for {busy_ms:.4f} ms "
        f"({median_ms / busy_ms:.2f}x of that; under {WATCHED_SHARE:.2f}x is refused)"
    )


def check_watched_speed(result: JudgeResult, display: str, late: VariantResult | None) -> None:
    """Refuse a timed median the late trial's kernels cannot explain.

    Its busy time goes into the timing (``watched_busy_ms``). A note says when the rule was
    not applied: no late trial (``CheckOptions.late_trial`` off) or no GPU activity recorded.
    """
    timing = result.timing
    if timing is None:
        return
    busy = late.gpu_busy_ms if late is not None and late.passed else None
    if busy is None:
        result.notes.append(
            "the timed speed was not checked against a watched call's kernels: "
            + (
                "there was no trial after the timed calls (late_trial off)"
                if late is None
                else "the trial after the timed calls recorded no GPU activity (CUPTI)"
            )
        )
        return
    timing.watched_busy_ms = busy
    why = unexplained_speed(timing.median_ms, busy)
    if why is not None:
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: guard (c) {why}: the forward computes differently when it is not "
            "watched, and its speed must be its own kernels'",
            guard="timed_result",
        )
