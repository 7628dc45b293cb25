"""Timing a callable on a CUDA GPU: events, warm-up, L2 flush, adaptive repetitions.

Each timed call is preceded by a write to a buffer larger than the L2 cache (256 MiB by
default; an H200's L2 is ~60 MB), so every call starts cold, as it would inside a real network.
Events are recorded on the current stream around the call alone; the whole device is
synchronised after each repetition, so work left running (on any stream) cannot overlap the
next call. Before each flush the GPU is given a head start (a ~100 us spin kernel,
``HOST_CUSHION_CYCLES``): the host enqueues the flush, the start event and the call while the
GPU spins, so a slow host (a scheduler hiccup, a busy core) cannot open a gap between the start
event and the call's first kernel and have it timed as the kernel's. A timed call the host was
still enqueuing when the GPU reached its start event (a late call), and that took longer than
``SLOW_LATE_CALL`` times the fastest call enqueued in time before it (or any late call, while
none was in time), doubles the head start of the calls after it, up to
``HOST_CUSHION_MAX_CYCLES``. Before each head start the device is synchronised and every
persisting L2 line demoted to normal (:mod:`upskills.verify.l2_fence`), so lines a candidate set
aside in an earlier call do not outlive the flush. The number of repetitions
adapts: about ``target_s`` seconds of calls, at least ``min_reps`` when that fits in ``max_s``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from upskills.verify import l2_fence
from upskills.verify.verdict import FlushMode, Timing

L2_FLUSH_BYTES = 256 * 1024 * 1024
"""Bytes written before each timed call to evict the L2 cache."""

HOST_CUSHION_CYCLES = 200_000
"""GPU clock cycles of spin before each timed call's flush (~100 us at 2 GHz): time for the host
to enqueue the flush, the start event and the call before the GPU reaches them. The eleventh
device session's stability probe timed one of 17 checks of a 7 us add at 0.041 ms median, with
no predecessor check at all, and the p90 of 9 of them at 2.6-4.6x their median: untimed host
work between the synchronize and the launch, measured (our reading) because the 256 MiB flush
(~80 us) was all the GPU had queued ahead of the start event."""

HOST_CUSHION_MAX_CYCLES = 8 * HOST_CUSHION_CYCLES
"""The most the head start grows to (~0.8 ms) after late timed calls. The twenty-fourth device
session's stability probe found the slow checks of a 7 us add were those with many late calls
(555-1823 of 2000, against 21-255 in the clean ones; one check's median 3x): on those calls the
host took longer than the fixed head start. Every call still counts, late or not: dropping late
calls would let a forward choose which of its calls are timed."""

SLOW_LATE_CALL = 1.25
"""A late call grows the head start only when it took this many times the fastest call that was
enqueued in time: lateness is an upper bound (the host's time runs to forward's return, past the
launch), and 40_LayerNorm-s21's verdicts counted 145-517 late calls of 2000 at an unmoved
0.1796 ms median, so lateness alone would put most checks at the cap for nothing. While no call
has been in time (a host slow on every call) there is nothing to compare with, and a late call
grows it."""


def summarize(times_ms: list[float]) -> Timing:
    """Median, p10, p90, mean and relative spread of per-call times in milliseconds."""
    if not times_ms:
        raise ValueError("no timings to summarize")
    ordered = sorted(times_ms)

    def pct(q: float) -> float:
        pos = q * (len(ordered) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    median = statistics.median(ordered)
    p10, p90 = pct(0.10), pct(0.90)
    return Timing(
        median_ms=median,
        p10_ms=p10,
        p90_ms=p90,
        mean_ms=statistics.fmean(ordered),
        reps=len(ordered),
        spread=(p90 - p10) / median if median > 0 else 0.0,
    )


def plan_reps(
    estimate_ms: float,
    *,
    min_reps: int = 50,
    target_s: float = 1.0,
    max_s: float = 20.0,
    max_reps: int = 2000,
) -> int:
    """How many timed calls: ~``target_s`` of calls, >= ``min_reps`` if that fits ``max_s``."""
    est_s = max(estimate_ms, 1e-3) / 1000.0
    reps = int(target_s / est_s)
    reps = max(reps, min(min_reps, int(max_s / est_s)))
    return max(3, min(reps, max_reps))


def time_cuda(
    fn: Callable[[], Any],
    *,
    warmup: int = 3,
    min_reps: int = 50,
    target_s: float = 1.0,
    flush_bytes: int = L2_FLUSH_BYTES,
    flush_mode: FlushMode = "write",
    before_each: Callable[[int], Any] | None = None,
    keep_last: int = 1,
    keep_at: Sequence[float] = (),
    on_kept: Callable[[Any, Any], None] | None = None,
    max_reps: int = 2000,
    times_out: list[float] | None = None,
    after_each: Callable[[Any], None] | None = None,
    demote_persisting_l2: bool = True,
) -> tuple[Timing, list[tuple[Any, Any]]]:
    """Time ``fn()`` on the current CUDA device.

    Args:
        fn: The call to time (inputs bound).
        warmup: Untimed calls first (compilation, autotuning, caches).
        min_reps: Minimum timed calls when they fit the time budget.
        target_s: Aim for about this much time in timed calls.
        flush_bytes: Size of the buffer written (or read) before each call (L2 flush).
        flush_mode: ``write`` (the default) or ``read``
            (:data:`upskills.verify.verdict.FlushMode`).
        before_each: Called (untimed, before the L2 flush) with the call's index; whatever it
            returns is paired with that call's output (e.g. which inputs it loaded).
        keep_last: How many of the last calls' outputs to return (kept alive meanwhile).
        keep_at: Instead, hand the timed calls at these fractions of the planned repetitions
            (:func:`kept_calls`) to ``on_kept(tag, output)`` right after each returns (untimed),
            and keep no output alive longer than any other: positions a forward can neither
            count its way to nor learn of while the run lasts, so it cannot be honest on the
            checked calls alone.
        on_kept: Receives the calls chosen by ``keep_at``.
        max_reps: At most this many timed calls.
        times_out: When given, each timed call's time (ms) is appended to it.
        after_each: Called (untimed) with each timed call's output, right after it returns.
        demote_persisting_l2: Demote persisting L2 lines before each call's flush (untimed;
            off only to show, in a GPU test, what the fence undoes).

    Returns:
        ``(timing, last)``: the statistics (``late_calls``: the timed calls whose forward was
        still being enqueued when the GPU reached their start event; ``persisting_l2_bytes``: the
        most L2 the context set aside for persisting lines after any timed call;
        ``persisting_l2_default_bytes``: the context's limit before the candidate ran, where the
        candidate's process recorded it) and
        ``(tag, output)`` of the last ``keep_last`` timed calls (none with ``keep_at``), so the
        caller can check the timed calls computed the right thing.
    """
    if flush_mode not in ("write", "read"):
        raise ValueError(f"flush_mode is 'write' or 'read', not {flush_mode!r}")
    import torch

    do_flush = make_flush(flush_mode, flush_bytes)
    last: list[tuple[Any, Any]] = []
    calls = 0
    slack: list[float] = []
    warm, estimates = max(1, warmup), 3  # calls before the timed ones
    cushion = HOST_CUSHION_CYCLES
    on_time = math.inf  # the fastest estimate or timed call enqueued in time (warm-up compiles)
    fence = l2_fence.demote_persisting_lines if demote_persisting_l2 else None
    set_aside: list[int] = []  # the context's persisting-L2 limit after each timed call

    def one() -> float:
        nonlocal calls, cushion, on_time
        tag = before_each(calls) if before_each is not None else None
        calls += 1
        ms, out, late_ms = _timed_call(fn, do_flush, cushion, fence)
        last.append((tag, out))
        del last[:-keep_last]
        slack.append(late_ms)
        if late_ms <= 0:
            if calls > warm:
                on_time = min(on_time, ms)
        elif calls > warm + estimates and (on_time == math.inf or ms > SLOW_LATE_CALL * on_time):
            cushion = min(2 * cushion, HOST_CUSHION_MAX_CYCLES)  # only a timed call grows it
        return ms

    torch.cuda.synchronize()
    for _ in range(warm):
        one()
    estimate = [one() for _ in range(estimates)]
    reps = plan_reps(
        statistics.median(estimate), min_reps=min_reps, target_s=target_s, max_reps=max_reps
    )
    chosen = set(kept_calls(keep_at, reps))
    times: list[float] = []
    del slack[:]  # the timed calls' only
    for i in range(reps):
        times.append(one())
        set_aside.append(l2_fence.persisting_limit())
        if after_each is not None:
            after_each(last[-1][1])
        if keep_at and i in chosen and on_kept is not None:
            on_kept(*last[-1])
    if keep_at:
        last = []
    if times_out is not None:
        times_out.extend(times)
    late = sum(1 for ms in slack if ms > 0)
    stats = {
        "flush": flush_mode,
        "late_calls": late,
        "head_start_x": cushion // HOST_CUSHION_CYCLES,
        "persisting_l2_bytes": max(set_aside, default=0),
        "persisting_l2_default_bytes": l2_fence.default_limit(),
    }
    return summarize(times).model_copy(update=stats), last


def make_flush(flush_mode: FlushMode, flush_bytes: int = L2_FLUSH_BYTES) -> Callable[[], Any]:
    """The L2 flush a timed call follows: write (or read) a ``flush_bytes`` buffer on the GPU.

    The late trial follows the same flush (:mod:`upskills.verify.watched_speed`), so its
    kernels meet the cache the timed calls meet.
    """
    import torch

    flush = torch.ones(flush_bytes // 4, dtype=torch.int32, device="cuda")
    sink = torch.empty((), dtype=torch.int32, device="cuda")
    if flush_mode == "write":
        return lambda: flush.fill_(1)
    return lambda: torch.amax(flush, out=sink)


def kept_calls(keep_at: Sequence[float], reps: int) -> list[int]:
    """The distinct timed calls (0-based, in order) at fractions ``keep_at`` of ``reps``."""
    return sorted({min(reps - 1, max(0, int(f * reps))) for f in keep_at})


def _timed_call(
    fn: Callable[[], Any],
    flush: Callable[[], Any],
    cushion_cycles: int = HOST_CUSHION_CYCLES,
    fence: Callable[[], None] | None = None,
) -> tuple[float, Any, float]:
    """``(ms, output, late_ms)`` of one timed call, after a head start of ``cushion_cycles``.

    With ``fence``, the device is first synchronised (the inputs' copies are done: run under a
    persisting window, they could mark lines again) and ``fence()`` called, untimed, before the
    head start.

    ``ms`` is its event time; ``late_ms`` how much longer the host took to enqueue it (from the
    head-start event's enqueue to forward's return) than the GPU took from that event to the
    start event. Above 0, the forward was still being enqueued when the GPU reached the start
    event, and a host delay may be in ``ms``.
    """
    import torch

    stream = torch.cuda.current_stream()
    head = torch.cuda.Event(enable_timing=True)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    # torch's spin kernel (private, present since torch 1.x): absent, the call is timed as before
    spin: Callable[[int], None] | None = getattr(torch.cuda, "_sleep", None)
    if fence is not None:
        torch.cuda.synchronize()
        fence()
    t0 = time.perf_counter()
    head.record(stream)
    if cushion_cycles and spin is not None:
        spin(cushion_cycles)
    flush()
    start.record(stream)
    out = fn()
    host_ms = (time.perf_counter() - t0) * 1000.0
    end.record(stream)
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)), out, host_ms - float(head.elapsed_time(start))
