"""Guard (d) over the libraries in the candidate's process: what they were before its import.

:class:`LibrarySnapshot` remembers every callable attribute of ``torch``, ``torch.Tensor``,
``torch.nn.Module``, ``torch.cuda``, ``time``, ``builtins``, ``threading``, the dispatcher's
handle class and the verifier's own modules in the candidate's process (its loader, timer,
input perturbation, transport); a changed one (a patched timer, ``synchronize``, comparison or
perturbation) fails guard (d). :func:`live_threads` is the census of threads, taken before the
import, that the candidate must not add to. Split from :mod:`upskills.verify.guards`
(2026-12-03) when that passed 600 lines.
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any


def _watched_namespaces() -> dict[str, Any]:
    import builtins

    import torch

    spaces: dict[str, Any] = {
        "torch": torch,
        "torch.Tensor": torch.Tensor,
        "torch.nn.Module": torch.nn.Module,
        "torch.cuda": torch.cuda,
        "time": time,
        "builtins": builtins,
        "threading": threading,
        "torch._C._DispatchModule": torch._C._DispatchModule,  # pyright: ignore  # dispatch_table
    }
    spaces["torch.UntypedStorage"] = torch.UntypedStorage  # host_reads.py's wrappers
    writer = getattr(torch._C, "PyTorchFileWriter", None)  # pyright: ignore[reportPrivateUsage]
    if writer is not None:
        spaces["torch._C.PyTorchFileWriter"] = writer
    if hasattr(torch.cuda, "Event"):
        spaces["torch.cuda.Event"] = torch.cuda.Event
    # The verifier's own code in the candidate's process: the loader, perturbation, timer and
    # transport a timed call runs through. A candidate that reaches their globals (a stack walk
    # the static check did not see) and rebinds one, say the perturbation, is caught here.
    for name in _OWN_MODULES:
        spaces[name] = importlib.import_module(name)
    spaces["upskills.verify.host_memory"].load_driver()  # loaded now, watched from now
    try:  # the verifier's kernels are made on first use: made now, so the snapshot holds them
        spaces["upskills.verify.perturb_kernel"].fused_kernel()
        spaces["upskills.verify.fingerprint_kernel"].projection_kernel()
    except ImportError:  # no Triton here: they stay unmade, and the PyTorch ops serve
        pass
    # the objects Triton's launches read their hooks from (host_memory.launch_hooks), and the
    # classes that answer for them: a patched HookChain.__call__ or knobs __getattribute__
    if knobs := spaces["upskills.verify.host_memory"].load_triton_knobs():
        runtime, chains = knobs[1], knobs[2].values()
        for cls in {*type(runtime).__mro__[:-1], *(type(c) for c in chains if c is not None)}:
            spaces[f"triton.{cls.__qualname__}"] = cls
    for name, cls in _OWN_CLASSES:
        spaces[f"{name}.{cls}"] = getattr(spaces[name], cls)
    return spaces


_OWN_MODULES = (
    "upskills.verify.candidate_host",
    "upskills.verify.candidate_timing",
    "upskills.verify.fingerprint",
    "upskills.verify.fingerprint_kernel",
    "upskills.verify.perturb",
    "upskills.verify.perturb_kernel",
    "upskills.verify.timing",
    "upskills.verify.l2_fence",
    "upskills.verify.transport",
    "upskills.verify.guards",
    "upskills.verify.interpreter_guards",
    "upskills.verify.gpu_compile",
    "upskills.verify.gpu_compile_server",
    "upskills.verify.interpreter_integrity",
    "upskills.verify.module_watch",
    "upskills.verify.own_kernels",
    "upskills.verify.rewrite_scope",
    "upskills.verify.library_snapshot",
    "upskills.verify.modes",
    "upskills.verify.dispatch_table",
    "upskills.verify.host_memory",
    # run by the candidate's process around its timed calls: giving its cache back after them,
    # unmapping the judge's buffers (forty-second session's review)
    "upskills.verify.judge_memory",
    "upskills.verify.cuda_vmm",
)
_OWN_CLASSES = (
    ("upskills.verify.candidate_host", "CandidateHost"),
    ("upskills.verify.candidate_timing", "TimingRequests"),
    ("upskills.verify.host_memory", "Pointer"),
)


def _attrs(space: object) -> Mapping[str, Any]:
    """``vars(space)``: a module's ``__dict__`` or a class's mapping proxy."""
    return vars(space)


def callable_print(value: Any) -> tuple[int, ...]:
    """What makes a callable the one it was.

    Its identity and, for a Python function (or a method, static or class method wrapping one),
    its code and defaults. A function edited in place (``__code__`` swapped, ``__kwdefaults__``
    rewritten) keeps its identity; these change.
    """
    func = value
    try:
        func = getattr(value, "__func__", value)
        code = getattr(func, "__code__", None)
        defaults: tuple[Any, ...] = getattr(func, "__defaults__", None) or ()
        kwdefaults: dict[str, Any] = getattr(func, "__kwdefaults__", None) or {}
    except Exception:  # noqa: BLE001 - an odd object's attribute hook: identity alone
        return (id(value),)
    if code is None:
        return (id(value),)
    kw = sorted((hash(k), id(v)) for k, v in kwdefaults.items())
    flat_kw = (x for kv in kw for x in kv)
    return (id(value), id(func), id(code), *(id(d) for d in defaults), -1, *flat_kw)


_CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*")
"""A module constant's name (``SPAN``, ``_BITS``, ``_KERNEL``): in the verifier's own modules
these are watched whatever their value (the perturbation's span is a float)."""


def _watched(key: str, value: Any, own: bool) -> bool:
    """A callable, a method object wrapping one, or a constant of the verifier's own modules."""
    if own and _CONSTANT.fullmatch(key):
        return True
    try:
        return callable(value) or hasattr(value, "__func__")
    except Exception:  # noqa: BLE001 - an attribute hook that raises: not ours to judge
        return False


class LibrarySnapshot:
    """Fingerprints of library attributes (timers, synchronize, comparisons) at a point in time.

    A rebinding changes the identity, an edit in place the code or defaults
    (:func:`callable_print`).
    In the verifier's own modules the constants are watched too (a rebound ``perturb.SPAN``).
    In a class, a new name that shadows one of a base class counts too: ``torch.Tensor.copy_``
    set on ``torch.Tensor`` hides ``TensorBase.copy_`` from every copy the verifier makes
    (``SHADOWED_METHOD`` in ``tests/verify/test_adversarial.py``: it passed every CPU trial with
    the static check out of the way, 2026-12-03).
    """

    def __init__(self) -> None:
        self._spaces = _watched_namespaces()
        self._keys = {
            name: set(_attrs(space))
            for name, space in self._spaces.items()
            if isinstance(space, type)
        }
        self._prints = {
            name: {
                key: callable_print(value)
                for key, value in list(_attrs(space).items())
                if _watched(key, value, name.startswith("upskills."))
            }
            for name, space in self._spaces.items()
        }

    def changed(self) -> list[str]:
        """Dotted names replaced or edited in place, and new names of a class that shadow a base's.

        Other new names are ignored (a module may grow attributes, a class a name of its own).
        """
        out: list[str] = []
        for name, space in self._spaces.items():
            now = _attrs(space)
            if name in self._keys:
                out += _shadowing(name, space, now.keys() - self._keys[name])
            for key, print_ in self._prints[name].items():
                if key not in now:
                    out.append(f"{name}.{key}")
                elif callable_print(now[key]) != print_:
                    edited = id(now[key]) == print_[0]
                    out.append(f"{name}.{key}" + (" (edited in place)" if edited else ""))
        return out


def _shadowing(name: str, cls: type, new: set[str]) -> list[str]:
    """Of ``new`` names set on ``cls``, those a base class defines (in sorted order)."""
    out: list[str] = []
    for key in sorted(new):
        base = next((b for b in cls.__mro__[1:] if key in vars(b)), None)
        if base is not None:
            out.append(f"{name}.{key} (new, shadows {base.__qualname__}.{key})")
    return out


def live_threads() -> set[int]:
    """Idents of the Python threads alive now, whoever started them and whatever they run.

    ``threading`` knows only the threads it started; one started through ``_thread`` runs
    Python frames all the same, so the interpreter's frames per thread are read too. Until
    2026-12-06 a thread whose target lived in ``torch`` or ``triton`` was left out as the
    libraries': a thread started at import with ``torch.utils._pytree.tree_map`` as its target
    ran the candidate's own loop, filled the output with ``torch.add`` out of the op recorder's
    sight and passed every trial. The census is taken before the candidate's import, so a
    library thread that was already alive is in it; none of the libraries a candidate may use
    starts one of its own on the paths a kernel takes.
    """
    idents = {t.ident for t in threading.enumerate() if t.ident is not None}
    frames = sys._current_frames()  # pyright: ignore[reportPrivateUsage] - the only census
    return idents | set(frames)


THREAD_STARTERS = ("start_new_thread", "start_new", "start_joinable_thread")
"""``_thread``'s functions that start an OS thread (the last on Python 3.13+)."""


def wrap_thread_starts(watch: Any) -> None:
    """Count every thread started, by each way the interpreter starts one.

    ``watch.thread_starts`` counts them all from now on (the timed requests report the ones
    started while they ran, :func:`threads_since`), ``watch.threads_started`` those started
    while ``watch.active`` (forward in a trial). ``threading.Thread.start`` and, beneath it,
    every entry point that starts an OS thread: ``_thread.start_new_thread``, its old alias
    ``_thread.start_new``, ``threading``'s own reference ``threading._start_new_thread`` (bound
    when ``threading`` was imported, so replacing ``_thread``'s attribute does not reach it)
    and, on Python 3.13+, the joinable forms. Until 2026-12-04 only the first two were wrapped,
    and a thread started through ``threading._start_new_thread`` ran ``torch.add`` into the
    output unseen (its ops escape the op recorder: modes are per thread) and passed every CPU
    trial.
    """
    import _thread

    start = threading.Thread.start
    inside = threading.local()  # Thread.start counts once, not again beneath

    def count() -> None:
        watch.thread_starts += 1
        if watch.active:
            watch.threads_started += 1

    def thread_start(self: Any) -> Any:
        count()
        inside.start = True
        try:
            return start(self)
        finally:
            inside.start = False

    def counted(raw: Any) -> Any:
        def start_thread(*args: Any, **kwargs: Any) -> Any:
            if not getattr(inside, "start", False):
                count()
            return raw(*args, **kwargs)

        return start_thread

    threading.Thread.start = thread_start  # type: ignore[method-assign]
    for module, names in (
        (_thread, THREAD_STARTERS),
        (threading, ("_start_new_thread", "_start_joinable_thread")),
    ):
        for name in names:
            raw = getattr(module, name, None)
            if raw is not None:
                setattr(module, name, counted(raw))


def threads_since(watch: Any, mark: int) -> int:
    """A timed request's count of threads: started since ``mark``, or alive since the import.

    Those started since ``watch.thread_starts`` read ``mark``, and those alive beyond the
    census taken before the candidate's import (``watch.threads``). Trials refuse a forward's
    threads; a forward timed may start one as well (the watch is not active there), and one
    alive through the clock check's calibration could slow that pass alone and so shrink the
    judge's estimate of the calls (``verifier.md``).
    """
    return watch.thread_starts - mark + len(live_threads() - watch.threads)
