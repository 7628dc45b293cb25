"""Tensor data read on the host while ``forward`` runs, counted for guard (b) ``python_fallback``.

A forward that reads its inputs into Python and computes there is a Python fallback, not a
kernel, however it launches a kernel beside it. The op recorder counts the element reads that
go through the dispatcher (``_local_scalar_dense``; a storage read element by element is one of
them: its ``__getitem__`` reads through a tensor); these wrappers count the ways around it,
each read as a number of elements (:attr:`~upskills.verify.candidate_host._Watch.scalars`):

- a tensor's own conversions: ``tolist``, ``numpy``, ``item``, ``__array__``, ``__dlpack__``;
- a tensor serialised (``torch.save`` and ``pickle``): ``PyTorchFileWriter.write_record`` for
  each storage's record, ``UntypedStorage._write_file`` for the legacy format pickling uses.
  Found 2026-12-05 (thirty-third session's review): ``torch.save`` into a ``BytesIO``, the
  storage's bytes read back through ``zipfile`` and ``struct``, the add done in Python and
  copied out by a Triton kernel passed every CPU trial;
- a storage's shared-memory handle (``_share_fd_cpu_``, ``_share_filename_cpu_``,
  ``_get_shared_fd``): a file descriptor or name Python maps with ``mmap`` and reads
  (thirty-fourth session's review; ``guards.python_memory`` sees the copy into shared memory
  too).

Calls from inside a kernel launch (the Triton interpreter converts to NumPy) do not count.
Installed before the candidate's import; :mod:`upskills.verify.library_snapshot` watches the
classes, so a wrapper put back is guard (d).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def wrap_host_reads(watch: Any) -> None:
    """Install the counting wrappers; ``watch`` has ``active``, ``scalars`` and ``counter``."""
    import torch

    def wrap(cls: Any, name: str, elements: Callable[..., int]) -> None:
        original = getattr(cls, name, None)
        if original is None:
            return

        def counted(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            if watch.active and watch.counter.state.depth == 0:
                watch.scalars += max(1, elements(*args, **kwargs))
            return __original(*args, **kwargs)

        setattr(cls, name, counted)

    for name in ("tolist", "numpy", "item", "__array__", "__dlpack__"):
        wrap(torch.Tensor, name, _numel)
    wrap(torch.UntypedStorage, "_write_file", _storage_elements)
    for name in ("_share_fd_cpu_", "_share_filename_cpu_", "_get_shared_fd"):
        wrap(torch.UntypedStorage, name, _storage_elements)  # a handle Python maps and reads
    writer = getattr(torch._C, "PyTorchFileWriter", None)  # pyright: ignore[reportPrivateUsage]
    if writer is not None:
        wrap(writer, "write_record", _record_elements)


def _numel(tensor: Any, *args: Any, **kwargs: Any) -> int:
    return int(tensor.numel())


def _storage_elements(storage: Any, *args: Any, **kwargs: Any) -> int:
    return int(storage.nbytes()) // 4


def _record_elements(self: Any, name: Any, data: Any, size: Any = 0, *args: Any, **kw: Any) -> int:
    """A ``torch.save`` record's elements (4-byte words): a storage's data, not the pickle."""
    return int(size) // 4 if "data/" in str(name) else 0
