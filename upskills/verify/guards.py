"""Run-time guards against reward hacking, installed in the verifier's child process.

- :class:`LaunchCounter` hooks Triton's launch path (``JITFunction.run`` and, under
  ``TRITON_INTERPRET=1``, ``InterpretedFunction.run``) and wraps modules built by
  ``torch.utils.cpp_extension.load_inline``/``load`` so calls into them count: a ``forward``
  that launches nothing of its own fails guard (a).
- :class:`OpRecorder` is a ``TorchDispatchMode`` that records the aten ops a ``forward`` runs
  outside the candidate's own launches; :func:`forbidden_ops` rejects compute ops on more than a
  few elements, and any copy op the reference itself uses for its work (guard b). In a trial it
  marks each op it sees for the shadow profile (:mod:`upskills.verify.shadow_ops`), which finds
  ops that never reached it.
- :class:`~upskills.verify.library_snapshot.LibrarySnapshot` (guard d) lives in a module of
  its own.

Like the static guards, these raise the cost of cheating; they are not a security sandbox.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from upskills.verify.gpu_compile import compile_for_gpu, forget_rewrite
from upskills.verify.host_memory import (
    held_addresses,
    host_addresses,
    launch_arguments,
    launch_hooks,
    moved,
)
from upskills.verify.interpreter_guards import (
    argument_ranges,
    install_bounds_check,
    install_compile_at_grid,
    install_copy_window,
    interpreter_autotune,
    plain_arguments,
)
from upskills.verify.interpreter_integrity import check_interpreter, take_snapshot
from upskills.verify.own_kernels import is_own
from upskills.verify.rewrite_scope import install_rewrite_scope

SMALL_NUMEL = 64
"""Ops touching at most this many elements are "small scalar math" and always allowed."""

ALLOWED_OPS = frozenset(
    """empty empty_like empty_strided zeros zeros_like ones ones_like full full_like new_empty
    new_empty_strided new_zeros new_ones new_full scalar_tensor arange lift_fresh
    lift_fresh_copy _local_scalar_dense resize_ set_ detach detach_ alias view _unsafe_view
    reshape _reshape_alias as_strided t transpose permute expand expand_as squeeze unsqueeze
    slice select split split_with_sizes chunk narrow unbind flatten unflatten view_as
    view_as_real view_as_complex diagonal movedim _conj resolve_conj resolve_neg _neg_view
    is_same_size is_nonzero _has_compatible_shallow_copy_type record_stream sym_size sym_stride
    sym_numel sym_storage_offset unfold is_pinned""".split()
)
"""Allocation, views and metadata: never the main work."""

DATA_MOVEMENT_OPS = frozenset(
    """clone copy_ _to_copy to contiguous _copy_from _copy_from_and_resize copy cat stack
    fill_ zero_ fill constant_pad_nd pin_memory _pin_memory""".split()
)
"""Copies, casts and fills: allowed unless the reference itself does its work with them."""

_COPY_FAMILY = frozenset("clone copy_ _to_copy to contiguous _copy_from copy".split())


def op_family(name: str) -> str:
    """Group equivalent copy ops (``clone`` ~ ``copy_`` ~ ``_to_copy``) under one name."""
    return "copy" if name in _COPY_FAMILY else name


Launch = tuple[Any, tuple[Any, ...], dict[str, Any], dict[str, str]]
"""An interpreted launch: its function, arguments, keyword arguments, and the sources its
first compile carried (by function)."""


@dataclass
class LaunchState:
    """Counters shared by the launch hooks of one child process."""

    launches: int = 0
    """Kernel launches (Triton or compiled extension calls) so far."""
    depth: int = 0
    """>0 while inside a launch (ops there belong to the launcher, not the candidate)."""
    launch_frames: list[Any] = field(default_factory=list[Any])
    """The frames of the launch wrappers running now, innermost last."""
    candidate_files: frozenset[str] = frozenset()
    """The candidate's source file (as given and resolved): code of it that a launch runs (a
    grid callable, a heuristic, a hook, an argument's method) is the candidate's, not the
    launcher's, and its ops are recorded."""
    ranges: list[tuple[int, int, str]] | None = None
    """Memory of the running interpreted launch's tensor arguments: (start, end, name)."""
    compiling: list[Launch | None] = field(default_factory=list["Launch | None"])
    """The interpreted launches running now, innermost last, with the sources compiled before
    each: compiled again when its grid is set
    (:func:`~upskills.verify.interpreter_guards.install_compile_at_grid`); None for a launch
    not compiled."""
    interpreter_copies: int = 0
    """>0 while the interpreter copies a launch's arguments to the host or back (its only
    copies: :func:`~upskills.verify.interpreter_guards.install_copy_window`)."""
    inputs: frozenset[int] | None = None
    """Storage addresses of the running trial's inputs (the judge's memory, not Python's);
    None outside a trial, where nothing is counted (:func:`python_memory`)."""
    python_memory: int = 0
    """Elements the running trial moved through memory Python reads (:func:`python_memory`)."""
    gpu: bool = False
    """The running trial is a GPU check's: host memory its kernels reach counts."""
    host_reach: int = 0
    """Elements of host memory the running GPU trial pinned or gave its kernels
    (:func:`host_reach`)."""
    host_addresses: int = 0
    """Raw addresses of pinned or managed host memory the running GPU trial gave its kernels
    (:func:`upskills.verify.host_memory.host_addresses`)."""


class LaunchCounter:
    """Counts the candidate's own kernel launches (Triton JIT, interpreter, load_inline)."""

    def __init__(self) -> None:
        self.state = LaunchState()
        self._installed = False

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        state = self.state

        def counted(*args: Any, **kwargs: Any) -> Any:
            # the verifier's own kernels (the timing inputs' perturbation) are not the
            # candidate's launches; marking its own kernels so only hides launches it needs
            if kwargs.get("warmup") or is_own(args[0] if args else None):
                return fn(*args, **kwargs)
            state.launches += 1
            if callable(kwargs.get("grid")):  # the candidate's code, run inside the launch
                kwargs = {**kwargs, "grid": _outside_launch(kwargs["grid"], state)}
            given, named = args, kwargs  # the caller's objects stay alive through the launch
            checked: list[tuple[Any, int]] = []

            def hooks_set() -> None:  # code that could run inside the launch, after its check
                state.host_addresses += launch_hooks(args[0] if args else None)

            if state.gpu and state.depth == 0 and state.inputs is not None:
                state.host_reach += host_reach(leaves((args, kwargs)))  # pinned memory written
                hooks_set()
                # each address read once (the hooks again once the grid is read) ...
                given, named = launch_arguments(args, kwargs, hooks_set)
                items = leaves((given, named))
                state.host_addresses += host_addresses(items)  # ... asked ...
                checked = held_addresses(items)  # ... and still the one launched
            state.depth += 1
            state.launch_frames.append(sys._getframe())  # pyright: ignore[reportPrivateUsage]
            try:
                return fn(*given, **named)
            finally:
                if checked:
                    hooks_set()  # a hook set inside the launch and left
                state.host_addresses += moved(checked)  # candidate code inside the launch
                state.launch_frames.pop()
                state.depth -= 1

        return counted

    def _wrap_autotune(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Autotuned launches: ops in config hooks are recorded like any other of forward's.

        (Ops inside them are not hidden: a ``pre_hook`` doing the task's work with PyTorch is
        still PyTorch's work.) Under the interpreter, configs run once instead of being timed.
        """

        def autotuned(*args: Any, **kwargs: Any) -> Any:
            if args and os.environ.get("TRITON_INTERPRET") == "1":
                interpreter_autotune(args[0])
            return fn(*args, **kwargs)

        return autotuned

    def _wrap_interpreted(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        counted = self._wrap(fn)
        state = self.state

        def bounded(interpreted: Any, *args: Any, **kwargs: Any) -> Any:
            args, kwargs = plain_arguments(args, kwargs)  # the interpreter reads them inside
            if "grid" in kwargs:  # its sizes read once, before the launch's last compile
                kwargs = {**kwargs, "grid": plain_grid(kwargs["grid"])}
            internal = is_own(interpreted)
            compiled = not kwargs.get("warmup") and not internal
            sources: dict[str, str] = {}
            if compiled:  # a kernel the GPU would refuse; the interpreter reads what it reads
                check_interpreter(interpreted)
                forget_rewrite(interpreted)
                sources = compile_for_gpu(interpreted, args, kwargs)
                check_interpreter(interpreted)  # the compile read the candidate's objects
            names = list(getattr(interpreted, "arg_names", []))
            if state.depth == 0 and state.inputs is not None:  # a kernel reads host memory too
                state.python_memory += python_memory((args, kwargs), state.inputs)
            # a launch inside another's grid must leave the outer launch its own bounds
            outer, state.ranges = state.ranges, argument_ranges(names, args, kwargs)
            state.compiling.append((interpreted, args, kwargs, sources) if compiled else None)
            try:
                return counted(interpreted, *args, **kwargs)
            finally:
                state.ranges = outer
                state.compiling.pop()

        return bounded

    def install(self) -> None:
        """Hook Triton's launch path and the C++ extension builders (idempotent)."""
        if self._installed:
            return
        self._installed = True
        try:
            from triton.runtime.jit import JITFunction  # pyright: ignore[reportMissingTypeStubs]

            JITFunction.run = self._wrap(JITFunction.run)  # type: ignore[method-assign]
        except ImportError:
            pass
        try:
            from triton.runtime.interpreter import InterpretedFunction  # pyright: ignore[reportMissingTypeStubs]

            InterpretedFunction.run = self._wrap_interpreted(InterpretedFunction.run)  # type: ignore[method-assign]
            install_bounds_check(self.state)
            install_copy_window(self.state)
            install_compile_at_grid(self.state)
            install_rewrite_scope()
        except ImportError:
            pass
        try:  # autotuning: configs run once under the interpreter
            from triton.runtime.autotuner import Autotuner  # pyright: ignore[reportMissingTypeStubs]

            Autotuner.run = self._wrap_autotune(Autotuner.run)  # type: ignore[method-assign]
        except ImportError:
            pass
        import torch.utils.cpp_extension as cpp_extension

        for name in ("load_inline", "load"):
            builder = getattr(cpp_extension, name)
            setattr(cpp_extension, name, self._wrap_builder(builder))
        with contextlib.suppress(ImportError):  # the interpreter as installed, hooks included
            take_snapshot()

    def _wrap_builder(self, builder: Callable[..., Any]) -> Callable[..., Any]:
        counter = self

        def build(*args: Any, **kwargs: Any) -> Any:
            module = builder(*args, **kwargs)
            return _CountingModule(module, counter) if module is not None else module

        return build


def _outside_launch(grid: Callable[..., Any], state: LaunchState) -> Callable[..., Any]:
    """``grid`` called as if outside the launch: every op it runs is the candidate's.

    Triton calls a grid callable inside its launch, and a grid of C-level callables leaves no
    frame of the candidate's there (:func:`_launchers_op`); a copy it makes would otherwise
    pass as the interpreter's own.
    """

    def grid_outside(*args: Any, **kwargs: Any) -> Any:
        depth, state.depth = state.depth, 0
        try:
            return grid(*args, **kwargs)
        finally:
            state.depth = depth

    return grid_outside


def plain_grid(grid: Any) -> Any:
    """An interpreted launch's grid whose sizes are read once, as exact ``int``s.

    The interpreter loops ``range(grid[0])`` after the launch's second compile
    (:func:`~upskills.verify.interpreter_guards.install_compile_at_grid`): a size of the
    candidate's whose ``__index__`` ran there could rebind what that compile saw. A grid
    callable's sizes are read when it returns (in the grid's own call, before that compile).
    """
    if callable(grid):
        sized: Callable[..., Any] = grid

        def read(*args: Any, **kwargs: Any) -> Any:
            return plain_grid(sized(*args, **kwargs))

        return read
    if isinstance(grid, tuple | list):
        return tuple(int(operator.index(size)) for size in cast("tuple[Any, ...]", grid))
    return grid


class _CountingModule:
    """A compiled extension module whose function calls count as kernel launches."""

    def __init__(self, module: Any, counter: LaunchCounter) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_counter", counter)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if callable(value) and not isinstance(value, type):
            state = self._counter.state

            def call(*args: Any, **kwargs: Any) -> Any:
                state.launches += 1
                if state.inputs is not None:  # C++ copies into memory Python reads, too
                    state.python_memory += python_memory((args, kwargs), state.inputs)
                    if state.gpu:  # and in a GPU check its C++ loops over host memory
                        items = leaves((args, kwargs))
                        state.host_reach += host_reach(items)
                        state.host_addresses += host_addresses(items)
                return value(*args, **kwargs)

            return call
        return value

    def __dir__(self) -> list[str]:
        return dir(self._module)


@dataclass
class OpRecord:
    """An aten op the candidate's forward ran, with the most elements it touched."""

    name: str
    """Overload packet name (``mm``, ``_softmax``, ``copy_``)."""
    numel: int
    """Largest element count among its tensor arguments and results."""


@dataclass
class OpLog:
    """Aten ops recorded in one forward call (outside the candidate's own launches)."""

    ops: list[OpRecord] = field(default_factory=list[OpRecord])
    """In call order."""
    scalars: int = 0
    """``_local_scalar_dense`` calls among them (a tensor element read into Python)."""
    scalar_limit: int | None = None
    """More such calls than this raise :class:`ScalarFallback` at once (a trial's recorder:
    a forward that reads a million elements one by one is a Python fallback by its 65th, and
    the profile of the rest would take minutes to read)."""
    host_copied: int = 0
    """Elements copied from a GPU tensor into a host tensor (:func:`to_host`)."""


def to_host(args: Any, out: Any) -> int:
    """Elements an op wrote into host tensors from a GPU tensor (``x.cpu()``, ``copy_``).

    On the host only Python, NumPy or an extension's C++ reads them: none is a GPU kernel. A
    C++ loop over a host copy's ``data_ptr`` runs no aten op the recorder sees, nor does NumPy
    over ``__array_interface__`` (guard (b) ``python_fallback``; thirty-fourth session's review,
    2026-12-05).
    """
    if all(t.device.type == "cpu" for t in tensors(args)):
        return 0
    return host_reach(out)


def python_memory(values: Any, inputs: frozenset[int]) -> int:
    """Elements of host tensors over memory that Python reads and writes without a conversion.

    ``torch.frombuffer`` or ``torch.asarray`` over a ``bytearray`` or an ``mmap``,
    ``from_file``, shared memory: storages PyTorch's allocator did not make (not resizable) or
    moved into shared memory, other than the trial's inputs (the judge's). A forward that
    copies its inputs into one reads them with ``struct``; one that copies out of one, passes
    one to a kernel or returns one wrote its output in Python (guard (b) ``python_fallback``;
    found 2026-12-05, thirty-fourth session: that add passed every CPU trial).
    """
    total = 0
    for t in {id(t): t for t in tensors(values) if t.device.type == "cpu"}.values():
        storage = t.untyped_storage()
        if (not storage.resizable() or storage.is_shared()) and storage.data_ptr() not in inputs:
            total += t.numel()
    return total


PIN_OPS = frozenset({"pin_memory", "_pin_memory"})
"""Ops that return pinned host memory (so do factories given ``pin_memory=True``)."""


def host_reach(values: Any) -> int:
    """Elements of host tensors among ``values`` (a GPU check's kernel or C++ arguments).

    :func:`to_host` counts an op's host outputs with it too. A GPU check's inputs and outputs
    are device tensors, and its kernels have no use for host memory. A kernel that writes its
    inputs into pinned host memory (which it reaches through unified addressing), then an
    extension's C++ loop over it, computes on the host with no aten op and no copy op to show
    it (guard (b) ``python_fallback``; thirty-fifth session's review). Pinned allocations count
    too (:data:`PIN_OPS`, in the op recorder).
    """
    return sum(t.numel() for t in tensors(values) if t.device.type == "cpu")


def leaves(values: Any) -> list[Any]:
    """What nested lists, tuples and dicts hold (a dict's values, not its keys)."""
    found: list[Any] = []
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):  # the base class's own methods: a subclass's are not asked
            stack.extend(cast(Any, dict).values(item))
        elif isinstance(item, list | tuple):
            stack.extend(cast(Any, list if isinstance(item, list) else tuple).__iter__(item))
        else:
            found.append(item)
    return found


def tensors(values: Any) -> list[Any]:
    """The tensors in nested lists, tuples and dicts."""
    import torch

    return [item for item in leaves(values) if isinstance(item, torch.Tensor)]


class ScalarFallback(Exception):
    """A forward read more tensor elements into Python than its log's ``scalar_limit``."""


def _max_numel(values: Any) -> int:
    return max((t.numel() for t in tensors(values)), default=0)


LAUNCHER_PACKAGES = ("triton", "torch", "numpy", "upskills")
"""Packages whose Python runs inside a launch on the launcher's behalf (Triton's JIT and
interpreter, the tensors' own methods, the verifier's launch wrappers)."""


@functools.cache
def launcher_code_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(package folders, standard-library folders) whose code inside a launch is the launcher's.

    Read by the candidate's zygote before any candidate runs (``sandbox.serve``), so a
    candidate cannot add to it. Only these packages, not every installed one: a module the
    candidate writes (into the temp dir, or a ``site-packages`` its user can write) is its own.
    """
    import sysconfig
    from importlib.util import find_spec

    packages: set[str] = set()
    for name in LAUNCHER_PACKAGES:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            continue
        packages.update(spec.submodule_search_locations or () if spec else ())
    paths = sysconfig.get_paths()
    stdlib = {paths[k] for k in ("stdlib", "platstdlib") if paths.get(k)}

    def folders(roots: set[str]) -> tuple[str, ...]:
        both = {r for root in roots for r in (root, os.path.realpath(root))}
        return tuple(sorted(r.rstrip("/") + "/" for r in both))

    return folders(packages), folders(stdlib)


@functools.lru_cache(maxsize=4096)
def _launcher_file(filename: str) -> bool:
    """Is ``filename`` (a frame's ``co_filename``) code of the launcher, not of the candidate?"""
    if filename.startswith("<"):
        # frozen importlib, and Triton's binder (its generated source run by ``exec``): a
        # candidate cannot make such a frame (``exec``, ``compile``, ``__code__`` fail statically)
        return True
    packages, stdlib = launcher_code_roots()
    for name in {filename, os.path.realpath(filename)}:
        if name.startswith(packages):
            return True
        if name.startswith(stdlib) and "-packages/" not in name:
            return True
    return False


def _candidate_code_in_launch(state: LaunchState) -> bool:
    """Does code other than the launcher's lie on the stack between this op and the launch?

    Triton runs the candidate's Python inside its launch: the grid callable, heuristics,
    autotune hooks, an argument's ``data_ptr``. Until 2026-12-03 every op inside a launch was
    the launcher's, so a grid callable doing ``torch.add(x, y, out=out)`` before a kernel that
    did nothing passed guard (b). The first mend looked for frames of the candidate's file, and
    the same grid callable in a module the candidate wrote at import passed again: now any frame
    outside the launcher's packages makes the op the candidate's (``tests/verify/test_guards.py``).
    """
    if not state.candidate_files or not state.launch_frames:
        return False
    stop = state.launch_frames[-1]
    frame = sys._getframe(2)  # pyright: ignore[reportPrivateUsage]
    while frame is not None and frame is not stop:
        name = frame.f_code.co_filename
        if name in state.candidate_files or not _launcher_file(name):
            return True
        frame = frame.f_back
    return False


def _launchers_op(name: str, state: LaunchState) -> bool:
    """Could an op of this name, inside a launch, be the launcher's own?

    Allocations, views and metadata, anywhere; copies only while the interpreter copies a
    launch's arguments to the host and back (:attr:`LaunchState.interpreter_copies`). Triton's
    launch on a GPU runs no copy and no compute op of its own, and until 2026-12-06 every op
    inside a launch with no Python frame of the candidate's below it was the launcher's: a grid
    made of C-level callables (``functools.partial(next, map(..., map(out.copy_,
    itertools.starmap(torch.add, ...))))``) ran ``torch.add`` inside the launch with no such
    frame, and passed the CPU verifier, static check and all. Until the forty-fourth session a
    copy anywhere inside an interpreted launch was the interpreter's: a kernel's pre-run hook
    (``kernel.add_pre_run_hook(torch.Tensor.copy_)``, called by the interpreter with the
    launch's arguments ``out`` and ``x.t()``) did a transpose task's work there and passed.
    """
    return name in ALLOWED_OPS or (state.interpreter_copies > 0 and name in DATA_MOVEMENT_OPS)


def make_op_recorder(log: OpLog, state: LaunchState, mark: str | None = None) -> Any:
    """A ``TorchDispatchMode`` appending each op run outside a launch to ``log``.

    ``mark``: each op it sees runs inside a profiler scope named ``mark:op:elements`` (the
    shadow profile's :attr:`upskills.verify.shadow_ops.Shadow.mark`, the op, the largest input's
    element count), which finds ops that never reached it and ops run inside a kernel that is
    not PyTorch's.
    """
    from torch.autograd.profiler import record_function
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpRecorder(TorchDispatchMode):
        """Records aten ops (name and size) while active."""

        def __torch_dispatch__(  # noqa: D105
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            name: str = func._overloadpacket.__name__
            inputs = _max_numel((args, kwargs))
            if mark is not None:
                with record_function(f"{mark}:{name}:{inputs}"):
                    out = func(*args, **kwargs)
            else:
                out = func(*args, **kwargs)
            if (
                state.depth == 0
                or not _launchers_op(name, state)
                or _candidate_code_in_launch(state)
            ):
                log.ops.append(OpRecord(name, max(inputs, _max_numel(out))))
                if name in DATA_MOVEMENT_OPS:
                    log.host_copied += to_host((args, kwargs), out)
                if name not in ALLOWED_OPS and state.inputs is not None:
                    state.python_memory += python_memory((args, kwargs, out), state.inputs)
                if state.gpu and (name in PIN_OPS or kwargs.get("pin_memory")):
                    state.host_reach += _max_numel(out)
                if name == "_local_scalar_dense":
                    log.scalars += 1
                    if log.scalar_limit is not None and log.scalars > log.scalar_limit:
                        raise ScalarFallback(log.scalars)
            return out

    return OpRecorder()


def work_ops(log: OpLog) -> set[str]:
    """Op families that do work on more than ``SMALL_NUMEL`` elements (used on the reference)."""
    return {
        op_family(op.name)
        for op in log.ops
        if op.numel > SMALL_NUMEL and op.name not in ALLOWED_OPS
    }


def forbidden_ops(log: OpLog, reference_work: set[str]) -> list[OpRecord]:
    """Ops of a candidate's forward that do the task's work with PyTorch instead of a kernel.

    Args:
        log: Ops recorded during the candidate's forward.
        reference_work: ``work_ops`` of the reference's forward on the same inputs.

    Returns:
        The offending ops (compute ops on more than ``SMALL_NUMEL`` elements, and data-movement
        ops the reference itself uses for its work), first occurrence of each name.
    """
    seen: set[str] = set()
    bad: list[OpRecord] = []
    for op in log.ops:
        if op.name in ALLOWED_OPS or op.numel <= SMALL_NUMEL or op.name in seen:
            continue
        if op.name not in DATA_MOVEMENT_OPS or op_family(op.name) in reference_work:
            seen.add(op.name)
            bad.append(op)
    return bad
