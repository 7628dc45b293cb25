"""The dispatcher's kernel registrations, compared before and after the candidate's code ran.

A candidate can register a kernel of its own for an ATen op: ``torch.library`` reached by a
built name, or ``TORCH_LIBRARY_IMPL`` in a ``load_inline`` extension. That kernel runs wherever
the op runs in the candidate's process, the verifier's own steps there included: out of
``forward`` and out of the op recorder's sight. One that overrode ``aten::copy_`` filled
forward's empty output with ``torch.add`` while the verifier copied it into the judge's buffer,
and passed every CPU trial (found 2026-12-03, ``DISPATCH_OVERRIDE`` in
``tests/verify/test_adversarial.py``).

The snapshot is one hash of ``torch._C._dispatch_dump`` per op: every kernel registered for
it, by dispatch key, and where it was registered. About 3600 ops, 0.1 s. Ops that appear later
(a candidate's own namespace, a library's lazy registration) are not compared: only the kernels
of ops that existed before the candidate's import are PyTorch's to keep.
"""

from __future__ import annotations

import zlib
from typing import Any, NamedTuple


class Table(NamedTuple):
    """Every registered op and the crc32 of its dispatcher dump, in one order."""

    ops: list[str]
    digests: list[int]


def snapshot() -> Table:
    """The table now."""
    import torch

    dump = torch._C._dispatch_dump  # pyright: ignore[reportPrivateUsage]
    ops = list(torch._C._dispatch_get_all_op_names())  # pyright: ignore[reportPrivateUsage]
    table = Table(ops, [_digest(dump, op) for op in ops])
    _give_freed_memory_back()
    return table


def _give_freed_memory_back() -> None:
    """Give the memory the snapshot freed back to the kernel, so no verdict sees its bytes.

    Building the op list and the dumps frees a few hundred KB of the heap. A wrong kernel that
    leaves elements of its ``torch.empty`` output unwritten then showed those bytes (``got
    7.27e+31``), different from run to run, where it had shown zeros every time (a lift run and
    its resumed twin disagreed on such a message). ``malloc_trim(0)`` returns the freed pages
    (``madvise``), and pages given back read as zeros when reused. No-op off glibc.
    """
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def changed(before: Table) -> list[str]:
    """Ops of ``before`` whose registered kernels are no longer what they were (in order)."""
    import torch

    dump = torch._C._dispatch_dump  # pyright: ignore[reportPrivateUsage]
    ops = [op for op, d in zip(before.ops, before.digests, strict=True) if _digest(dump, op) != d]
    _give_freed_memory_back()
    return ops


def _digest(dump: Any, op: str) -> int:
    try:
        return zlib.crc32(dump(op).encode())
    except RuntimeError:  # gone from the dispatcher: changed
        return -1


REGISTRATIONS: list[tuple[str, str]] = []
"""Kernels registered through ``torch._C._DispatchModule`` since :func:`record_registrations`,
as (method, op name): a registration that removes itself before the next snapshot still shows
here. :func:`overriding` picks those that touch an op of a snapshot."""

_REGISTERING = (
    "impl",
    "impl_t_t",
    "impl_with_aoti_compile",
    "fallback",
    "fallback_fallthrough",
    "register_ad_inplace_or_view_fallback",
)
"""The methods of a dispatcher library handle that put a kernel in the table."""


def record_registrations() -> None:
    """Record every later kernel registration made from Python (idempotent).

    Every route from Python goes through a ``torch._C._DispatchModule`` handle:
    ``torch.library.Library`` makes one, and torch keeps some at module level (an ``aten``
    library of ``torch._meta_registrations``), which a candidate could reach without making its
    own. The handle's methods are wrapped, so the handle a candidate finds records too.
    """
    import torch

    cls = torch._C._DispatchModule  # pyright: ignore[reportPrivateUsage]
    for name in _REGISTERING:
        method = getattr(cls, name, None)
        if method is None or getattr(method, "_upskills_recorded", False):
            continue

        def recorded(
            self: object, *args: object, __method: Any = method, __name: str = name, **kw: object
        ) -> Any:
            REGISTRATIONS.append((__name, str(args[0]) if args else ""))
            return __method(self, *args, **kw)

        recorded._upskills_recorded = True  # pyright: ignore[reportFunctionMemberAccess]
        setattr(cls, name, recorded)


def overriding(before: Table) -> list[str]:
    """The :data:`REGISTRATIONS` that put a kernel on an op of ``before``, and every fallback.

    A kernel for an op that appeared later (a candidate's own namespace, or PyTorch's lazy
    ``triton::_triton_bsr_dense_mm_out``, which CUDA's first use in a process defines) changes
    nothing that ran before; a fallback serves every op of its dispatch key. A name is matched
    without its namespace and overload (a handle's ``impl`` may take ``copy_``), so a new
    overload of an existing op counts as touching it.
    """
    if not REGISTRATIONS:
        return []
    existing = {_base(op) for op in before.ops}
    return [
        f"{method}({name!r})"
        for method, name in REGISTRATIONS
        if "fallback" in method or _base(name) in existing
    ]


def _base(name: str) -> str:
    return name.rpartition("::")[2].partition(".")[0]
