"""Histogram (bincount) of int64 values: each program builds a private histogram of 64K values
with tl.histogram (on-chip) and then adds it to the global one with one atomic per bin, so 64M
inputs cost ~1M global atomics instead of 64M.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bincount_private(
    x_ptr,
    out_ptr,
    numel,
    num_bins,
    BLOCK: tl.constexpr,
    ITERS: tl.constexpr,
    NUM_BINS: tl.constexpr,
):
    base = tl.program_id(0).to(tl.int64) * (BLOCK * ITERS)
    local = tl.zeros([NUM_BINS], dtype=tl.int32)
    padded = tl.zeros([], dtype=tl.int32)
    for i in range(ITERS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        mask = offs < numel
        # Out-of-range slots read as bin 0 and are taken back out of bin 0 below.
        vals = tl.load(x_ptr + offs, mask=mask, other=0).to(tl.int32)
        local += tl.histogram(vals, NUM_BINS)
        padded += tl.sum((~mask).to(tl.int32), axis=0)
    bins = tl.arange(0, NUM_BINS)
    local = local - tl.where(bins == 0, padded, 0)
    tl.atomic_add(out_ptr + bins, local.to(tl.int64), mask=bins < num_bins)


class ModelNew(nn.Module):
    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, x):
        out = torch.zeros(self.num_bins, dtype=torch.int64, device=x.device)
        numel = x.numel()
        block, iters = 4096, 16
        grid = (triton.cdiv(numel, block * iters),)
        _bincount_private[grid](
            x,
            out,
            numel,
            self.num_bins,
            BLOCK=block,
            ITERS=iters,
            NUM_BINS=triton.next_power_of_2(self.num_bins),
            num_warps=8,
        )
        return out
