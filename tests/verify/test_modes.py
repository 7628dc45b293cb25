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

from upskills.verify.modes import (
    collect_garbage,
    interpreter_hooks,
    mode_depths,
    monitoring_callbacks,
    signal_handlers,
)

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


class _Monitoring:
    """``sys.monitoring``'s callback table as Python 3.12 keeps it, for a 3.11 process.

    ``register_callback`` returns the callback it replaces; one event refuses a callback of its
    own, as some do by version.
    """

    class events:  # noqa: N801 - the real namespace's name
        NO_EVENTS = 0
        PY_START = 1
        PY_RETURN = 2
        CALL = 4
        BRANCH = 8
        LINES_AND_CALLS = 5  # not one event: never read

    def __init__(self) -> None:
        self.table: dict[tuple[int, int], object] = {}

    def register_callback(self, tool: int, event: int, func: object) -> object:
        if event == self.events.BRANCH:
            raise ValueError("invalid event")
        old = self.table.pop((tool, event), None)
        if func is not None:
            self.table[(tool, event)] = func
        return old


def test_a_monitoring_callback_is_seen_and_the_reading_puts_every_callback_back():
    """On 3.12 a callback on local events, or on a freed tool, shows in no global read."""
    fake = _Monitoring()
    kept = _EqualToAll()
    fake.register_callback(0, fake.events.PY_RETURN, kept)
    before = monitoring_callbacks(fake)
    assert len(before) == 6 * 3  # tools x the three single events that take a callback
    assert fake.table == {(0, fake.events.PY_RETURN): kept}  # read, and put back
    assert monitoring_callbacks(fake) == before
    fake.register_callback(3, fake.events.PY_START, _EqualToAll())
    assert monitoring_callbacks(fake) != before


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is Python 3.12+")
def test_a_freed_monitoring_tool_with_events_and_a_callback_is_seen():
    """``free_tool_id`` leaves a tool's events and callbacks in force on 3.12 (the docs say so),
    with ``get_tool`` answering ``None``."""
    mon = sys.monitoring  # pyright: ignore[reportAttributeAccessIssue]
    tool = next(t for t in range(6) if mon.get_tool(t) is None)
    hooks, callbacks = interpreter_hooks(), monitoring_callbacks()
    mon.use_tool_id(tool, "cheat")
    mon.register_callback(tool, mon.events.PY_START, _EqualToAll())
    mon.set_events(tool, mon.events.PY_START)
    mon.free_tool_id(tool)
    try:
        assert mon.get_tool(tool) is None
        assert interpreter_hooks() != hooks
        assert monitoring_callbacks() != callbacks
    finally:
        mon.use_tool_id(tool, "cleanup")
        mon.set_events(tool, mon.events.NO_EVENTS)
        mon.register_callback(tool, mon.events.PY_START, None)
        mon.free_tool_id(tool)
    assert interpreter_hooks() == hooks and monitoring_callbacks() == callbacks
