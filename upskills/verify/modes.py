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
with the collector off (``gc.disable()`` before the import, compared with the hooks) and
collects at :func:`collect_garbage`, before a trial's call and a timing request, where no
output of the candidate waits to be copied.
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
    """The interpreter's hooks: profile and trace functions, the collector, ``sys.monitoring``
    tools, interval timers."""

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
            parts.append("interpreter hooks (setprofile, settrace, monitoring, gc, itimer) changed")
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
    """Profile and trace functions, the collector's switch, ``sys.monitoring``'s tools."""
    hooks: list[Any] = [sys.getprofile(), sys.gettrace(), gc.isenabled(), *_interval_timers()]
    monitoring: Any = getattr(sys, "monitoring", None)  # Python 3.12+
    if monitoring is not None:
        for tool in range(6):
            name = monitoring.get_tool(tool)
            hooks.append((name, monitoring.get_events(tool) if name is not None else 0))
    return tuple(hooks)


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


def signal_handlers() -> tuple[Any, ...]:
    """Every signal's Python handler (~40 µs: after the import and each trial, not each call)."""
    out: list[Any] = []
    for signum in sorted(signal.valid_signals()):
        try:
            out.append(signal.getsignal(signum))
        except (OSError, ValueError):
            out.append(None)
    return tuple(out)


def collect_garbage() -> None:
    """Collect the young generations, where no output of the candidate waits to be copied.

    Cycles made since the last pass are freed here (their finalizers run now, harmlessly); a
    cycle tied to an older object waits for the exit. A full pass over torch's objects takes
    ~0.15 s, a young one microseconds.
    """
    gc.collect(1)
