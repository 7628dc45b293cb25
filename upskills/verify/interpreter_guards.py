"""The Triton interpreter's launches under the verifier: bounds, configs, plain arguments.

Bounds checks on every load and store, one run per autotuning config, and plain tensors as
the launches' arguments.

Split from :mod:`upskills.verify.guards` (2026-12-06) when that passed 600 lines. Installed in
the candidate's process by :meth:`~upskills.verify.guards.LaunchCounter.install`, before the
candidate's import, and watched by the library snapshot like the rest of the verifier's code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from upskills.verify.guards import LaunchState


def interpreter_autotune(autotuner: Any) -> None:
    """Under the interpreter (no GPU), autotuning runs each config once instead of timing it.

    Triton's benchmarker needs a GPU driver; without this, any ``@triton.autotune`` kernel
    fails on CPU. Running every config once also checks every config's correctness.
    """

    def run_once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
        kernel_call()
        return [1.0] * len(quantiles) if quantiles else 1.0

    for attr in ("_do_bench", "do_bench"):
        if attr in vars(autotuner):
            setattr(autotuner, attr, run_once)


class OutOfBoundsAccess(Exception):
    """An interpreted kernel touched memory outside every tensor argument."""


def argument_ranges(
    names: list[str], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[int, int, str]]:
    """(start, end, name) of the storage behind each tensor argument of a launch."""
    ranges: list[tuple[int, int, str]] = []
    items = list(zip(names, args, strict=False)) + list(kwargs.items())
    for name, value in items:
        base = getattr(value, "base", value)  # TensorDescriptor -> its tensor
        if hasattr(base, "untyped_storage"):
            storage = base.untyped_storage()
            start = storage.data_ptr()
            ranges.append((start, start + storage.nbytes(), name))
    return ranges


def _check_bounds(state: LaunchState, ptrs: Any, mask: Any, what: str) -> None:
    import numpy as np

    if state.ranges is None:
        return
    addresses = np.asarray(ptrs.data).astype(np.uint64)
    active = np.asarray(mask.data, dtype=bool) if mask is not None else None
    if active is not None:
        addresses = addresses[np.broadcast_to(active, addresses.shape)]
    if addresses.size == 0:
        return
    try:
        size = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
    except AttributeError:
        size = 1
    ok = np.zeros(addresses.shape, dtype=bool)
    for start, end, _ in state.ranges:
        ok |= (addresses >= start) & (addresses + size <= end)
    if bool(ok.all()):
        return
    bad = int(addresses[~ok][0])
    nearest = min(state.ranges, key=lambda r: min(abs(bad - r[0]), abs(bad - r[1])), default=None)
    where = ""
    if nearest is not None:
        start, end, name = nearest
        where = (
            f"; {bad - end} bytes past the end of {name!r}"
            if bad >= end
            else f"; {start - bad} bytes before the start of {name!r}"
        )
    raise OutOfBoundsAccess(
        f"out-of-bounds {what}: {int((~ok).sum())} element(s) outside every tensor argument"
        f"{where} (mask the ragged edge)"
    )


def install_copy_window(state: LaunchState) -> None:
    """Mark the interpreter's copies of a launch's arguments, to the host and back.

    They are its only copies, and the only ones inside an interpreted launch that are not the
    candidate's (:func:`upskills.verify.guards._launchers_op`); its arguments are plain by then
    (:func:`plain_arguments`), so no code of the candidate's runs inside these two calls.
    """
    from triton.runtime.interpreter import GridExecutor  # pyright: ignore[reportMissingTypeStubs]

    def copying(method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            state.interpreter_copies += 1
            try:
                return method(*args, **kwargs)
            finally:
                state.interpreter_copies -= 1

        return counted

    executor: Any = GridExecutor
    for name in ("_init_args_hst", "_restore_args_dev"):
        setattr(executor, name, copying(getattr(executor, name)))


def install_compile_at_grid(state: LaunchState) -> None:
    """Compile a launch's kernel again once its grid is set, just before its programs run.

    The launch's wrapper compiles it for sm_90 before the launch
    (:func:`upskills.verify.gpu_compile.compile_for_gpu`), but the interpreter then runs the
    candidate's grid callable and pre-run hooks, and runs the kernel with the globals it finds
    then. A grid that rebound a global of the kernel's (Triton's module at the compile, a
    module of the candidate's whose attribute's operator ran NumPy at the run) passed a vector
    add whose compiled kernel was wrong (2026-12-06). Compiled again here, the request
    describes what runs (:func:`upskills.verify.gpu_compile.compile_at_grid`).
    """
    from triton.runtime.interpreter import InterpreterBuilder  # pyright: ignore[reportMissingTypeStubs]

    from upskills.verify.gpu_compile import compile_at_grid
    from upskills.verify.interpreter_integrity import check_interpreter

    builder: Any = InterpreterBuilder
    set_grid_dim = builder.set_grid_dim

    def grid_set(self: Any, *dims: Any) -> Any:
        if state.compiling and (launch := state.compiling[-1]) is not None:
            check_interpreter(launch[0])  # the grid and hooks ran: nothing of theirs runs after
            compile_at_grid(*launch)
        return set_grid_dim(self, *dims)

    builder.set_grid_dim = grid_set


def install_bounds_check(state: LaunchState) -> None:
    """Make the Triton interpreter reject loads/stores outside the launch's tensor arguments.

    On a GPU an out-of-bounds access faults (or silently corrupts memory); the interpreter
    reads and writes raw host memory, so without this check a missing mask can pass on CPU.
    """
    from triton.runtime.interpreter import InterpreterBuilder  # pyright: ignore[reportMissingTypeStubs]

    builder: Any = InterpreterBuilder  # its methods are untyped
    load = builder.create_masked_load
    store = builder.create_masked_store
    rmw = builder.create_atomic_rmw
    cas = builder.create_atomic_cas

    def masked_load(self: Any, ptrs: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check_bounds(state, ptrs, mask, "load")
        return load(self, ptrs, mask, *args, **kwargs)

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check_bounds(state, ptrs, mask, "store")
        return store(self, ptrs, value, mask, *args, **kwargs)

    def atomic_rmw(
        self: Any, op: Any, ptr: Any, val: Any, mask: Any, *args: Any, **kwargs: Any
    ) -> Any:
        _check_bounds(state, ptr, mask, "atomic")
        return rmw(self, op, ptr, val, mask, *args, **kwargs)

    def atomic_cas(self: Any, ptr: Any, *args: Any, **kwargs: Any) -> Any:
        _check_bounds(state, ptr, None, "atomic")
        return cas(self, ptr, *args, **kwargs)

    InterpreterBuilder.create_masked_load = masked_load  # type: ignore[method-assign]
    InterpreterBuilder.create_masked_store = masked_store  # type: ignore[method-assign]
    InterpreterBuilder.create_atomic_rmw = atomic_rmw  # type: ignore[method-assign]
    InterpreterBuilder.create_atomic_cas = atomic_cas  # type: ignore[method-assign]


_REFUSED: Any = object()


def _rebuilt_library_value(value: Any, cls: Any, plain: Callable[[Any, str], Any]) -> Any:
    """A library object as a launch argument, rebuilt from plain parts, or :data:`_REFUSED`.

    A ``constexpr`` (its value), a ``TensorDescriptor`` (its fields), a ``TensorWrapper`` (its
    tensor and type: ``triton.reinterpret``) and a ``tl.dtype`` (its name) are rebuilt; an
    object of a class whose instances hold no attributes (a ``numpy.int64``, a
    ``torch.dtype``, a ``torch.device``) is taken as it is unless it answers ``data_ptr`` or
    is a NumPy array.
    Anything else is refused: until the forty-fourth session any object of a library class
    was taken as it was, and an ``nn.Module`` given the attributes ``data_ptr``,
    ``untyped_storage`` and the rest became a pointer argument whose ``untyped_storage``, a
    chain of C-level callables, ran a transpose task's copy inside the launch and passed.
    """
    import dataclasses

    import triton.language as tl  # pyright: ignore[reportMissingTypeStubs]
    from triton.runtime.jit import TensorWrapper  # pyright: ignore[reportMissingTypeStubs]

    if cls.__name__ == "constexpr":
        return cls(plain(value.value, ".value"))
    if dataclasses.is_dataclass(cls):  # a TensorDescriptor: its base, shape, strides
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **{k: plain(v, f".{k}") for k, v in fields.items()})
    if cls is TensorWrapper:
        return TensorWrapper(plain(value.base, ".base"), plain(value.dtype, ".dtype"))
    dtype: Any = tl.dtype
    if cls is dtype and type(value.name) is str:
        return dtype(value.name)
    if cls.__name__ == "ndarray":  # holds objects (dtype=object) and takes attributes' roles
        return _REFUSED
    if getattr(cls, "__dictoffset__", 1) == 0 and not hasattr(cls, "data_ptr"):
        return value
    return _REFUSED


class NotPlainArgument(TypeError):
    """An interpreted launch's argument whose methods the interpreter would call inside it."""


def _library_class(cls: type) -> bool:
    """Is ``cls`` a class of Triton, NumPy or torch itself (found where its names say it is)?"""
    module = sys.modules.get(cls.__module__)
    return (
        cls.__module__.split(".")[0] in ("triton", "numpy", "torch")
        and getattr(module, cls.__qualname__, None) is cls
    )


def plain_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """An interpreted launch's arguments, checked plain and handed over as the verifier's own.

    The interpreter reads its arguments inside the launch: it copies each tensor to the host
    and back through the tensor's own ``untyped_storage``, ``storage_offset``, ``size`` and
    ``stride``, and turns constants into NumPy values through their ``__index__`` and
    ``__int__``. Guard (b) leaves those copies to the interpreter
    (:func:`~upskills.verify.guards._launchers_op`), so an argument whose methods were a chain
    of C-level callables ran a copy there unseen: a tensor whose own attribute shadowed
    ``untyped_storage``, an ``int`` subclass whose ``__index__`` did, and a plain tensor that
    the grid (which runs inside the launch, after any check) gave such an attribute before the
    interpreter copied it back (each passed a transpose task, 2026-12-06).

    So each argument must be a ``torch.Tensor`` or an ``nn.Parameter`` of exactly that class
    with no attribute of its own, an exact ``int``, ``float``, ``bool``, ``str`` or ``None``, a
    launch argument of Triton, NumPy or torch themselves (:func:`_rebuilt_library_value`), or
    an exact tuple or list of these; anything else is refused before the launch. And the
    launch gets new objects the candidate holds no reference to: a fresh view of each tensor,
    a new descriptor, ``constexpr``, wrapper, ``tl.dtype``, tuple and list, so nothing the
    candidate runs later can change what the interpreter reads. On a GPU the launch wrapper
    rebuilds every argument before the launch the same way (``host_memory.launch_arguments``).
    """
    import torch

    from upskills.verify.candidate_timing import PLAIN_LEAVES, own_attributes

    def refuse(where: str, what: str) -> NotPlainArgument:
        return NotPlainArgument(
            f"kernel argument {where} is {what}; pass plain tensors and numbers"
        )

    def plain(value: Any, where: str) -> Any:
        cls: Any = type(cast(object, value))
        if cls is tuple or cls is list:
            items = cast("list[Any] | tuple[Any, ...]", value)
            return cast(Any, cls(plain(item, f"{where}[{i}]") for i, item in enumerate(items)))
        if cls in (torch.Tensor, torch.nn.Parameter):
            if own_attributes(value):
                raise refuse(
                    where, f"a tensor with {own_attributes(value)} attribute(s) of its own"
                )
            return torch.Tensor.view_as(value, value)
        if cls in PLAIN_LEAVES:
            return value
        if not _library_class(cls) or isinstance(value, torch.Tensor):
            raise refuse(where, f"a {cls.__module__}.{cls.__qualname__}")
        rebuilt = _rebuilt_library_value(value, cls, lambda item, at: plain(item, where + at))
        if rebuilt is _REFUSED:
            raise refuse(where, f"a {cls.__module__}.{cls.__qualname__} (not a launch argument)")
        return rebuilt

    return (
        tuple(plain(value, f"#{i}") for i, value in enumerate(args)),
        {k: v if k == "grid" else plain(v, k) for k, v in kwargs.items()},
    )
