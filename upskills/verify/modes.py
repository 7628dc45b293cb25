"""Guard (d) over torch's mode stacks: ``forward`` finds them as they were and leaves them so.

A torch function or dispatch mode left active runs on every torch call the process makes
afterwards, the verifier's own among them (copying an output into the judge's buffer,
fingerprinting it), so a forward could move its work there: out of the call, and on a GPU out
of the events (``docs/design/verifier.md``, "A forward that leaves a torch mode behind").

The thread's local dispatch keys count too. ``enable_python_dispatcher()`` left entered adds
``PythonDispatcher`` to them, and every op then runs the Python kernels of its ``py_kernels``,
one a candidate put on ``aten::copy_`` with ``py_impl`` among them: no mode is pushed and the
C++ table is unchanged (``PYTHON_DISPATCHER`` in ``tests/verify/test_adversarial.py``).

So do the interpreter's hooks. A profile function (``sys.setprofile``) set at import runs on
every call the process makes, the verifier's own among them: one that filled forward's output
at the first C call after ``forward`` passed every CPU trial (``PROFILE_HOOK``). Compared: the
thread's profile and trace functions, and on Python 3.12+ the ``sys.monitoring`` tools in use
with their events.

And the collector. A ``__del__`` of cyclic garbage made in ``forward`` runs at the collector's
next pass, which the candidate can steer (``gc.set_threshold(1)``, and a finalizer that makes
a fresh cycle while the op recorder is still there): one filled forward's output between the
call and the copy, and passed every CPU trial (``GC_FINALIZER``). The candidate's process runs
with the collector off (:func:`quiet_collector` before the import, compared with the hooks)
and collects at :func:`collect_garbage`, before a trial's call, each timed call and a timing
request, where no output of the candidate waits to be copied.

Every hook and handler is compared by identity (``id``), never with ``==``: ``None == hook``
asks the hook's own ``__eq__``, and a profile hook whose class answered ``True`` passed every
CPU trial with the static check out of the way (``PROFILE_HOOK_EQUAL_TO_ALL``, 2026-12-04).
The import system's hooks count too: a finder put on ``sys.meta_path`` runs at the next import
of a module not yet loaded, the verifier's own among them. So do the collector's callbacks
(``gc.callbacks``): :func:`collect_garbage` runs them, outside forward and the op recorder, and
one added at import added a trial's inputs with ``torch.add`` before each call and passed every
CPU trial with the static check out of the way (``GC_CALLBACK``, 2026-12-04).
"""

from __future__ import annotations

import gc
import signal
import sys
from typing import Any, NamedTuple

from upskills.verify.verdict import ErrorClass, VerdictStage
from upskills.verify.worker import StageFailure


class ModeState(NamedTuple):
    """Torch's mode stacks and this thread's local dispatch keys (compared with ``==``)."""

    functions: int
    dispatch: int
    included: Any
    """``torch._C.DispatchKeySet`` of keys this thread adds (``PythonDispatcher`` ...)."""
    excluded: Any
    """Keys this thread skips (``_AutoDispatchBelowAutograd`` left entered adds Autograd's)."""
    hooks: tuple[Any, ...]
    """The interpreter's hooks by identity: profile and trace functions, the collector and its
    callbacks, ``sys.monitoring`` tools, interval timers, the import system's finders and path
    hooks."""

    def describe(self, then: ModeState) -> str:
        """What moved from ``then`` to this state, in words."""
        parts: list[str] = []
        if (self.functions, self.dispatch) != (then.functions, then.dispatch):
            parts.append(
                f"function modes {then.functions} -> {self.functions}, dispatch modes "
                f"{then.dispatch} -> {self.dispatch}"
            )
        if self.included != then.included:
            parts.append(f"dispatch keys included {then.included} -> {self.included}")
        if self.excluded != then.excluded:
            parts.append(f"dispatch keys excluded {then.excluded} -> {self.excluded}")
        if self.hooks != then.hooks:
            parts.append(
                "interpreter hooks (setprofile, settrace, monitoring, gc, gc.callbacks, itimer, "
                "import) changed"
            )
        return "; ".join(parts)


def mode_depths() -> ModeState:
    """How many torch function and dispatch modes are active, and the thread's local keys."""
    import torch

    c = torch._C  # pyright: ignore[reportPrivateUsage]
    return ModeState(
        c._len_torch_function_stack(),  # pyright: ignore[reportPrivateUsage]
        c._len_torch_dispatch_stack(),  # pyright: ignore[reportPrivateUsage]
        c._dispatch_tls_local_include_set(),  # pyright: ignore[reportPrivateUsage]
        c._dispatch_tls_local_exclude_set(),  # pyright: ignore[reportPrivateUsage]
        interpreter_hooks(),
    )


def interpreter_hooks() -> tuple[Any, ...]:
    """Profile and trace hooks, the collector and its callbacks, monitoring tools, import hooks.

    Python objects enter as ``id``s (the module docstring says why); the switch, the timers and
    the event masks are the interpreter's own bools, floats and ints.
    """
    hooks: list[Any] = [id(sys.getprofile()), id(sys.gettrace()), gc.isenabled()]
    hooks += _interval_timers()
    hooks.append(tuple(map(id, sys.meta_path)))
    hooks.append(tuple(map(id, sys.path_hooks)))
    hooks.append(tuple(map(id, gc.callbacks)))  # run by the verifier's own passes
    monitoring: Any = getattr(sys, "monitoring", None)  # Python 3.12+
    if monitoring is not None:
        for tool in range(6):
            # A tool's events are read whether or not it has a name: on 3.12 free_tool_id
            # leaves a freed tool's events and callbacks in force (the docs say so)
            hooks.append((id(monitoring.get_tool(tool)), monitoring.get_events(tool)))
    return tuple(hooks)


def monitoring_callbacks(monitoring: Any = None) -> tuple[int, ...]:
    """Every ``sys.monitoring`` callback, by ``id`` per tool and event (Python 3.12+, else ``()``).

    A callback can fire on *local* events set on one code object (the verifier's own), which
    no global read shows, and on 3.12 a freed tool keeps its callbacks with no name: reading
    the callbacks themselves covers both. ``register_callback`` is the only reader (it returns
    the callback it replaces), so each is swapped out and put back; ~200 calls, so this runs
    after the import and each trial, not each call, like :func:`signal_handlers`.
    """
    monitoring = monitoring if monitoring is not None else getattr(sys, "monitoring", None)
    if monitoring is None:
        return ()
    namespace: dict[str, Any] = dict(vars(monitoring.events))  # pyright: ignore[reportUnknownArgumentType]
    events = sorted(
        v
        for k, v in namespace.items()
        if k.isupper() and type(v) is int and v > 0 and not v & (v - 1)
    )
    out: list[int] = []
    for tool in range(6):
        for event in events:
            try:
                callback = monitoring.register_callback(tool, event, None)
            except ValueError:  # an event with no callback of its own (by version)
                continue
            if callback is not None:
                monitoring.register_callback(tool, event, callback)
            out.append(id(callback))
    return tuple(out)


def check_modes_left(
    before: ModeState,
    stage: VerdictStage,
    display: str,
    baseline: ModeState | None = None,
) -> None:
    """Raise guard (d) if the mode stacks moved during ``forward`` or before it.

    ``before`` is taken just before ``forward``, ``baseline`` before the candidate's import.
    The cheats: ``LINGERING_MODE`` and ``MODE_AT_IMPORT`` in ``tests/verify/test_adversarial.py``.
    """
    if baseline is not None and before != baseline:
        raise StageFailure(
            ErrorClass.GUARD,
            stage,
            f"{display}: guard (d) torch modes or hooks were active before ModelNew.forward ran "
            f"({before.describe(baseline)}): the candidate's import or __init__ left them",
            guard="library_patch",
        )
    now = mode_depths()
    if now != before:
        raise StageFailure(
            ErrorClass.GUARD,
            stage,
            f"{display}: guard (d) ModelNew.forward left torch modes active or hooks set "
            f"({now.describe(before)}): every torch call after it, the verifier's own, would "
            "run through them",
            guard="library_patch",
        )


def _interval_timers() -> tuple[tuple[float, float], ...]:
    """The process's interval timers (``signal.setitimer``): one armed fires a handler later."""
    return tuple(signal.getitimer(t) for t in _ITIMERS)


_ITIMERS = tuple(
    getattr(signal, name)
    for name in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF")
    if hasattr(signal, name)
)


def signal_handlers() -> tuple[int, ...]:
    """Every signal's Python handler, by ``id`` (after the import and each trial, not each call).

    ``SIG_DFL`` and ``SIG_IGN`` are enum members and the default handlers module functions, so
    an unchanged handler keeps its ``id``; a handler object whose ``__eq__`` says yes to all
    does not fool an identity.
    """
    out: list[int] = []
    for signum in sorted(signal.valid_signals()):
        try:
            out.append(id(signal.getsignal(signum)))
        except (OSError, ValueError):
            out.append(0)
    return tuple(out)


def quiet_collector() -> None:
    """Switch the collector off, after a full pass, with what survives it frozen.

    Frozen objects (torch's, triton's, the verifier's: ~177k after ``import torch``) are never
    scanned again, so the full passes of :func:`collect_garbage` cost microseconds, not the
    ~0.1 s a pass over torch's objects takes.
    """
    gc.collect()
    gc.freeze()
    gc.disable()


def collect_garbage(young: bool = False) -> None:
    """Collect cyclic garbage, where no output of the candidate waits to be copied.

    ``young`` collects only the generations made since the last pass (before each timed call;
    a cycle a call makes is garbage by the next one). A full pass (before each trial, timing
    request and bulk run) frees what was promoted meanwhile: with only young passes, a cycle
    that outlived two of them stayed until the exit, and one made in each timed call of a
    128M-element add filled the H200's 140 GB (twentieth device session).

    The pass runs the candidate's finalizers (and its collector callbacks, were any there):
    the candidate's process makes every pass through
    :meth:`~upskills.verify.candidate_timing.TimingRequests._collect`, which watches it.
    """
    gc.collect(1 if young else 2)
