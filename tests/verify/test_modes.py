"""The process-state comparison of guard (d), on its own (``upskills/verify/modes.py``).

The cheats that need it run end to end in ``test_adversarial.py``; here each kind of state is
changed in this process and put back, and the comparison must see it.
"""

from __future__ import annotations

import gc
import signal
import sys
import weakref

import pytest

from upskills.verify.modes import collect_garbage, mode_depths, signal_handlers

# pytest-timeout's default method arms ITIMER_REAL for each test, and the comparison reads the
# interval timers (a candidate's armed timer is a cheat): a watchdog thread leaves them alone.
pytestmark = pytest.mark.timeout(600, method="thread")


class _EqualToAll:
    """A hook whose ``__eq__`` says yes to everything: ``None == hook`` asks it."""

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return True

    def __call__(self, *args: object) -> None:
        return None

    def find_spec(self, *args: object) -> None:
        return None


def test_an_untouched_process_compares_equal():
    assert mode_depths() == mode_depths()
    assert signal_handlers() == signal_handlers()


def test_a_signal_handler_equal_to_all_is_seen():
    before = signal_handlers()
    old = signal.signal(signal.SIGUSR1, _EqualToAll())
    try:
        assert signal_handlers() != before
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert signal_handlers() == before


@pytest.mark.parametrize("hooks", ["meta_path", "path_hooks"])
def test_an_import_hook_is_seen(hooks):
    before = mode_depths()
    listed: list[object] = getattr(sys, hooks)
    listed.insert(0, _EqualToAll())
    try:
        now = mode_depths()
        assert now != before
        assert "import" in now.describe(before)
    finally:
        del listed[0]
    assert mode_depths() == before


def test_a_profile_hook_equal_to_all_is_seen():
    before = mode_depths()
    sys.setprofile(_EqualToAll())
    try:
        now = mode_depths()
    finally:
        sys.setprofile(None)
    assert now != before and "setprofile" in now.describe(before)


class _Node:
    """A cycle's member that a weak reference can watch."""

    def __init__(self) -> None:
        self.me = self


@pytest.mark.parametrize("promoted", [0, 2])
def test_the_collector_frees_a_cycle_however_old(promoted):
    """With the collector off, ``collect_garbage()`` frees a cycle that outlived young passes.

    Without the full pass, a cycle promoted to the oldest generation stayed until the exit: one
    made in each timed call of a 128M-element add filled the H200 (twentieth device session).
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        node = _Node()
        ref = weakref.ref(node)
        for _ in range(promoted):  # alive through young passes: promoted out of their reach
            collect_garbage(young=True)
        del node
        assert ref() is not None  # a cycle: only the collector frees it
        collect_garbage()
        assert ref() is None
    finally:
        if was_on:
            gc.enable()


def test_a_collector_callback_is_seen():
    """``collect_garbage`` runs the collector's callbacks: they are hooks, compared by id."""
    before = mode_depths()
    gc.callbacks.append(_EqualToAll())
    try:
        now = mode_depths()
    finally:
        gc.callbacks.pop()
    assert now != before and "gc.callbacks" in now.describe(before)
    assert mode_depths() == before
