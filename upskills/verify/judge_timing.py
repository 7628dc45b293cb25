"""Timing a candidate that passed, from the judge's side: events cross-checked by its own clock.

The candidate's process times its calls with CUDA events (L2 flushed, inputs rotated in an
order the judge chose, the last outputs copied back and compared); then the judge times
back-to-back calls with its own monotonic clock, and events that claim much less than that
are a ``timing`` verdict, not a number.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from upskills.tasks.runtime import build_inputs
from upskills.verify.compare import compare_outputs
from upskills.verify.fingerprint import PROJECTIONS, expected, squared_deviations, threshold
from upskills.verify.judge_memory import ask_timed
from upskills.verify.judge_outputs import flatten_outputs, trial_seed
from upskills.verify.perturb import perturb_inputs
from upskills.verify.protocol import Bulk, BulkDone, Ping, TensorHandle, TimeDone, TimeRun
from upskills.verify.timing import kept_calls, summarize
from upskills.verify.transport import buffer_like, copy_into, export_args
from upskills.verify.verdict import ErrorClass, Timing, VerdictStage
from upskills.verify.worker import StageFailure

if TYPE_CHECKING:
    from upskills.verify.judge import Judge, Prepared

TIMING_INPUT_SETS = 3
"""Input sets the timed calls rotate through (a stale result then shows)."""
KEEP_TIMED = 2
"""Timed calls whose outputs are checked against the reference, at least."""
KEEP_TIMED_MAX = 6
"""At most, while their outputs take no more than ``KEEP_BYTES``."""
KEEP_BYTES = 1 << 30
AUDIT_CALLS = 16
"""Timed calls whose fingerprints the judge verifies, with an audit (drawn after the run)."""
UNTIMED_CALLS = 6
"""Calls before the first timed one: ``time_cuda``'s 3 warm-up and 3 estimate calls."""
CLOCK_TOLERANCE = 0.35
"""The judge's per-call time may exceed the candidate's median by this share (plus slack)."""
CLOCK_SLACK_MS = 0.015
"""Per-call launch overhead the judge's clock allows on top of the candidate's events.

It was 0.1 ms until 2026-12-03: a kernel run whole on a private stream (events ~0) could hide
under that whenever it took under ~0.1 ms, as the corpus' built-in kernels do (0.07 ms).
Honest calls that are host-bound by more than this go to the CUDA-graph check, which has no
host cost."""
GRAPH_CHECK_MAX_MS = 2.0
"""Back-to-back calls slower than this per call are not host-bound: no CUDA-graph check."""
GRAPH_REPLAY_MS = 20.0
"""The CUDA-graph check replays for about this long (at most ``GRAPH_REPLAYS_MAX`` times), so a
request's fixed cost (mapping the output, a synchronisation) is not read as a few microseconds'
kernel's own: 200 replays of a 4 us row sum were not enough on the H200."""
GRAPH_REPLAYS_MAX = 5000


def time_main(judge: Judge, prepared: Prepared) -> None:
    """Time the candidate on the main variant and check its clock against the judge's."""
    t0 = time.monotonic()
    refs: list[list[Any]] = []
    wires: list[list[Any]] = []
    shared: list[list[Any]] = []  # the judge-owned copies the handles point into: keep them alive
    n_sets, n_keep = TIMING_INPUT_SETS, KEEP_TIMED
    for i in range(TIMING_INPUT_SETS):
        if i >= n_sets:
            break
        inputs = build_inputs(
            prepared.module, judge.device, trial_seed(judge.job.seed, "timing", i)
        )
        refs.append(flatten_outputs(judge.reference(prepared, inputs)[0])[1])
        copies, wire = export_args(inputs, judge.arena)
        shared.append(copies)
        wires.append(wire)
        if i == 0:
            n_keep = keep_count(nbytes(refs[0]))
            n_sets = timing_sets(
                judge.device, nbytes(inputs) + nbytes(refs[0]), nbytes(refs[0]), n_keep
            )
            if n_sets < TIMING_INPUT_SETS:
                judge.result.notes.append(
                    f"timed on {n_sets} input set(s), not {TIMING_INPUT_SETS}: the GPU has no "
                    "room for more at this size (a result cached across calls shows less)"
                )
        del inputs  # the references were computed from these before any candidate saw them
    keep = [[buffer_like(t, judge.arena) for t in refs[0]] for _ in range(n_keep)]
    bulk_bufs = [buffer_like(t, judge.arena) for t in refs[0]]  # made with the others
    rng = random.Random(judge.job.seed ^ 0x5EED)
    order = [rng.randrange(n_sets) for _ in range(4096)]
    # every call's inputs its own (empty: not perturbed, only to measure what that costs)
    perturb = [rng.getrandbits(62) for _ in range(4096)] if judge.job.perturb_timing else []
    # which timed calls are checked: random positions, not the last ones, so a forward that
    # counts its calls cannot be honest on the checked ones alone
    keep_at = [rng.random() for _ in range(n_keep)]
    # fingerprints of every timed call; which are verified is drawn after the reply
    print_seed = secrets.randbits(62) if judge.job.audit_timed_calls else None
    judge.clock.add("timing_setup", time.monotonic() - t0)
    reply, wall_ms = ask_timed(
        judge,
        TimeRun(
            input_sets=wires,
            order=order,
            keep=[[h for _, h in bufs] for bufs in keep],
            max_reps=2000,
            target_ms=1000.0,
            keep_at=keep_at,
            perturb=perturb,
            flush=judge.job.flush,
            fingerprint_seed=print_seed,
        ),
    )
    judge.clock.add("timing", wall_ms / 1000.0)
    if not isinstance(reply, TimeDone):
        raise StageFailure(ErrorClass.RUNTIME, VerdictStage.TIMING, "unexpected reply")
    if reply.failure is not None:
        failure = judge.fail_from(reply.failure)
        failure.stage = VerdictStage.TIMING
        raise failure
    display = judge.job.display
    if reply.library_changes:
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: library state changed while timed: {', '.join(reply.library_changes)}",
            guard="library_patch",
        )
    times = [t for t in reply.times_ms if t == t and t >= 0]
    if not times or len(times) != len(reply.times_ms):
        raise StageFailure(
            ErrorClass.TIMING, VerdictStage.TIMING, f"{display}: no valid timings came back"
        )
    if reply.launches < len(times):
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: some timed calls launched no kernel (cached result?)",
            guard="no_launch",
        )
    if perturb:
        del refs[1:]  # the clock check needs set 0's; a kept call's reference is made again
    _check_kept(judge, prepared, reply, len(times), keep_at, keep, order, perturb, refs)
    if print_seed is not None:
        _audit(judge, prepared, reply, len(times), order, perturb, refs, print_seed)
    if sum(times) > wall_ms * 1.05 + 1.0:
        raise StageFailure(
            ErrorClass.TIMING,
            VerdictStage.TIMING,
            f"{display}: the candidate reports {sum(times):.1f} ms of timed calls in "
            f"{wall_ms:.1f} ms of the judge's clock",
            guard="clock",
        )
    # the candidate's process says so: shown, never decided on
    said = {
        "late_calls": reply.late_calls,
        "head_start_x": reply.head_start_x,
        "persisting_l2_bytes": reply.persisting_l2_bytes,
        "persisting_l2_default_bytes": reply.persisting_l2_default_bytes,
    }
    timing = summarize(times).model_copy(update={"flush": judge.job.flush, **said})
    clock_check(judge, timing, wires[0], refs[0], bulk_bufs, (prepared, shared[0]))
    judge.result.timing = timing
    judge.result.timing_status = "measured"


def _check_kept(
    judge: Judge,
    prepared: Prepared,
    reply: TimeDone,
    reps: int,
    keep_at: list[float],
    keep: list[list[tuple[Any, TensorHandle]]],
    order: list[int],
    perturb: list[int],
    refs: list[list[Any]],
) -> None:
    """The kept timed calls came back from the calls asked for, each right for its inputs."""
    display = judge.job.display
    calls = [UNTIMED_CALLS + i for i in kept_calls(keep_at, reps)]
    if len(reply.picks) != len(calls) or any(
        p != order[c % len(order)] for p, c in zip(reply.picks, calls, strict=False)
    ):
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: the timed calls' outputs did not come back as asked (input sets "
            f"{reply.picks}, expected {[order[c % len(order)] for c in calls]})",
            guard="timed_result",
        )
    for call, bufs in zip(calls, keep, strict=False):
        pick = order[call % len(order)]
        if perturb:
            ref = perturbed_reference(judge, prepared, pick, perturb[call % len(perturb)])
        else:
            ref = refs[pick]
        cmp = _against(judge, ref, bufs)
        del ref
        if not cmp.passed:
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.TIMING,
                f"{display}: a timed call returned a wrong result for its inputs "
                f"({cmp.message}): the candidate behaves differently when timed, or returned "
                "a result cached from other inputs",
                guard="timed_result",
            )


def _audit(
    judge: Judge,
    prepared: Prepared,
    reply: TimeDone,
    reps: int,
    order: list[int],
    perturb: list[int],
    refs: list[list[Any]],
    seed: int,
) -> None:
    """Every timed call was fingerprinted; ``AUDIT_CALLS`` of them, drawn now, must match."""

    def reference(i: int) -> list[Any]:
        call = UNTIMED_CALLS + i
        pick = order[call % len(order)]
        if perturb:
            return perturbed_reference(judge, prepared, pick, perturb[call % len(perturb)])
        return refs[pick]

    verify_drawn(judge, reply.fingerprints, reps, AUDIT_CALLS, reference, seed, "timed call")


def verify_drawn(
    judge: Judge,
    prints: list[list[float]],
    calls: int,
    draws: int,
    reference: Callable[[int], list[Any]],
    seed: int,
    what: str,
) -> None:
    """``draws`` of ``calls`` calls' fingerprints, drawn now, must match their references.

    The draw comes from the operating system's generator after the reply, so nothing in the
    candidate's process could tell which calls would be verified. The verified projections'
    squared deviations, in units of the tolerance, are pooled (:mod:`~.fingerprint`).
    """
    display = judge.job.display
    if len(prints) != calls:
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: {len(prints)} fingerprints came back for {calls} {what}s",
            guard="timed_result",
        )
    squares: list[float] = []
    worst = (-1.0, -1)
    for i in sorted(random.SystemRandom().sample(range(calls), min(draws, calls))):
        ref = reference(i)
        wanted = expected(ref, seed, i, judge.task.atol, judge.task.rtol, judge.matmul)
        del ref
        got = prints[i]
        if len(got) != len(wanted) * PROJECTIONS:
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.TIMING,
                f"{display}: {what} {i} returned {len(got) // PROJECTIONS} outputs' "
                f"fingerprints, expected {len(wanted)}",
                guard="timed_result",
            )
        for k, want in enumerate(wanted):
            if want is not None:
                these = squared_deviations(got[k * PROJECTIONS : (k + 1) * PROJECTIONS], want)
                squares += these
                worst = max(worst, (sum(these) / len(these), i))
    if not squares:
        return
    mean, limit = sum(squares) / len(squares), threshold(len(squares))
    if not mean <= limit:  # NaN and inf fail too
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: the {what}s drawn after the run returned outputs unlike their "
            f"references: mean squared deviation {mean:.3g} tolerances over {len(squares)} "
            f"projections (at most {limit:.3g}), worst {what} {worst[1]} ({worst[0]:.3g}): "
            f"the candidate does not compute every {what}",
            guard="timed_result",
        )


def perturbed_reference(judge: Judge, prepared: Prepared, pick: int, seed: int) -> list[Any]:
    """The reference outputs of timing set ``pick`` as a timed call saw it, perturbed by ``seed``.

    The set is built again from its seed (the judge's shared copy was mapped by the candidate,
    so it is not trusted as input), perturbed as the candidate's loader did, and run through
    the reference.
    """
    inputs = build_inputs(prepared.module, judge.device, trial_seed(judge.job.seed, "timing", pick))
    perturb_inputs(inputs, seed)
    out = flatten_outputs(judge.reference(prepared, inputs)[0])[1]
    del inputs
    return out


def nbytes(value: Any) -> int:
    """Bytes of the tensors in a (nested) value."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, list | tuple):
        return sum(nbytes(v) for v in cast("list[Any] | tuple[Any, ...]", value))
    return 0


def keep_count(out_bytes: int) -> int:
    """How many timed calls' outputs to check: more while they are small."""
    return max(KEEP_TIMED, min(KEEP_TIMED_MAX, KEEP_BYTES // max(1, out_bytes)))


def timing_sets(device: str, per_set: int, out_bytes: int, n_keep: int = KEEP_TIMED) -> int:
    """Input sets to rotate through: ``TIMING_INPUT_SETS``, fewer when the GPU lacks room.

    Each set costs its inputs' shared copy and its reference outputs (``per_set`` bytes);
    the judge also holds ``n_keep + 1`` output buffers and, after the timed calls, rebuilds
    a kept call's inputs for its reference (inputs, the reference's copy of them and its
    outputs, once the other sets' references are dropped: one ``per_set`` more), and the
    candidate needs room for its own outputs and workspace, so the sets may take at most half
    of the free memory.
    """
    if device != "cuda" or per_set <= 0:
        return TIMING_INPUT_SETS
    import torch

    free, _total = torch.cuda.mem_get_info()
    budget = free // 2 - (n_keep + 1) * out_bytes - per_set
    return max(1, min(TIMING_INPUT_SETS, budget // per_set + 1))  # the first one is made


def clock_check(
    judge: Judge,
    timing: Timing,
    wire: list[Any],
    ref: list[Any],
    bufs: list[tuple[Any, TensorHandle]],
    refill: tuple[Prepared, list[Any]] | None = None,
) -> None:
    """Back-to-back calls timed by the judge's own clock must agree with the events.

    When they do not, the calls may be host-bound (Python launch paths cost more per call than
    a small kernel's GPU time): with ``refill`` (the prepared task and the judge's shared copies
    behind ``wire``) the judge then times the forward replayed from a CUDA graph, after writing
    fresh input values into those copies, and the replays' result must match the fresh inputs.
    """
    t0 = time.monotonic()
    rtts: list[float] = []
    for _ in range(3):
        s = time.monotonic()
        judge.ask(Ping())
        rtts.append(time.monotonic() - s)
    rtt_ms = min(rtts) * 1000.0
    calls = int(min(200, max(5, 60.0 / max(timing.median_ms, 1e-3))))
    rng = random.Random(judge.job.seed ^ 0xB0C)
    overheads: list[float] = []

    def measure() -> float:
        if judge.job.audit_clock_calls and refill is not None:
            per, overhead = _audited_per_call(judge, refill[0], calls, wire, bufs, rng)
            overheads.append(overhead)
            return per
        return _bulk_per_call(judge, calls, wire, ref, bufs, rtt_ms, rng.randrange(calls))

    per_call = measure()
    first = per_call
    if _disagrees(per_call, timing.median_ms):
        # once more: a one-off cost (mapping GiB-scale inputs, a first allocation, a busy host)
        # does not repeat, a candidate whose events under-report does; the faster run counts
        again = measure()
        per_call = min(per_call, again)
        if not _disagrees(per_call, timing.median_ms):
            judge.result.notes.append(
                f"clock check repeated: {first:.4f} ms per call the first time, "
                f"{per_call:.4f} ms the second (events {timing.median_ms:.4f} ms)"
            )
    judge.clock.add("clock_check", time.monotonic() - t0)
    display = judge.job.display
    timing.clock_ms = round(per_call, 5)
    if not _disagrees(per_call, timing.median_ms):
        return
    graph_note = ""
    if refill is not None and per_call < GRAPH_CHECK_MAX_MS:
        replays = max(
            calls, min(GRAPH_REPLAYS_MAX, int(GRAPH_REPLAY_MS / max(timing.median_ms, 1e-3)))
        )
        graph_ms, graph_note = graph_check(judge, refill, wire, bufs, replays, rtt_ms)
        if graph_ms is not None and not _disagrees(graph_ms, timing.median_ms):
            timing.clock_ms = round(graph_ms, 5)
            judge.result.notes.append(
                f"host-bound: {per_call:.4f} ms per back-to-back call on the judge's clock, "
                f"{graph_ms:.4f} ms per CUDA-graph replay; the events' {timing.median_ms:.4f} ms "
                "agree with the replays"
            )
            return
    raise StageFailure(
        ErrorClass.TIMING,
        VerdictStage.TIMING,
        f"{display}: the candidate's events say {timing.median_ms:.4f} ms per call, the "
        f"judge's clock {per_call:.4f} ms per call over {calls} back-to-back calls"
        + (
            f" (each on perturbed inputs and fingerprinted; {min(overheads):.4f} ms a call of "
            "copies, perturbation and fingerprints, timed without forward, taken off)"
            if overheads
            else ""
        )
        + ": timings that disagree with the judge are not reported"
        + graph_note,
        guard="clock",
    )


def _bulk_per_call(
    judge: Judge,
    calls: int,
    wire: list[Any],
    ref: list[Any],
    bufs: list[tuple[Any, TensorHandle]],
    rtt_ms: float,
    land_at: int,
) -> float:
    """``calls`` back-to-back forwards on the judge's clock (ms per call), one result checked.

    The checked call is the ``land_at``-th, a call the forward cannot tell from the others.
    """
    reply, wall_ms = ask_timed(
        judge, Bulk(calls=calls, inputs=wire, outputs=[h for _, h in bufs], land_at=land_at)
    )
    wall_ms -= rtt_ms
    display = judge.job.display
    if not isinstance(reply, BulkDone) or reply.failure is not None:
        raise StageFailure(
            ErrorClass.TIMING, VerdictStage.TIMING, f"{display}: the clock check failed"
        )
    cmp = _against(judge, ref, bufs)
    if not cmp.passed or reply.launches < calls:
        why = cmp.message if not cmp.passed else f"{reply.launches} launches in {calls} calls"
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: guard (c) back-to-back calls returned a wrong result or launched "
            f"nothing ({why})",
            guard="timed_result",
        )
    return wall_ms / calls


AUDIT_CLOCK_CALLS = 8
"""Back-to-back calls of an audited clock check whose fingerprints the judge verifies."""


def _audited_per_call(
    judge: Judge,
    prepared: Prepared,
    calls: int,
    wire: list[Any],
    bufs: list[tuple[Any, TensorHandle]],
    rng: random.Random,
) -> tuple[float, float]:
    """``(ms per call, overhead ms per call)`` of back-to-back calls the forward cannot skip.

    Each runs on its own perturbed copy of timing set 0 and is fingerprinted, and the judge
    verifies calls it draws after the reply (:func:`verify_drawn`).

    The unaudited check landed one call (``land_at``), which a forward can read from the
    loop's locals and compute alone (``PEEK_AT_KEPT_CALLS``); a cache keyed by input values
    would hit on unperturbed calls. The copies, perturbations and fingerprints cost the judge's
    clock too: the same loop without ``forward`` (``calibrate``), run first, when no code of the
    candidate's runs, is taken off.
    """
    seeds = [rng.getrandbits(62) for _ in range(calls)]
    print_seed = secrets.randbits(62)
    outputs = [h for _, h in bufs]
    display = judge.job.display

    def timed(calibrate: bool) -> tuple[float, BulkDone]:
        reply, wall_ms = ask_timed(
            judge,
            Bulk(
                calls=calls,
                inputs=wire,
                outputs=outputs,
                perturb=seeds,
                fingerprint_seed=print_seed,
                calibrate=calibrate,
            ),
        )
        if not isinstance(reply, BulkDone) or reply.failure is not None:
            why = reply.failure.message if isinstance(reply, BulkDone) and reply.failure else "?"
            raise StageFailure(
                ErrorClass.TIMING, VerdictStage.TIMING, f"{display}: the clock check failed: {why}"
            )
        return wall_ms, reply

    overhead_ms, _ = timed(True)
    wall_ms, reply = timed(False)
    if reply.launches < calls:
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{display}: guard (c) {reply.launches} launches in {calls} back-to-back calls",
            guard="no_launch",
        )

    def reference(i: int) -> list[Any]:
        return perturbed_reference(judge, prepared, 0, seeds[i])

    verify_drawn(
        judge,
        reply.fingerprints,
        calls,
        AUDIT_CLOCK_CALLS,
        reference,
        print_seed,
        "back-to-back call",
    )
    return max(0.0, wall_ms - overhead_ms) / calls, overhead_ms / calls


def _against(judge: Judge, ref: list[Any], bufs: list[tuple[Any, TensorHandle]]) -> Any:
    """Compare the outputs landed in the judge's buffers with a reference (flattened)."""
    got = [b for b, _ in bufs]
    return compare_outputs(
        ref if len(ref) > 1 else ref[0],
        got if len(got) > 1 else got[0],
        atol=judge.task.atol,
        rtol=judge.task.rtol,
        matmul=judge.matmul,
    )


def _disagrees(judge_ms: float, events_ms: float) -> bool:
    return judge_ms - events_ms > max(CLOCK_TOLERANCE * judge_ms, CLOCK_SLACK_MS)


def graph_check(
    judge: Judge,
    refill: tuple[Prepared, list[Any]],
    wire: list[Any],
    bufs: list[tuple[Any, TensorHandle]],
    calls: int,
    rtt_ms: float,
) -> tuple[float | None, str]:
    """Per-call time of ``calls`` CUDA-graph replays on the judge's clock, with fresh inputs.

    The candidate captures one forward; the judge then overwrites the captured inputs' values
    (its own shared copies) with a fresh input set and computes that set's reference; the
    replays must return it (a graph that recorded no work returns the old result). Returns
    ``(ms per replay, what was measured)``, or ``(None, why)`` when the forward cannot be
    captured.
    """
    import torch

    prepared, shared = refill
    outputs = [h for _, h in bufs]
    # both through ask_timed, like every request that runs forward for the clock: the capture's
    # warm-up and capture run it, and a thread either leaves is refused there (``threads``)
    reply, _ = ask_timed(judge, Bulk(calls=1, inputs=wire, outputs=outputs, graph="capture"))
    if not isinstance(reply, BulkDone) or reply.failure is not None:
        why = reply.failure.message if isinstance(reply, BulkDone) and reply.failure else "?"
        return None, f" (no CUDA-graph check: {why})"
    fresh = build_inputs(prepared.module, judge.device, trial_seed(judge.job.seed, "graph", 0))
    ref = flatten_outputs(judge.reference(prepared, fresh)[0])[1]
    copy_into(shared, fresh)
    torch.cuda.synchronize()
    reply, wall_ms = ask_timed(
        judge, Bulk(calls=calls, inputs=wire, outputs=outputs, graph="replay")
    )
    wall_ms -= rtt_ms
    if not isinstance(reply, BulkDone) or reply.failure is not None:
        why = reply.failure.message if isinstance(reply, BulkDone) and reply.failure else "?"
        return None, f" (no CUDA-graph check: {why})"
    cmp = _against(judge, ref, bufs)
    if not cmp.passed:
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.TIMING,
            f"{judge.job.display}: replayed from a CUDA graph after the judge changed the "
            f"inputs, forward returned a wrong result ({cmp.message}): its work is not in "
            "its kernels",
            guard="timed_result",
        )
    per_replay = wall_ms / calls
    return per_replay, (
        f" (CUDA-graph replays: {per_replay:.4f} ms per call on the judge's clock over {calls}, "
        f"{reply.event_ms / calls:.4f} ms by the candidate's events)"
    )
