"""The judge's clock check, driven by a stand-in candidate process whose bulk calls take real
wall time (``time.sleep``): a one-off delay is forgiven on the repeat, a steady one is not."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import torch

from upskills.verify.judge_timing import clock_check
from upskills.verify.protocol import Ack, BulkDone, Ping, TensorHandle
from upskills.verify.verdict import ErrorClass, Timing
from upskills.verify.worker import StageFailure


class FakeJudge:
    """Answers Ping at once and Bulk after ``delays_ms`` (one per bulk, in order) plus the
    calls' claimed time; the outputs land right."""

    def __init__(
        self, per_call_ms: float, delays_ms: list[float], released: int = 0, threads: int = 0
    ) -> None:
        self.per_call_ms = per_call_ms
        self.released = released
        self.threads = threads
        self.delays_ms = list(delays_ms)
        self.bulks = 0
        self.clock = SimpleNamespace(add=lambda *_: None)
        self.job = SimpleNamespace(display="candidate.py", seed=0, audit_clock_calls=False)
        self.result = SimpleNamespace(notes=[])
        self.task = SimpleNamespace(atol=1e-5, rtol=1e-5)
        self.matmul = False
        self.device = "cpu"

    def ask(self, message):  # noqa: ANN001, ANN201 - the protocol's union
        if isinstance(message, Ping):
            return Ack()
        self.bulks += 1
        # the checked call is one of the bulk's, chosen by the judge, not always the last
        assert message.land_at is not None and 0 <= message.land_at < message.calls
        delay = self.delays_ms.pop(0) if self.delays_ms else 0.0
        time.sleep((delay + self.per_call_ms * message.calls) / 1000.0)
        return BulkDone(
            event_ms=self.per_call_ms * message.calls,
            launches=message.calls,
            released_bytes=self.released,
            threads=self.threads,
        )


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, mean_ms=ms, reps=10, spread=0.0)


def _run(judge: FakeJudge, events_ms: float) -> None:
    out = torch.ones(4)
    handle = TensorHandle(dtype="float32", shape=[4], stride=[1], nbytes=16)
    clock_check(judge, _timing(events_ms), [], [out], [(out.clone(), handle)])  # type: ignore[arg-type]


def test_an_honest_candidate_passes_in_one_bulk() -> None:
    judge = FakeJudge(per_call_ms=3.0, delays_ms=[])
    _run(judge, 3.0)
    assert judge.bulks == 1 and not judge.result.notes


def test_a_one_off_delay_is_forgiven_on_the_repeat_and_noted() -> None:
    # 20 calls of 3 ms plus a 200 ms first-time cost: 13 ms per call, as the H200 once saw
    judge = FakeJudge(per_call_ms=3.0, delays_ms=[200.0])
    _run(judge, 3.0)
    assert judge.bulks == 2
    assert any("clock check repeated" in n for n in judge.result.notes), judge.result.notes


def test_the_wait_for_memory_the_candidate_gave_back_is_not_on_the_judges_clock(
    monkeypatch,
) -> None:
    """The repeat waits 0.15 s for the driver first: 7.5 ms a call if the clock counted it."""
    from upskills.verify import clearing

    monkeypatch.setattr(clearing, "CLEARING", clearing.Clearing())
    judge = FakeJudge(per_call_ms=3.0, delays_ms=[200.0], released=int(30e9))
    t0 = time.monotonic()
    _run(judge, 3.0)
    assert judge.bulks == 2 and time.monotonic() - t0 >= 0.15
    assert any("clock check repeated" in n for n in judge.result.notes), judge.result.notes


def test_a_thread_beside_the_back_to_back_calls_is_refused() -> None:
    """A thread started while timed, or alive since the import, could slow the audited check's
    calibration pass alone and shrink the judge's estimate of the calls: the reply's count
    refuses the check whatever the clock reads (here it agrees with the events)."""
    judge = FakeJudge(per_call_ms=3.0, delays_ms=[], threads=1)
    with pytest.raises(StageFailure) as failure:
        _run(judge, 3.0)
    assert failure.value.guard == "threads" and judge.bulks == 1
    assert "1 thread(s) started while timed" in failure.value.message


def test_a_thread_the_cuda_graphs_capture_leaves_is_refused() -> None:
    """The graph check's capture runs forward (its warm-up and the capture): a thread it leaves
    is refused as in every other timed request, before any replay is timed."""
    from upskills.verify.judge_timing import graph_check

    judge = SimpleNamespace(
        device="cpu",
        clock=SimpleNamespace(add=lambda *_: None),
        job=SimpleNamespace(display="candidate.py"),
        ask=lambda message: BulkDone(launches=1, threads=1),
    )
    with pytest.raises(StageFailure) as failure:
        graph_check(judge, (None, []), [], [], calls=5, rtt_ms=0.0)  # type: ignore[arg-type]
    assert failure.value.guard == "threads"


def test_events_that_under_report_every_time_are_a_timing_verdict() -> None:
    judge = FakeJudge(per_call_ms=3.0, delays_ms=[])
    with pytest.raises(StageFailure) as err:
        _run(judge, 1.0)  # the events claim a third of the real time, on both bulks
    assert judge.bulks == 2
    assert err.value.error_class == ErrorClass.TIMING and err.value.guard == "clock"


def test_a_small_kernel_whose_events_see_none_of_it_is_a_timing_verdict() -> None:
    """A 0.05 ms kernel run whole on a private stream: the events see ~3 us. The judge's old
    0.1 ms slack let the whole call hide (0.05 - 0.003 < 0.1); the new one does not."""
    judge = FakeJudge(per_call_ms=0.05, delays_ms=[])
    with pytest.raises(StageFailure) as err:
        _run(judge, 0.003)
    assert err.value.error_class == ErrorClass.TIMING and err.value.guard == "clock"


def test_an_honest_small_kernel_passes_and_its_clock_time_is_recorded() -> None:
    judge = FakeJudge(per_call_ms=0.05, delays_ms=[])
    timing = _timing(0.05)
    out = torch.ones(4)
    handle = TensorHandle(dtype="float32", shape=[4], stride=[1], nbytes=16)
    clock_check(judge, timing, [], [out], [(out.clone(), handle)])  # type: ignore[arg-type]
    # 200 calls slept as one: the judge's per-call time is the claimed one, give or take the
    # sleep's own overhead spread over the calls
    assert timing.clock_ms is not None and 0.05 <= timing.clock_ms < 0.05 + 0.015


# The audited clock check (judge_timing._audited_per_call): every back-to-back call on its own
# perturbed inputs, fingerprinted; a calibration loop without forward first, taken off.


def _reference(seed: int) -> list[torch.Tensor]:
    from upskills.verify.perturb import perturb_inputs

    x = torch.linspace(-3.0, 3.0, 4096)
    perturb_inputs([x], seed)
    return [x * 2.0]


class AuditedJudge(FakeJudge):
    """A stand-in for the audited loop: ``overhead_ms`` a call for the copies, perturbations
    and fingerprints, ``per_call_ms`` more for forward; with ``skip``, every call after the
    first returns the first's (stale) result."""

    def __init__(self, per_call_ms: float, overhead_ms: float, skip: bool = False) -> None:
        super().__init__(per_call_ms, [])
        self.job.audit_clock_calls = True
        self.overhead_ms = overhead_ms
        self.skip = skip
        self.calibrations = 0

    def ask(self, message):  # noqa: ANN001, ANN201 - the protocol's union
        from upskills.verify.fingerprint import fingerprints

        if isinstance(message, Ping):
            return Ack()
        assert message.perturb and message.land_at is None and message.fingerprint_seed is not None
        start = time.monotonic()
        per_call = self.overhead_ms + (0.0 if message.calibrate else self.per_call_ms)
        prints = []
        for i, seed in enumerate(message.perturb[: message.calls]):
            out = _reference(message.perturb[0] if self.skip and i > 0 else seed)
            prints.append(fingerprints(out, message.fingerprint_seed, i).tolist())
        # the stand-in's own work is part of the time it claims, not on top of it
        time.sleep(max(0.0, per_call * message.calls / 1000.0 - (time.monotonic() - start)))
        if message.calibrate:
            self.calibrations += 1
            return BulkDone(fingerprints=prints)
        self.bulks += 1
        return BulkDone(launches=message.calls, fingerprints=prints)


@pytest.fixture
def audited(monkeypatch):  # noqa: ANN201
    from upskills.verify import judge_timing

    monkeypatch.setattr(
        judge_timing, "perturbed_reference", lambda judge, prepared, pick, seed: _reference(seed)
    )


def _run_audited(judge: FakeJudge, events_ms: float) -> Timing:
    out = torch.ones(4)
    handle = TensorHandle(dtype="float32", shape=[4], stride=[1], nbytes=16)
    timing = _timing(events_ms)
    refill = (SimpleNamespace(), [])
    clock_check(judge, timing, [], [out], [(out.clone(), handle)], refill)  # type: ignore[arg-type]
    return timing


def test_an_audited_clock_check_takes_the_measured_overhead_off(audited) -> None:  # noqa: ANN001
    """50 ms a call of copies and fingerprints around a 10 ms call: the judge's clock says
    ~10 ms, which agrees with the events (without the calibration it would say 60 ms). Long
    calls: the stand-in's own fingerprints (a few ms on a busy machine) stay inside them."""
    judge = AuditedJudge(per_call_ms=10.0, overhead_ms=50.0)
    timing = _run_audited(judge, 10.0)
    assert judge.calibrations == 1 and judge.bulks == 1
    # ~10, give or take the sleeps' overshoot on either side; 60 without the calibration
    assert timing.clock_ms is not None and 8.5 <= timing.clock_ms < 13.5


def test_an_audited_clock_check_sees_through_forged_events(audited) -> None:  # noqa: ANN001
    """Events that claim a quarter of the real time (a forward that rewrote the timer's list):
    every back-to-back call is computed, so the judge's clock says the real time."""
    judge = AuditedJudge(per_call_ms=40.0, overhead_ms=10.0)
    with pytest.raises(StageFailure) as err:
        _run_audited(judge, 10.0)
    assert err.value.guard == "clock" and "perturbed inputs" in err.value.message


def test_an_audited_clock_check_fails_calls_that_were_not_computed(audited) -> None:  # noqa: ANN001
    judge = AuditedJudge(per_call_ms=10.0, overhead_ms=5.0, skip=True)
    with pytest.raises(StageFailure) as err:
        _run_audited(judge, 10.0)
    assert err.value.guard == "timed_result" and "back-to-back calls drawn" in err.value.message
