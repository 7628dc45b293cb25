"""Words and modules a candidate's source holds only to compute on the host, or beside PyTorch.

Split from :mod:`upskills.verify.static` (2026-12-05, thirty-fifth session), which holds the
visitor; this module holds the words, read in every name, attribute, keyword and string
literal of the source, C++ in strings included.

- NumPy's array protocol (``__array_interface__``): NumPy over a tensor's ``data_ptr()``
  (thirty-fourth session).
- Host memory a GPU kernel reaches, and copies to the host by name (thirty-fifth session's
  review). A kernel writes its inputs into pinned (``torch.empty(..., pin_memory=True)``),
  registered (``cudaHostRegister``, reachable from Python as ``torch.cuda.cudart()``) or
  managed (``cudaMallocManaged``, ``__managed__``) memory; an extension's C++ loop adds them
  on the host, and a kernel copies the sum back. No aten op computes and no copy op runs, so
  the op rules see nothing, and nothing copies a GPU tensor to the host for
  ``guards.to_host`` to count. The same C++ loop after a ``cudaMemcpy`` to the host of memory
  the extension allocates itself did likewise. A forward's kernels have no use for host memory
  the GPU can reach: its inputs and outputs are device tensors. Behind these words stand the
  extension's imports (``libraries.HOST_MEMORY_IMPORTS``) and, at run time, the pinned
  allocations and host tensors handed to a GPU check's kernels (``guards``) and the GPU's own
  copy records (``shadow_ops.host_copy_bytes``).
- Other libraries' CUDA APIs (:data:`OTHER_GPU_APIS`, refused as imports by
  ``static.FORBIDDEN_MODULES``).
"""

from __future__ import annotations

OTHER_GPU_APIS = dict.fromkeys(
    ("cuda", "cupy", "cupyx", "numba", "pycuda", "jax", "jaxlib", "tensorflow"),
    "(b) another library's CUDA API runs copies, streams and kernels no op recorder sees "
    "(and its own kernels are not the candidate's)",
)
"""Modules that reach CUDA from Python beside PyTorch and Triton (cuda-python's
``cuda.bindings``: ``cuMemcpy`` to any host address, ``cuMemHostAlloc``, streams of its own),
or compute with a framework of their own. Not installed where the verifier runs today; refused
before they are (thirty-fifth session's review)."""

NUMPY_WAYS = "(b) NumPy reached another way reads tensor memory outside your kernel"
"""A module's ``np`` (``torch.nn.functional.np``), an array protocol's name: NumPy's add over
``__array_interface__`` and ``data_ptr()`` passed every CPU trial (2026-12-05)."""

HOST_MEMORY_WAYS = (
    "(b) host memory a GPU kernel reaches, or a copy to the host, serves a computation on the "
    "host, not a kernel"
)

HOST_MEMORY_PARTS = (
    "pin_memory",
    "pinned_memory",
    "HostRegister",
    "HostAlloc",
    "MallocHost",
    "AllocHost",
    "HostGetDevicePointer",
    "MallocManaged",
    "AllocManaged",
    "__managed__",
    "ManagedVar",
    "HostAllocator",
    "PinnedMemoryAllocator",
    "DeviceToHost",
    "MemcpyDtoH",
    "FromSymbol",
    "PluggableAllocator",
    "change_current_allocator",
)
"""Parts of a name or string that only host memory a kernel reaches (pinned, registered,
managed), a copy to the host named by its direction, or an allocator of the candidate's own
(which can hand out managed memory) contain."""

HOST_MEMORY_NAMES = frozenset({"cudart"})
"""Whole names: ``torch.cuda.cudart()`` is the CUDA runtime from Python
(``cudaHostRegister`` among its functions)."""


def word_rule(word: str) -> tuple[str, str] | None:
    """``(why, rule)`` when a name, attribute or string literal serves a host computation."""
    if "__array_" in word:
        return f"{NUMPY_WAYS}: {word[:60]!r}", "python_fallback"
    hit = next((part for part in HOST_MEMORY_PARTS if part in word), None)
    if hit is None and word in HOST_MEMORY_NAMES:
        hit = word
    if hit is not None:
        return f"{HOST_MEMORY_WAYS}: {hit!r}", "python_fallback"
    return None
