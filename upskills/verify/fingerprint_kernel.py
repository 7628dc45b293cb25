# pyright: basic
"""The Triton kernel of :func:`upskills.verify.fingerprint.projections` (Triton has no stubs).

Made on first use and marked as the verifier's own (:mod:`upskills.verify.own_kernels`), like the
perturbation's kernel: the candidate process's launch counter leaves it out.
"""

from __future__ import annotations

from typing import Any

from upskills.verify.own_kernels import mark_own

_KERNEL: Any = None


def projection_kernel() -> Any:
    """One read of each element: its ``PROJECTIONS`` signed float64 sums, one row a program."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    import triton
    import triton.language as tl

    @triton.jit
    def fingerprint_kernel(x_ptr, out_ptr, n, salt, m1, m2, BLOCK: tl.constexpr, K: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        h = offs * m1 + salt  # the hash of fingerprint._hash: int64 arithmetic wraps around
        h = h ^ ((h >> 31) & 0xFFFFFFFF)
        h = h * m2
        h = h ^ ((h >> 29) & 0x7FFFFFFFF)
        x = tl.load(x_ptr + offs, mask=mask, other=0).to(tl.float64)
        for k in range(K):
            negative = ((h >> (40 + k)) & 1) != 0
            tl.store(out_ptr + pid * K + k, tl.sum(tl.where(negative, -x, x), axis=0))

    _KERNEL = mark_own(fingerprint_kernel)
    return _KERNEL
