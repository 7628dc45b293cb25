"""The timed speed must be explained by the GPU time of the late trial's kernels.

The rule's GPU half (CUPTI's kernel spans, a forward that switches when not watched) is tested
on the GPU in ``test_adversarial.py``; here, the arithmetic on spans and the judge's decision.
"""

from __future__ import annotations

import types

import pytest

from upskills.verify.judge import JudgeResult
from upskills.verify.shadow_ops import busy_us, gpu_busy_ms
from upskills.verify.timing import summarize
from upskills.verify.verdict import VariantResult
from upskills.verify.watched_speed import (
    WATCHED_SHARE,
    check_watched_speed,
    trial_flush,
    unexplained_speed,
)
from upskills.verify.worker import StageFailure


def _event(device: str, start_us: float, end_us: float) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        device_type=types.SimpleNamespace(name=device),
        time_range=types.SimpleNamespace(start=start_us, end=end_us),
    )


def test_busy_time_is_the_union_of_the_gpu_spans_not_their_sum():
    # two kernels overlapping on two streams, one after a gap, one inside another
    assert busy_us([(0.0, 10.0), (5.0, 15.0), (20.0, 25.0)]) == 20.0
    assert busy_us([(0.0, 10.0), (2.0, 3.0)]) == 10.0
    assert busy_us([]) == 0.0


def test_only_gpu_events_count_and_none_means_none_were_recorded():
    events = [
        _event("CPU", 0.0, 1000.0),
        _event("CUDA", 100.0, 150.0),
        _event("CUDA", 140.0, 200.0),
    ]
    assert gpu_busy_ms(events) == pytest.approx(0.1)
    assert gpu_busy_ms([_event("CPU", 0.0, 1000.0)]) is None


def test_a_timed_median_well_under_the_watched_kernels_time_is_unexplained():
    why = unexplained_speed(0.05, 1.0)
    assert why is not None and "0.05x" in why
    assert unexplained_speed(WATCHED_SHARE * 1.0 + 0.001, 1.0) is None
    assert unexplained_speed(1.3, 1.0) is None  # slower when timed: launch gaps, a flushed L2
    assert unexplained_speed(0.05, None) is None  # nothing recorded (CPU): nothing to judge


def test_launch_bound_calls_get_a_few_microseconds_of_slack():
    assert unexplained_speed(0.0005, 0.002) is None
    assert unexplained_speed(0.0005, 0.010) is not None


def _trial(busy: float | None, passed: bool = True) -> VariantResult:
    return VariantResult(variant="main", seed=0, passed=passed, gpu_busy_ms=busy)


def test_the_late_trials_busy_time_is_the_one_judged():
    # the earlier trials' busy times are not recorded (no CUPTI before the timing); a stray
    # one in the verdict is not what is judged
    result = JudgeResult(passed=True, variants=[_trial(0.01)], timing=summarize([0.6, 0.6]))
    check_watched_speed(result, "k.py", _trial(0.6))
    assert result.timing is not None and result.timing.watched_busy_ms == 0.6
    result.timing = summarize([0.1, 0.1, 0.1])
    with pytest.raises(StageFailure) as refused:
        check_watched_speed(result, "k.py", _trial(0.6))
    assert refused.value.guard == "timed_result"
    assert "not watched" in str(refused.value) and "0.6000 ms" in str(refused.value)


def test_only_a_gpu_checks_late_trial_records_the_gpu_kernels():
    """CUPTI stays attached to a process once it has traced: an earlier trial that recorded
    kernels would put every timed call after it under CUPTI."""
    assert trial_flush("cuda", "write", late=True) == "write"
    assert trial_flush("cuda:1", "read", late=True) == "read"
    assert trial_flush("cuda", "write", late=False) is None
    assert trial_flush("cpu", "write", late=True) is None


def test_a_timed_check_without_a_watched_busy_time_says_why():
    none = JudgeResult(passed=True, variants=[_trial(None)], timing=summarize([0.1]))
    check_watched_speed(none, "k.py", None)
    assert none.timing is not None and none.timing.watched_busy_ms is None
    assert any("late_trial off" in note for note in none.notes)
    silent = JudgeResult(passed=True, variants=[_trial(None)], timing=summarize([0.1]))
    check_watched_speed(silent, "k.py", _trial(None))
    assert any("recorded no GPU activity" in note for note in silent.notes)
    cpu = JudgeResult(passed=True, variants=[_trial(None)])
    check_watched_speed(cpu, "k.py", _trial(None))  # no timing (CPU): nothing to say
    assert cpu.notes == []


def test_the_judges_own_gpu_memory_running_out_is_said_first():
    """The thirty-second session's re-check of 38_L1Norm_ on an H100 ended in a bare internal
    error; the judge's own out-of-memory now says what it is, above its traceback."""
    from upskills.verify.worker import format_internal_error

    def raised(exc: Exception) -> Exception:
        try:
            raise exc
        except Exception as caught:  # noqa: BLE001 - a traceback to format
            return caught

    oom = format_internal_error(raised(RuntimeError("CUDA out of memory. Tried to allocate 8 GiB")))
    assert oom.startswith("the judge itself ran out of GPU memory")
    assert "Traceback" in oom and "Tried to allocate 8 GiB" in oom
    other = format_internal_error(raised(ValueError("a bug")))
    assert other.startswith("Traceback") and "ValueError: a bug" in other


def test_the_checks_text_shows_the_watched_kernels_time():
    from upskills._cli.check import _format_verdict  # pyright: ignore[reportPrivateUsage]
    from upskills.verify.verdict import Verdict

    timing = summarize([0.5, 0.5, 0.6]).model_copy(update={"watched_busy_ms": 0.4})
    verdict = Verdict(
        task="t",
        task_hash="h",
        candidate_hash="c",
        device="cuda",
        passed=True,
        variants=[_trial(None), _trial(None)],
        timing=timing,
    )
    text = _format_verdict(verdict)
    assert "watched kernels: 0.4000 ms" in text and "1.25x it" in text
    cpu = verdict.model_copy(update={"timing": None})
    assert "watched" not in _format_verdict(cpu)
