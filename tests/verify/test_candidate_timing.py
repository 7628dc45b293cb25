"""The candidate's timed path (``upskills/verify/candidate_timing.py``) without a GPU: the
CUDA timer is stood in for by one that loads the first call's inputs, as the real one does
before each call, so what ``time_run`` makes of a guard's failure there can be seen."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any

import pytest

from upskills.verify import timing
from upskills.verify.candidate_timing import TimingRequests
from upskills.verify.modes import mode_depths
from upskills.verify.protocol import Scalar, TimeRun
from upskills.verify.worker import StageFailure


class _Host(TimingRequests):
    """The timing mixin with a watch that counts no launches and a model never called."""

    path = display = "candidate.py"
    model = graph = None

    def __init__(self) -> None:
        state = SimpleNamespace(launches=0)
        self.watch = SimpleNamespace(counter=SimpleNamespace(state=state), modes=mode_depths())

    def _sync(self) -> None:
        return None


class _Work:
    """Cyclic garbage whose finalizer runs a torch op (the candidate's code in a pass)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        import torch

        torch.ones(4).add_(1)


def test_a_guard_failing_while_timed_calls_load_keeps_its_guard(monkeypatch):
    """Until 2026-12-04 ``time_run`` wrapped every exception of the timer, a guard's too, as
    "timing failed" (a runtime error, no guard): the verdict failed, but said the wrong thing."""

    def one_load(fn: Any, before_each: Any, **kwargs: Any) -> Any:
        _Work()  # after time_run's own full pass: the young pass in load frees it
        before_each(0)
        raise AssertionError("the guard in load did not fire")

    monkeypatch.setattr(timing, "time_cuda", one_load)
    req = TimeRun(input_sets=[[Scalar(value=1.0)]], order=[0], keep=[], max_reps=1, target_ms=1.0)
    was_on = gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(StageFailure) as failure:
            _Host().time_run(req)
    finally:
        if was_on:
            gc.enable()
    assert failure.value.guard == "library_patch", failure.value.message
    assert "collector pass" in failure.value.message
