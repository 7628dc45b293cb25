# pyright: basic
"""The Triton kernel of :func:`upskills.verify.perturb.fused_perturb` (Triton has no stubs).

It is made on first use, so importing the verifier costs nothing, and it is marked as the
verifier's own (:mod:`upskills.verify.own_kernels`): the candidate process's launch counter,
which counts every Triton launch as the candidate's, leaves it out.
"""

from __future__ import annotations

from typing import Any

from upskills.verify.own_kernels import mark_own

_KERNEL: Any = None


def fused_kernel() -> Any:
    """The kernel: one read and one write of each element, the hash of ``perturb._factors``."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    import triton
    import triton.language as tl

    @triton.jit
    def perturb_kernel(x_ptr, bits_ptr, n, salt, m1, m2, scale, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        h = tl.load(bits_ptr + offs, mask=mask, other=0).to(tl.int64)
        h = h * m1 + salt  # int64 arithmetic wraps around, as torch's does
        h = h ^ ((h >> 31) & 0xFFFFFFFF)
        h = h * m2
        h = h ^ ((h >> 29) & 0x7FFFFFFFF)
        u = (h >> 39) & 0xFFFFFF
        factor = u.to(tl.float32) * scale + 1.0  # u * scale is exact: one rounding, as torch
        x = tl.load(x_ptr + offs, mask=mask, other=0)
        if x.dtype == tl.float64:
            y = x * factor.to(tl.float64)
        else:
            y = (x.to(tl.float32) * factor).to(x.dtype)
        tl.store(x_ptr + offs, y, mask=mask)

    _KERNEL = mark_own(perturb_kernel)
    return _KERNEL
