"""Histogram (bincount) of int64 values: each program reads 1024 values and increments their
bins with a load, +1, store.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bincount(x_ptr, out_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    bins = tl.load(x_ptr + offs, mask=mask, other=0)
    counts = tl.load(out_ptr + bins, mask=mask, other=0)
    tl.store(out_ptr + bins, counts + 1, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, x):
        out = torch.zeros(self.num_bins, dtype=torch.int64, device=x.device)
        numel = x.numel()
        block = 1024
        _bincount[(triton.cdiv(numel, block),)](x, out, numel, BLOCK=block, num_warps=4)
        return out
