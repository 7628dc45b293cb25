"""Honest Triton candidate for KernelBench level 1 26_GELU_: one elementwise pass.

A benchmark fixture for benchmarks/verifier_vs_kernelbench.py (hand-written; not a teacher
trace): read x once, write the result once, 16 bytes per thread per access.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, PARAM, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.param = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _kernel[(triton.cdiv(n, 4096),)](x, out, n, self.param, BLOCK=4096, num_warps=8)
        return out
