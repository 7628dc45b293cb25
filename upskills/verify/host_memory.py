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
- :func:`held_pinned_bytes`: the bytes PyTorch's pinned allocator has handed out and not taken
  back (``torch.cuda.host_memory_stats()["active_bytes.current"]``) at the end of a trial,
  wherever and however they were allocated.

Where the driver or the statistics are missing (no GPU, an older torch), both read 0.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

MIN_ADDRESS = 1 << 16
"""Integers below this are sizes and strides, not addresses: never asked of the driver."""

HELD_PINNED_LIMIT = 64 * 1024
"""Pinned bytes a GPU trial may end with. PyTorch's own ops may hold a small pinned block for a
moment (a count copied to the host); a host computation on a check's main shape needs megabytes."""

_MEMORY_TYPE, _IS_MANAGED = 2, 8  # CU_POINTER_ATTRIBUTE_MEMORY_TYPE, _IS_MANAGED
_HOST = 1  # CU_MEMORYTYPE_HOST
_driver: list[Any] = []  # [the loaded libcuda, or None]


def _libcuda() -> Any:
    if not _driver:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
            lib.cuPointerGetAttribute.restype = ctypes.c_int
            _driver.append(lib)
        except (OSError, AttributeError):
            _driver.append(None)
    return _driver[0]


def pointer_kind(address: int) -> str | None:
    """What the CUDA driver says ``address`` is.

    ``"host"`` (pinned or registered), ``"managed"``, ``"device"``, or None where the driver does
    not know the address (or there is no driver).
    """
    lib = _libcuda()
    if lib is None or not 0 < address < 1 << 64:
        return None
    kind = ctypes.c_uint(0)
    if lib.cuPointerGetAttribute(ctypes.byref(kind), _MEMORY_TYPE, address) != 0:
        return None
    managed = ctypes.c_uint(0)
    known = lib.cuPointerGetAttribute(ctypes.byref(managed), _IS_MANAGED, address) == 0
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
            if item >= MIN_ADDRESS:
                found.append(item)
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
