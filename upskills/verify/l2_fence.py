"""Persisting L2 lines are demoted before every timed call's flush (the CUDA driver, by ctypes).

A CUDA candidate can set part of L2 aside for persisting lines (the context's
``CU_LIMIT_PERSISTING_L2_CACHE_SIZE``) and put an access policy window with a persisting hit
property over its inputs on the stream. The window is the stream's: the judge's input copies
and L2 flush on that stream run under it, so the inputs' lines would outlive the flush and the
timed kernel read L2 where an honest one reads DRAM. The static check refuses the plain C++
spelling (rule ``l2_persistence``); C++ assembled at run time, or the window's fields set by raw
offsets, gets past it. This is the run-time fence behind it: ``cuCtxResetPersistingL2Cache``
("resets all persisting lines in cache to normal status; takes effect on function return",
``cuda.h``) before each flush, so the flush evicts the inputs like any other lines. A candidate
may still keep lines persisting *within* one call; only what crosses from one timed call to the
next is undone.

The entry points are resolved by :func:`prepare` in the candidate's process before the
candidate's module is imported, so nothing the candidate does to ``ctypes`` later reaches them,
and this module is one the candidate's library snapshot watches (a rebound function or entry
point is a ``library_patch``).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

PERSISTING_L2_LIMIT = 0x06
"""``CU_LIMIT_PERSISTING_L2_CACHE_SIZE`` (``cuda.h``, CUDA 11.0 and later)."""

NOT_SUPPORTED = 801
"""``CUDA_ERROR_NOT_SUPPORTED``: a device without persisting L2 lines has none to demote."""


class L2FenceError(RuntimeError):
    """The driver could not be reached, or refused a call, so the fence cannot be kept."""


_reset: Any = None
"""``cuCtxResetPersistingL2Cache``, once :func:`prepare` resolved it: a callable of one of the
verifier's own modules, so the candidate's library snapshot watches it (one rebound is caught)."""
_get_limit: Any = None
"""``cuCtxGetLimit``, once :func:`prepare` resolved it."""
_default: int | None = None
"""The context's persisting-L2 limit before the candidate was imported (:func:`record_default`)."""
_LOCK = threading.Lock()


def prepare() -> None:
    """Load the CUDA driver and resolve the two entry points now (idempotent).

    Raises:
        L2FenceError: ``libcuda.so.1`` cannot be loaded or lacks the entry points.
    """
    global _reset, _get_limit
    with _LOCK:
        if _reset is not None and _get_limit is not None:
            return
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            reset, get_limit = lib.cuCtxResetPersistingL2Cache, lib.cuCtxGetLimit
        except (OSError, AttributeError) as exc:
            raise L2FenceError(f"the CUDA driver's L2 calls cannot be loaded: {exc}") from exc
        reset.restype, reset.argtypes = ctypes.c_int, []
        get_limit.restype = ctypes.c_int
        get_limit.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
        _reset, _get_limit = reset, get_limit


def demote_persisting_lines() -> None:
    """Demote every persisting L2 line of the current context to normal, on return.

    Call it with the device idle (after a synchronisation): work still queued that runs under a
    persisting window would mark lines again after the call.

    Raises:
        L2FenceError: the driver cannot be loaded, or returned an error other than
            ``CUDA_ERROR_NOT_SUPPORTED``.
    """
    prepare()
    status = _reset()
    if status not in (0, NOT_SUPPORTED):
        raise L2FenceError(f"cuCtxResetPersistingL2Cache returned CUresult {status}")


def record_default() -> int | None:
    """Read and keep the current context's persisting-L2 limit, before any candidate code runs.

    The limit is not 0 by default everywhere: on the H200 of the twenty-seventh device session
    an honest kernel's context read 11.25 MiB (11796480 bytes) without asking for any, so only a
    limit above this default says a candidate raised it. None where it cannot be read (no
    driver, no context).
    """
    global _default
    try:
        _default = persisting_limit()
    except L2FenceError:
        _default = None
    return _default


def default_limit() -> int | None:
    """The limit :func:`record_default` read (None: not read)."""
    return _default


def persisting_limit() -> int:
    """Bytes of L2 the current context sets aside for persisting lines (0: none).

    Raises:
        L2FenceError: the driver cannot be loaded or refused the query.
    """
    prepare()
    value = ctypes.c_size_t()
    status = _get_limit(ctypes.byref(value), PERSISTING_L2_LIMIT)
    if status == NOT_SUPPORTED:
        return 0
    if status != 0:
        raise L2FenceError(f"cuCtxGetLimit(PERSISTING_L2_CACHE_SIZE) returned CUresult {status}")
    return int(value.value)
