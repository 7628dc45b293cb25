"""Host memory a GPU check's forward holds, or hands its kernels as raw addresses.

``guards.host_reach`` counts host *tensors* given to kernels and C++, and the op recorder counts
pinned allocations made inside a trial. What neither sees (thirty-fifth session's review, "what
is left"): pinned memory allocated outside the trials (at import, in ``__init__``) under a
keyword built from pieces, then handed to the kernels as a raw address (an integer to C++, an
object of the candidate's own with a ``data_ptr()`` to Triton's launcher). Two checks, in a GPU
check's trials only (guard ``python_fallback``; thirty-sixth session):

- :func:`host_addresses`: each integer argument that could be an address, and each non-tensor
  object with a ``data_ptr()``, is asked of the CUDA driver (``cuPointerGetAttribute``): pinned
  or registered host memory (``CU_MEMORYTYPE_HOST``) and managed memory count.
- :func:`launch_arguments`: what a GPU trial's Triton launch receives. Each pointer argument
  becomes a :class:`Pointer` holding the address the verifier read (and :func:`host_addresses`
  asks about), so an object cannot answer one address to the check and another to the
  launcher (thirty-seventh session).
- :func:`held_pinned_bytes`: the bytes PyTorch's pinned allocator has handed out and not taken
  back (``torch.cuda.host_memory_stats()["active_bytes.current"]``) at the end of a trial,
  wherever and however they were allocated.

Where the driver or the statistics are missing (no GPU, an older torch), both read 0.
"""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Callable
from typing import Any, cast

MIN_ADDRESS = 1 << 16
"""Integers below this are sizes and strides, not addresses: never asked of the driver."""

HELD_PINNED_LIMIT = 64 * 1024
"""Pinned bytes a GPU trial may end with. PyTorch's own ops may hold a small pinned block for a
moment (a count copied to the host); a host computation on a check's main shape needs megabytes."""

_MEMORY_TYPE, _IS_MANAGED = 2, 8  # CU_POINTER_ATTRIBUTE_MEMORY_TYPE, _IS_MANAGED
_HOST = 1  # CU_MEMORYTYPE_HOST
_GET_ATTRIBUTE: Any = None
"""The driver's ``cuPointerGetAttribute`` (False where there is none), loaded by
:func:`load_driver` before the candidate's import: a constant of the verifier's own module, so
the library snapshot (guard d) sees a candidate that rebinds it."""


def load_driver() -> Any:
    """``cuPointerGetAttribute`` through ``ctypes``, loaded once (False without a driver).

    Loading ``libcuda`` starts nothing (no ``cuInit``): torch loads the same library when it
    starts CUDA.
    """
    global _GET_ATTRIBUTE
    if _GET_ATTRIBUTE is None:
        try:
            function = ctypes.CDLL("libcuda.so.1").cuPointerGetAttribute
            function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
            function.restype = ctypes.c_int
            _GET_ATTRIBUTE = function  # pyright: ignore[reportConstantRedefinition]
        except (OSError, AttributeError):
            _GET_ATTRIBUTE = False  # pyright: ignore[reportConstantRedefinition]
    return _GET_ATTRIBUTE


def pointer_kind(address: int) -> str | None:
    """What the CUDA driver says ``address`` is.

    ``"host"`` (pinned or registered), ``"managed"``, ``"device"``, or None where the driver does
    not know the address (or there is no driver).
    """
    ask = load_driver()
    if not ask or not 0 < address < 1 << 64:
        return None
    kind = ctypes.c_uint(0)
    if ask(ctypes.byref(kind), _MEMORY_TYPE, address) != 0:
        return None
    managed = ctypes.c_uint(0)
    known = ask(ctypes.byref(managed), _IS_MANAGED, address) == 0
    if known and managed.value:
        return "managed"
    return "host" if kind.value == _HOST else "device"


def _addresses(items: list[Any]) -> list[int]:
    import torch

    found: list[int] = []
    for item in items:
        if isinstance(item, torch.Tensor | bool | str | bytes):
            continue
        if isinstance(item, int):
            value = int.__int__(item)  # an int subclass's own comparisons are not asked
            if value >= MIN_ADDRESS:
                found.append(value)
        elif callable(getattr(item, "data_ptr", None)):
            try:  # Triton's launcher takes any object with a data_ptr() as a pointer
                address = item.data_ptr()
            except Exception:  # noqa: BLE001 - the launch itself will say what is wrong
                continue
            if isinstance(address, int) and address >= MIN_ADDRESS:
                found.append(address)
    return found


def host_addresses(items: list[Any], kind: Callable[[int], str | None] | None = None) -> int:
    """Raw addresses of pinned, registered or managed host memory among ``items``.

    ``items``: a GPU check's kernel or C++ arguments, flattened (``guards.leaves``). ``kind``:
    the driver's answer (a test passes its own).
    """
    ask = kind or pointer_kind
    return sum(1 for address in _addresses(items) if ask(address) in ("host", "managed"))


def held_pinned_bytes() -> int:
    """Pinned host bytes PyTorch's allocator has handed out and not taken back (0 if unknown)."""
    import torch

    stats = getattr(torch.cuda, "host_memory_stats", None)
    if stats is None or not torch.cuda.is_initialized():
        return 0
    try:
        return int(stats().get("active_bytes.current", 0))
    except Exception:  # noqa: BLE001 - an older torch, or none built with CUDA
        return 0


class Pointer:
    """A pointer argument as a GPU trial's Triton launch receives it.

    Triton's launcher calls ``data_ptr()`` on any pointer argument, and so does the address
    check: an object of the candidate's own (a tensor with its own ``data_ptr``, a subclass, a
    ``__torch_function__`` or a mode that answers ``data_ptr``) could answer a device address
    to the check and a host address to the launcher. The launcher gets this instead: the
    address read once, and the element type (Triton specializes on ``dtype`` and on the
    address's alignment, both the same as the original's).
    """

    __slots__ = ("_address", "dtype")

    def __init__(self, address: int, dtype: Any) -> None:
        self._address = address
        self.dtype = dtype

    def data_ptr(self) -> int:
        """The address read from the original argument."""
        return self._address

    def __repr__(self) -> str:
        return f"Pointer({self._address:#x}, {self.dtype})"


def _pointer(item: Any) -> Any:
    """``item`` as the launcher gets it.

    A :class:`Pointer` for a tensor or an object with a ``data_ptr()``, a plain ``int`` for an
    int, anything else as it is.
    """
    import torch

    if isinstance(item, bool):
        return item
    if isinstance(item, int):
        return int.__int__(item)
    if isinstance(item, torch.Tensor):
        torch_c: Any = torch._C  # pyright: ignore[reportPrivateUsage]
        with torch_c.DisableTorchFunction():  # no subclass or mode answers for the tensor
            base = torch_c.TensorBase
            return Pointer(base.data_ptr(item), base.dtype.__get__(item))
    if callable(getattr(item, "data_ptr", None)) and hasattr(item, "dtype"):
        address = item.data_ptr()
        if isinstance(address, int):
            return Pointer(int.__int__(address), item.dtype)
    return item  # the launcher says what is wrong with it


def _rebuilt(value: Any) -> Any:
    if isinstance(value, tuple):  # Triton takes tuples (named or not) of arguments
        given = cast(tuple[Any, ...], value)
        items: list[Any] = [_rebuilt(item) for item in cast(Any, tuple).__iter__(given)]
        if hasattr(type(given), "_fields"):  # a namedtuple keeps its type, not its __new__
            return cast(Any, tuple).__new__(type(given), items)
        return tuple(items)
    return _pointer(value)


LAUNCH_OPTIONS = frozenset({"grid", "warmup"})
"""Keywords of ``JITFunction.run`` that are the launch's, not the kernel's arguments."""


def launch_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], after_grid: Callable[[], Any] = lambda: None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A GPU trial's ``JITFunction.run(self, *args, **kwargs)`` arguments, each pointer fixed.

    ``args[0]`` (the kernel) and the launch's own ``warmup`` stay; every other tensor or object
    with a ``data_ptr()`` becomes a :class:`Pointer`, every int a plain ``int``, every tuple a
    tuple of those (its own ``__iter__`` not asked). The grid becomes a callable that returns a
    tuple of plain ints and then calls ``after_grid``: the last candidate code a launch runs
    before Triton reads its launch hooks (:func:`launch_hooks`) is the grid's.
    """
    head, rest = args[:1], args[1:]
    named = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
    options = {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS}
    fixed = tuple(_rebuilt(arg) for arg in rest)
    fixed_named = {k: _rebuilt(v) for k, v in named.items()}
    pairs = zip((*fixed, *fixed_named.values()), (*rest, *named.values()), strict=True)
    originals = {id(new): old for new, old in pairs if isinstance(new, Pointer)}
    if "grid" in options:
        options["grid"] = _plain_grid(options["grid"], originals, after_grid)
    return head + fixed, {**fixed_named, **options}


def _plain_grid(
    grid: Any, originals: dict[int, Any], after: Callable[[], Any]
) -> Callable[..., tuple[int, ...]]:
    """``grid`` as a callable whose answer is a tuple of plain ints, checked by ``after``.

    Triton calls a grid callable with the launch's bound arguments; it gets what it would have
    got without the stand-ins (a grid that reads ``META["x"].shape`` still works). Its answer's
    items are read here, so no ``__len__`` or ``__getitem__`` of the candidate's runs after
    ``after``.
    """

    def plain_grid(meta: Any) -> tuple[int, ...]:
        given: Any = (
            grid({k: originals.get(id(v), v) for k, v in meta.items()}) if callable(grid) else grid
        )
        sizes = tuple(int(size) for size in given)
        after()
        return sizes

    return plain_grid


_SLOT_HOOKS = ("jit_cache_hook", "jit_post_compile_hook", "add_stages_inspection_hook")
_CHAIN_HOOKS = ("launch_enter_hook", "launch_exit_hook")
_KNOBS: Any = None
"""What Triton's launches read their hooks from, before the candidate's import: the module
whose ``knobs`` ``JITFunction.run`` reads, its ``knobs.runtime`` and that object's launch-hook
chains (False without Triton). Loaded by :func:`load_triton_knobs`; a constant of the verifier's
own module, watched like :data:`_GET_ATTRIBUTE`."""


def load_triton_knobs() -> Any:
    """``(triton.runtime.jit, its knobs.runtime, {chain name: chain})``, read once.

    False without Triton or its knobs.
    """
    global _KNOBS
    if _KNOBS is None:
        try:
            jit = importlib.import_module("triton.runtime.jit")
            runtime = jit.knobs.runtime
            chains = {name: getattr(runtime, name, None) for name in _CHAIN_HOOKS}
            _KNOBS = (jit, runtime, chains)  # pyright: ignore[reportConstantRedefinition]
        except (ImportError, AttributeError):
            _KNOBS = False  # pyright: ignore[reportConstantRedefinition]
    return _KNOBS


def launch_hooks(kernel: Any) -> int:
    """How many hooks would run code inside a GPU trial's launch of ``kernel`` after its check.

    A kernel's ``pre_run_hooks``, Triton's JIT hooks and its launch hooks
    (``triton.knobs.runtime``) run inside ``JITFunction.run`` after :func:`launch_arguments`
    read the addresses; a launch-exit hook runs after the kernel is queued, so it could move a
    stand-in back before :func:`moved` looks. The verifier sets none of them and an honest
    kernel needs none in a check. An object where Triton keeps a list (a hook chain's ``calls``,
    ``pre_run_hooks``) counts unless it is an empty ``list``: a subclass's ``__len__`` is not
    asked. The launch-hook chains must be the very objects Triton had before the candidate's
    import (:func:`load_triton_knobs`), read where ``JITFunction.run`` reads them: a chain of
    the candidate's own (a ``HookChain`` subclass with an empty ``calls`` and a ``__call__`` of
    its own) or another ``knobs.runtime`` counts.
    """
    count = _unless_empty(getattr(kernel, "pre_run_hooks", []))
    known = load_triton_knobs()
    if not known:  # no Triton, or one older than its knobs
        return count
    jit, runtime, chains = known
    if getattr(getattr(jit, "knobs", None), "runtime", None) is not runtime:
        return count + 1
    for name, chain in chains.items():
        hook = getattr(runtime, name, None)
        count += hook is not chain or (hook is not None and _unless_empty(hook.calls))
    return count + sum(getattr(runtime, name, None) is not None for name in _SLOT_HOOKS)


def _unless_empty(hooks: Any) -> int:
    return 0 if type(hooks) is list and not cast(Any, list).__len__(hooks) else 1


def held_addresses(items: list[Any]) -> list[tuple[Pointer, int]]:
    """The :class:`Pointer` stand-ins among ``items``, each with the address it holds now."""
    return [(item, item.data_ptr()) for item in items if isinstance(item, Pointer)]


def moved(held: list[tuple[Pointer, int]]) -> int:
    """How many stand-ins of ``held`` (:func:`held_addresses` before a launch) moved in it.

    Candidate code runs inside a launch (a kernel's ``pre_run_hooks``, its grid callable, its
    ``launch_metadata``) and could set a stand-in's address after the check asked about it.
    """
    return sum(1 for pointer, address in held if pointer.data_ptr() != address)
