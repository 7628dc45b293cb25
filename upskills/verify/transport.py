"""Tensors across the judge/candidate boundary without pickles.

The judge owns every buffer: inputs, the reference's state, and the buffers the candidate's
outputs are copied into. On CPU a buffer is a file in shared memory (``/dev/shm``) that both
processes map; on CUDA it is a device allocation made with the driver's VMM API, whose file
descriptor travels beside the message (:mod:`upskills.verify.cuda_vmm`; it opens in a process
of another user), or, where the driver cannot export one, a CUDA IPC handle. Either way the
candidate receives plain metadata (:class:`~upskills.verify.protocol.TensorHandle`) and maps
the memory itself: no Python object of the judge is rebuilt in the candidate's process, and no
object of the candidate's is rebuilt in the judge's.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from typing import Any, cast

from pydantic import BaseModel

from upskills.verify.cuda_vmm import Mapping, VmmError, close_fds
from upskills.verify.protocol import Arg, CudaIpc, CudaVmm, Scalar, Sequence, TensorHandle, fd_ids


def dtype_name(dtype: Any) -> str:
    """``torch.float32`` -> ``float32``."""
    return str(dtype).removeprefix("torch.")


def _torch_dtype(name: str) -> Any:
    import torch

    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return value


class SharedArena:
    """The judge's buffers for one check: shared-memory files on CPU, VMM allocations on a GPU.

    Neither has a name another process could find. A shared-memory file is made without one
    (``memfd_create``) and reaches the candidate only as a descriptor beside the message that
    names it, as a VMM allocation does; until 2026-12-03 they were files in ``/dev/shm`` open to
    every user, and a candidate that scanned the folder wrote into the inputs of another check
    running on the machine (``tests/verify/test_adversarial.py``).
    """

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}
        """Shared-memory allocation -> its descriptor (kept open: the only way to it)."""
        self._next = 0
        self._keep: list[Any] = []
        self._vmm: dict[int, weakref.ref[Mapping]] = {}
        self.vmm_failure: str | None = None
        """Why CUDA buffers fell back to IPC handles (None while VMM works)."""

    def cuda_empty(self, span: int, dtype: Any, device: int) -> tuple[Any, CudaVmm] | None:
        """A CUDA tensor of ``span`` elements in a new exportable allocation.

        None when the driver cannot make one: then :attr:`vmm_failure` says why, and IPC
        handles are used instead.
        """
        import torch

        if self.vmm_failure is not None:
            return None
        itemsize = torch.empty((), dtype=dtype).element_size()
        nbytes = max(1, span * itemsize)
        try:
            mapping = Mapping.create(nbytes, device)
        except VmmError as exc:
            self.vmm_failure = str(exc)
            return None
        alloc = self._new_alloc()
        self._vmm[alloc] = weakref.ref(mapping)
        flat = mapping.tensor()[:nbytes]
        return flat[: span * itemsize].view(dtype), CudaVmm(
            device=device, alloc=alloc, size=mapping.size
        )

    def fds_for(self, message: BaseModel) -> list[int]:
        """New descriptors of the allocations ``message`` names, in :func:`fd_ids` order.

        The caller closes them once sent.
        """
        fds: list[int] = []
        if not self._vmm and not self._fds:  # the IPC fallback: nothing to send, nothing to walk
            return fds
        try:
            for alloc in fd_ids(message.model_dump(mode="json")):
                if alloc in self._fds:
                    fds.append(os.dup(self._fds[alloc]))
                    continue
                mapping = self._vmm[alloc]()
                if mapping is None:
                    raise RuntimeError(f"buffer {alloc} was freed before the message naming it")
                fds.append(mapping.export())
        except BaseException:
            close_fds(fds)
            raise
        return fds

    def _new_alloc(self) -> int:
        self._next += 1
        return self._next - 1

    def empty(self, shape: list[int], stride: list[int], dtype: Any, span: int) -> Any:
        """A CPU tensor of ``span`` elements' storage in a new nameless shared-memory file.

        Returns ``(tensor, allocation number)``.
        """
        import torch

        itemsize = torch.empty((), dtype=dtype).element_size()
        nbytes = max(1, span * itemsize)
        fd = _nameless_file()
        try:
            os.ftruncate(fd, nbytes)
            mapped = mmap.mmap(fd, nbytes)
        except BaseException:
            os.close(fd)
            raise
        alloc = self._new_alloc()
        self._fds[alloc] = fd
        self._keep.append(mapped)
        flat = torch.frombuffer(mapped, dtype=torch.uint8, count=nbytes)
        base = flat[: span * itemsize].view(dtype) if span else flat[:0].view(dtype)
        return base.as_strided(shape, stride, 0), alloc

    def close(self) -> None:
        """Close every shared-memory descriptor and release every CUDA allocation still alive.

        Shared-memory mappings stay valid until the process exits.
        """
        close_fds(list(self._fds.values()))
        self._fds.clear()
        for ref in self._vmm.values():
            mapping = ref()
            if mapping is not None:
                mapping.close()
        self._vmm.clear()


def _nameless_file() -> int:
    """A read-write file no other process can open by name (``memfd``; else unlinked at once)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("upskills-buffer", os.MFD_CLOEXEC)
    fd, path = tempfile.mkstemp(prefix="upskills-")
    os.unlink(path)
    return fd


def _span(tensor: Any) -> int:
    """Elements of storage a tensor's view reaches (from its first element)."""
    if tensor.numel() == 0:
        return 0
    return 1 + sum(
        (size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    )


def share(tensor: Any, arena: SharedArena) -> tuple[Any, TensorHandle]:
    """A judge-owned shared copy of ``tensor`` and its handle (same shape, strides, values).

    Args:
        tensor: A CPU or CUDA tensor (non-negative strides).
        arena: Where CPU copies are allocated.

    Returns:
        ``(shared tensor, handle)``: the judge keeps the tensor, the candidate gets the handle.
    """
    import torch

    shape = list(tensor.shape)
    stride = list(tensor.stride())
    if any(s < 0 for s in stride):
        tensor, stride = tensor.contiguous(), list(tensor.contiguous().stride())
    span = _span(tensor)
    where: dict[str, Any] = {}
    if tensor.device.type == "cpu":
        base, where["shm_alloc"] = arena.empty(shape, stride, tensor.dtype, span)
    elif (made := arena.cuda_empty(span, tensor.dtype, tensor.device.index or 0)) is not None:
        base, where["vmm"] = made
    else:
        base = torch.empty(max(span, 1), dtype=tensor.dtype, device=tensor.device)
    shared = base.as_strided(shape, stride, 0)
    shared.copy_(tensor)
    if not where:
        return shared, cuda_handle(shared)
    handle = TensorHandle(
        dtype=dtype_name(tensor.dtype),
        shape=shape,
        stride=stride,
        nbytes=span * tensor.element_size(),
        **where,
    )
    return shared, handle


def buffer_like(tensor: Any, arena: SharedArena) -> tuple[Any, TensorHandle]:
    """A judge-owned contiguous buffer shaped like ``tensor``, filled with NaN or a poison value.

    The candidate's outputs are copied into such buffers; the poison shows any element left
    unwritten.
    """
    import torch

    like = torch.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    poison(like)
    return share(like, arena)


def poison(tensor: Any) -> None:
    """Fill with NaN (floats), the dtype's minimum (ints) or True (bool)."""
    import torch

    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).min)


def cuda_handle(tensor: Any) -> TensorHandle:
    """The IPC handle of a CUDA tensor's storage."""
    storage = tensor.untyped_storage()
    (device, handle, size, offset, ref_handle, ref_offset, event, sync) = storage._share_cuda_()
    return TensorHandle(
        dtype=dtype_name(tensor.dtype),
        shape=list(tensor.shape),
        stride=list(tensor.stride()),
        offset=tensor.storage_offset(),
        nbytes=storage.nbytes(),
        cuda=CudaIpc(
            device=int(device),
            handle=bytes(handle).hex(),
            storage_size=int(size),
            storage_offset=int(offset),
            ref_counter_handle=bytes(ref_handle).hex(),
            ref_counter_offset=int(ref_offset),
            event_handle=bytes(event or b"").hex(),
            event_sync_required=bool(sync),
        ),
    )


def open_handle(handle: TensorHandle) -> Any:
    """The candidate's view of a judge-owned tensor (maps the memory; copies nothing)."""
    import torch

    dtype = _torch_dtype(handle.dtype)
    if handle.shm_alloc is not None:
        fd = _RECEIVED.get(handle.shm_alloc)
        if fd is None:
            raise ValueError(f"no file descriptor came with buffer {handle.shm_alloc}")
        size = os.fstat(fd).st_size
        mapped = mmap.mmap(fd, size)  # the descriptor is closed with the request's others
        _MAPPINGS.append(mapped)
        flat = torch.frombuffer(mapped, dtype=torch.uint8, count=size)
        itemsize = torch.empty((), dtype=dtype).element_size()
        usable = (size // itemsize) * itemsize
        base = flat[:usable].view(dtype)
        return base.as_strided(handle.shape, handle.stride, handle.offset)
    if handle.vmm is not None:
        v = handle.vmm
        fd = _RECEIVED.get(v.alloc)
        if fd is None:
            raise ValueError(f"no file descriptor came with buffer {v.alloc}")
        torch.cuda.init()
        torch.cuda.set_device(v.device)
        torch.empty(0, device=f"cuda:{v.device}")  # makes the device's context current
        mapping = Mapping.open(fd, v.size, v.device)
        _MAPPED.append(mapping)
        itemsize = torch.empty((), dtype=dtype).element_size()
        base = mapping.tensor()[: (min(handle.nbytes, v.size) // itemsize) * itemsize].view(dtype)
        out = base.as_strided(handle.shape, handle.stride, handle.offset)
        _OPENED.append(out)
        return out
    if handle.cuda is not None:
        c = handle.cuda
        torch.cuda.init()  # opening an IPC handle needs an initialised CUDA context
        if OTHER_USER:
            raise ValueError(
                "the judge shared CUDA IPC handles, which do not open in a process of another "
                "user, because its driver could not export VMM memory; run with "
                "UPSKILLS_SANDBOX_USER=none to keep candidates under the judge's user"
            )
        storage = torch.UntypedStorage._new_shared_cuda(  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType]
            c.device,
            bytes.fromhex(c.handle),
            c.storage_size,
            c.storage_offset,
            bytes.fromhex(c.ref_counter_handle),
            c.ref_counter_offset,
            bytes.fromhex(c.event_handle),
            c.event_sync_required,
        )
        out = torch.empty(0, dtype=dtype, device=f"cuda:{c.device}")
        out.set_(storage, handle.offset, handle.shape, handle.stride)
        _OPENED.append(out)
        return out
    raise ValueError("tensor handle names neither shared memory nor a CUDA IPC handle")


OTHER_USER = False
"""This process is a candidate that dropped to another user than the judge's."""

_MAPPINGS: list[Any] = []
"""Mappings opened in this process (kept alive as long as the tensors over them)."""

_OPENED: list[Any] = []
"""CUDA tensors opened for the request being served. Releasing the last reference to an IPC
mapping unmaps it at once, even while a copy into it is still queued: they are kept until
:func:`release_opened` has synchronised."""

_MAPPED: list[Mapping] = []
"""VMM allocations mapped for the request being served (unmapped by :func:`release_opened`,
whatever still refers to them: a kept view then faults instead of reaching judge memory)."""

_RECEIVED: dict[int, int] = {}
"""Allocation number -> file descriptor, for the request being served."""


def receive_fds(raw: dict[str, object], fds: list[int]) -> None:
    """Pair the descriptors that came with a request with the allocations it names."""
    ids = fd_ids(raw)
    if len(ids) != len(fds):
        close_fds(fds)
        raise ValueError(f"{len(fds)} file descriptors came for {len(ids)} buffers")
    _RECEIVED.update(zip(ids, fds, strict=True))


def keep_mapped() -> list[Mapping]:
    """Take the VMM mappings of the request being served out of :func:`release_opened`'s reach.

    A CUDA graph captured on the judge's buffers replays at their addresses in later requests;
    the caller closes the mappings once the graph is gone.
    """
    kept = list(_MAPPED)
    _MAPPED.clear()
    return kept


def release_opened() -> None:
    """Synchronise the device, then drop the CUDA mappings opened for the last request."""
    if _OPENED or _MAPPED:
        import torch

        torch.cuda.synchronize()
        _OPENED.clear()
        for mapping in _MAPPED:
            mapping.close()
        _MAPPED.clear()
    close_fds(list(_RECEIVED.values()))
    _RECEIVED.clear()


def clone_tree(value: Any) -> Any:
    """A copy of tensors nested in lists and tuples (other values shared)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list | tuple):
        seq = cast("list[Any] | tuple[Any, ...]", value)
        return type(seq)(clone_tree(v) for v in seq)
    return value


def copy_into(dst: list[Any], src: list[Any]) -> None:
    """Copy the tensor values of ``src`` into ``dst``'s tensors (same nesting and shapes)."""
    import torch

    for d, s in zip(dst, src, strict=True):
        if isinstance(d, torch.Tensor):
            d.copy_(s)
        elif isinstance(d, list | tuple):
            copy_into(list(cast("list[Any] | tuple[Any, ...]", d)), list(s))


def export_args(values: list[Any], arena: SharedArena) -> tuple[list[Any], list[Arg]]:
    """Shared copies of (nested) arguments and their wire form."""
    import torch

    shared: list[Any] = []
    wire: list[Arg] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            tensor, handle = share(value, arena)
            shared.append(tensor)
            wire.append(handle)
        elif isinstance(value, list | tuple):
            seq = cast("list[Any] | tuple[Any, ...]", value)
            inner, inner_wire = export_args(list(seq), arena)
            shared.append(type(seq)(inner))
            wire.append(Sequence(items=inner_wire, tuple=isinstance(seq, tuple)))
        elif value is None or isinstance(value, int | float | bool | str):
            shared.append(value)
            wire.append(Scalar(value=value))
        else:
            raise TypeError(
                f"the task passes a {type(value).__name__} argument; only tensors, numbers, "
                "strings and lists of them can cross to the candidate"
            )
    return shared, wire


def import_args(wire: list[Arg]) -> list[Any]:
    """The candidate's view of arguments sent with :func:`export_args`."""
    out: list[Any] = []
    for arg in wire:
        if isinstance(arg, TensorHandle):
            out.append(open_handle(arg))
        elif isinstance(arg, Sequence):
            inner = import_args(arg.items)
            out.append(tuple(inner) if arg.tuple else inner)
        else:
            out.append(arg.value)
    return out
