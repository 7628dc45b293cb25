"""The candidate's side of the timed path and its collector passes
(``upskills/verify/candidate_timing.py``) without a GPU: where CUDA is needed, the timer is
stood in for by one that loads the first call's inputs, as the real one does before each call.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from upskills.verify import timing
from upskills.verify.candidate_timing import TimingRequests
from upskills.verify.guards import LaunchCounter
from upskills.verify.library_snapshot import live_threads, threads_since
from upskills.verify.modes import mode_depths
from upskills.verify.protocol import Scalar, TimeRun
from upskills.verify.verdict import VerdictStage
from upskills.verify.worker import StageFailure


class _Host(TimingRequests):
    """The timing mixin with a real launch counter and a model never called."""

    path = display = "candidate.py"
    device = "cpu"
    model = graph = None

    def __init__(self) -> None:
        self.counter = LaunchCounter()
        self.watch = SimpleNamespace(
            counter=self.counter, modes=mode_depths(), thread_starts=0, threads=live_threads()
        )

    def _sync(self) -> None:
        return None


class _Work:
    """Cyclic garbage whose finalizer runs ``work`` (the candidate's code in a pass)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.me, self.work = self, work

    def __del__(self) -> None:
        self.work()


@pytest.fixture
def collector_off() -> Iterator[None]:
    """As in the candidate's process: cycles are freed only by the verifier's passes."""
    was_on = gc.isenabled()
    gc.disable()
    yield
    if was_on:
        gc.enable()


def _torch_op() -> None:
    import torch

    torch.ones(4).add_(1)


@pytest.mark.usefixtures("collector_off")
def test_a_pass_whose_finalizer_does_torch_work_is_refused():
    _Work(_torch_op)
    with pytest.raises(StageFailure) as failure:
        _Host()._collect(VerdictStage.CORRECTNESS)
    assert failure.value.guard == "library_patch"
    assert "collector pass" in failure.value.message
    assert "2 torch op(s) (add_, ones), 0 kernel launch" in failure.value.message


@pytest.mark.usefixtures("collector_off")
def test_a_pass_whose_finalizer_launches_is_refused():
    host = _Host()
    launch = host.counter._wrap(lambda *args: None)  # a launch the counter sees, no torch op
    _Work(launch)
    with pytest.raises(StageFailure, match="0 torch op\\(s\\), 1 kernel launch"):
        host._collect(VerdictStage.TIMING, young=True)


@pytest.mark.usefixtures("collector_off")
def test_a_pass_whose_finalizers_do_no_work_is_quiet():
    freed: list[int] = []
    _Work(lambda: freed.append(1))
    _Host()._collect(VerdictStage.CORRECTNESS)
    assert freed == [1]


@pytest.mark.usefixtures("collector_off")
def test_a_guard_failing_while_timed_calls_load_keeps_its_guard(monkeypatch):
    """Until 2026-12-04 ``time_run`` wrapped every exception of the timer, a guard's too, as
    "timing failed" (a runtime error, no guard): the verdict failed, but said the wrong thing."""

    def one_load(fn: Any, before_each: Any, **kwargs: Any) -> Any:
        _Work(_torch_op)  # after time_run's own full pass: the young pass in load frees it
        before_each(0)
        raise AssertionError("the guard in load did not fire")

    monkeypatch.setattr(timing, "time_cuda", one_load)
    req = TimeRun(input_sets=[[Scalar(value=1.0)]], order=[0], keep=[], max_reps=1, target_ms=1.0)
    with pytest.raises(StageFailure) as failure:
        _Host().time_run(req)
    assert failure.value.guard == "library_patch", failure.value.message
    assert "collector pass" in failure.value.message


class _Event:
    """torch.cuda.Event stood in for on CPU."""

    def __init__(self, **_: Any) -> None:
        pass

    def record(self) -> None:
        return None

    def elapsed_time(self, other: Any) -> float:
        return 0.0


@pytest.mark.usefixtures("collector_off")
@pytest.mark.timeout(0)  # pytest-timeout's interval timer would read as the candidate's own
@pytest.mark.parametrize("perturb", [[], [7]], ids=["plain", "audited"])
def test_a_forward_failing_in_back_to_back_calls_is_the_candidates_failure(monkeypatch, perturb):
    """Until the thirty-third session an exception of ``forward`` in the clock check's calls
    left the candidate's process (exit 70, "segfault, abort or fatal error", the error's own
    line lost): two cheats' out-of-memory errors on an H100 said nothing more."""
    import torch

    from upskills.verify.protocol import Bulk

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    host = _Host()

    def forward(*args: Any) -> Any:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB")

    host.model = forward
    req = Bulk(calls=3, inputs=[Scalar(value=1.0)], outputs=[], perturb=perturb)
    with pytest.raises(StageFailure) as failure:
        host.bulk(req)
    assert failure.value.stage == VerdictStage.TIMING
    assert "timing failed" in failure.value.message
    assert "OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB" in (
        failure.value.message
    )


@pytest.mark.usefixtures("collector_off")
@pytest.mark.timeout(0)  # pytest-timeout's interval timer would read as the candidate's own
@pytest.mark.parametrize("perturb", [[], [7]], ids=["plain", "audited"])
def test_a_thread_a_timed_forward_leaves_running_is_in_the_reply(monkeypatch, perturb):
    """The clock check's reply counts the threads alive beyond the census taken before the
    import (and those the watch saw start, ``thread_starts``): the judge refuses any."""
    import threading

    import torch

    from upskills.verify.protocol import Bulk

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    host = _Host()
    hold = threading.Event()
    started: list[threading.Thread] = []

    def forward(x: Any) -> Any:
        if not started:
            started.append(threading.Thread(target=hold.wait, args=(10,), daemon=True))
            started[0].start()
        return torch.ones(4)

    host.model = forward
    try:
        done = host.bulk(Bulk(calls=3, inputs=[Scalar(value=1.0)], outputs=[], perturb=perturb))
        assert done.threads == 1
        host.watch.thread_starts += 2  # as the watch's wrapper counts two started and ended
        assert threads_since(host.watch, 0) == 3
    finally:
        hold.set()
        started[0].join(10)
    assert host.bulk(Bulk(calls=3, inputs=[Scalar(value=1.0)], outputs=[])).threads == 0


def test_every_way_to_start_a_thread_is_counted_whenever_it_starts():
    """``wrap_thread_starts`` counts each start once, in a trial (``active``) or not; run in a
    child process, since it wraps ``threading`` for good."""
    import subprocess
    import sys

    code = """
import _thread, threading, time
from types import SimpleNamespace
from upskills.verify.library_snapshot import wrap_thread_starts
w = SimpleNamespace(thread_starts=0, threads_started=0, active=False)
wrap_thread_starts(w)
t = threading.Thread(target=lambda: None); t.start(); t.join()
_thread.start_new_thread(lambda: None, ())
getattr(threading, '_start_new_thread', _thread.start_new_thread)(lambda: None, ())  # to 3.12
w.active = True
t = threading.Thread(target=lambda: None); t.start(); t.join()
time.sleep(0.2)
print(w.thread_starts, w.threads_started)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["4", "1"], out.stdout + out.stderr


@pytest.mark.usefixtures("collector_off")
@pytest.mark.timeout(0)  # pytest-timeout's interval timer would read as the candidate's own
def test_the_calibration_runs_no_finalizer_of_the_candidates(monkeypatch):
    """The judge takes the calibration's time off the audited calls': a finalizer that ran in
    it (a sleeping ``__del__`` left by the last calls) would make the calls read faster. It
    runs in the timed pass's collector pass instead, where it can only make them slower."""
    import torch

    from upskills.verify.protocol import Bulk

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    host = _Host()
    host.model = lambda x: torch.ones(4)
    freed: list[str] = []
    _Work(lambda: freed.append("finalizer"))
    req = Bulk(calls=2, inputs=[Scalar(value=1.0)], outputs=[], perturb=[7], calibrate=True)
    host.bulk(req)
    assert freed == []
    host.bulk(req.model_copy(update={"calibrate": False}))
    assert freed == ["finalizer"]
