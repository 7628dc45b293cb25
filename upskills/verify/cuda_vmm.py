"""GPU memory the judge owns and a candidate of another user can map (CUDA's VMM API).

CUDA IPC handles (``cudaIpcOpenMemHandle``, what torch shares storages with) do not open in a
process of another user ("mapping of buffer object failed", seen on the H200), so a candidate
had to run as the judge's user on a GPU, where it could write the judge's files. Memory made
with the driver's virtual memory API and exported as a POSIX file descriptor
(``cuMemCreate`` + ``cuMemExportToShareableHandle``) does cross users: the descriptor travels
over the judge's socket (``SCM_RIGHTS``) and the candidate imports and maps it
(``benchmarks/verifier_v2/cross_user_cuda_probe.py`` showed it on the H200).

Both sides see the memory as an ordinary CUDA tensor (through ``__cuda_array_interface__``).
Every call's status is checked; a failure raises :class:`VmmError` naming the call.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

from upskills.verify.clearing import given_back

PINNED, POSIX_FD, ON_DEVICE, READ_WRITE = 1, 1, 1, 3
"""``CU_MEM_ALLOCATION_TYPE_PINNED``, ``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``,
``CU_MEM_LOCATION_TYPE_DEVICE``, ``CU_MEM_ACCESS_FLAGS_PROT_READWRITE``."""


class VmmError(RuntimeError):
    """A driver call of the VMM path failed."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _Prop(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_DRIVER: dict[str, Any] = {}
_LOCK = threading.Lock()
_GRANULARITY: dict[int, int] = {}


def _call(name: str, *args: Any) -> None:
    with _LOCK:
        if "lib" not in _DRIVER:
            try:
                _DRIVER["lib"] = ctypes.CDLL("libcuda.so.1")
            except OSError as exc:
                raise VmmError(f"the CUDA driver library cannot be loaded: {exc}") from exc
    status = getattr(_DRIVER["lib"], name)(*args)
    if status != 0:
        raise VmmError(f"{name} returned CUresult {status}")


def _prop(device: int) -> _Prop:
    prop = _Prop()
    prop.type = PINNED
    prop.requestedHandleTypes = POSIX_FD
    prop.location = _Location(ON_DEVICE, device)
    return prop


def granularity(device: int) -> int:
    """Bytes an allocation's size is rounded up to on ``device``."""
    if device not in _GRANULARITY:
        value = ctypes.c_size_t()
        _call("cuMemGetAllocationGranularity", ctypes.byref(value), ctypes.byref(_prop(device)), 0)
        _GRANULARITY[device] = int(value.value)
    return _GRANULARITY[device]


class Mapping:
    """One allocation mapped into this process; :meth:`close` unmaps and releases it.

    Made by :meth:`create` (the judge: new memory, exportable) or :meth:`open` (the candidate:
    memory the judge exported). The tensor views from :meth:`tensor` must not outlive it.
    """

    def __init__(self, handle: int, size: int, device: int, owner: bool = False) -> None:
        self.handle = handle
        self.size = size
        self.device = device
        self.owner = owner
        """Made here (:meth:`create`): closing it gives the memory back to the driver."""
        self.ptr = 0
        ptr = ctypes.c_ulonglong()
        zero = ctypes.c_ulonglong(0)
        try:
            _call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(size), 0, zero, zero)
            self.ptr = int(ptr.value)
            _call("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), self._h(), zero)
            access = _Access(_Location(ON_DEVICE, device), READ_WRITE)
            _call("cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(access), 1)
        except VmmError:
            self.close()
            raise

    def _h(self) -> ctypes.c_ulonglong:
        return ctypes.c_ulonglong(self.handle)

    @classmethod
    def create(cls, nbytes: int, device: int) -> Mapping:
        """New device memory of at least ``nbytes`` (rounded up to the granularity)."""
        g = granularity(device)
        size = max(g, (nbytes + g - 1) // g * g)
        handle = ctypes.c_ulonglong()
        _call(
            "cuMemCreate",
            ctypes.byref(handle),
            ctypes.c_size_t(size),
            ctypes.byref(_prop(device)),
            ctypes.c_ulonglong(0),
        )
        return cls(int(handle.value), size, device, owner=True)

    @classmethod
    def open(cls, fd: int, size: int, device: int) -> Mapping:
        """Map memory another process exported as ``fd`` (the descriptor is not closed here)."""
        handle = ctypes.c_ulonglong()
        _call(
            "cuMemImportFromShareableHandle",
            ctypes.byref(handle),
            ctypes.c_void_p(fd),
            POSIX_FD,
        )
        return cls(int(handle.value), size, device)

    def export(self) -> int:
        """A new file descriptor for this allocation (the caller closes it)."""
        fd = ctypes.c_int(-1)
        _call(
            "cuMemExportToShareableHandle",
            ctypes.byref(fd),
            self._h(),
            POSIX_FD,
            ctypes.c_ulonglong(0),
        )
        return int(fd.value)

    def tensor(self) -> Any:
        """A ``uint8`` CUDA tensor over the whole mapping (it keeps this object alive)."""
        import torch

        return torch.as_tensor(_Interface(self), device=f"cuda:{self.device}")

    def close(self) -> None:
        """Unmap and release (idempotent). Work still queued on the memory finishes first."""
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            try:
                _call("cuCtxSynchronize")
            finally:
                _call("cuMemUnmap", ctypes.c_ulonglong(ptr), ctypes.c_size_t(self.size))
                _call("cuMemAddressFree", ctypes.c_ulonglong(ptr), ctypes.c_size_t(self.size))
        if self.handle:
            handle, self.handle = self.handle, 0
            _call("cuMemRelease", ctypes.c_ulonglong(handle))
            if self.owner:  # the judge's; a candidate's mapping of it gives nothing back
                given_back(self.size)  # the driver clears it once no process maps it

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
            pass


class _Interface:
    """``__cuda_array_interface__`` of a mapping as bytes (torch keeps a reference to it)."""

    def __init__(self, mapping: Mapping) -> None:
        self.mapping = mapping
        self.__cuda_array_interface__ = {
            "shape": (mapping.size,),
            "typestr": "|u1",
            "data": (mapping.ptr, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }


def close_fds(fds: list[int]) -> None:
    """Close descriptors, ignoring ones already closed."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
