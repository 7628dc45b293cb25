"""bincount, privatized: each program builds a block histogram on chip, then flushes it with atomics.

A program counts ``ITERS * BLOCK`` values with ``tl.histogram`` into int32 bins held on chip and
adds them to the int64 output with one atomic per bin, instead of one global atomic per value.
Values are assumed to lie in ``[0, num_bins)``, as the task's inputs do.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _histogram_kernel(
    x_ptr, counts_ptr, numel, num_bins, BLOCK: tl.constexpr, ITERS: tl.constexpr, BINS: tl.constexpr
):
    pid = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    bins = tl.arange(0, BINS)
    hist = tl.zeros([BINS], dtype=tl.int32)
    for i in range(ITERS):
        start = (pid * ITERS + i) * BLOCK
        mask = start + offs < numel
        # Lanes past the end count as value 0; their count is taken off bin 0 below.
        x = tl.load(x_ptr + start + offs, mask=mask, other=0).to(tl.int32)
        hist += tl.histogram(x, BINS)
        n_pad = BLOCK - tl.sum(mask.to(tl.int32), axis=0)
        hist -= tl.where(bins == 0, n_pad, 0)
    tl.atomic_add(
        counts_ptr + bins, hist.to(tl.int64), mask=(bins < num_bins) & (hist != 0), sem="relaxed"
    )


class ModelNew(nn.Module):
    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, x):
        x = x.contiguous()
        counts = torch.zeros(self.num_bins, dtype=torch.int64, device=x.device)
        numel = x.numel()
        block = 4096
        iters = 16 if x.is_cuda else 4
        grid = (triton.cdiv(numel, block * iters),)
        _histogram_kernel[grid](
            x,
            counts,
            numel,
            self.num_bins,
            BLOCK=block,
            ITERS=iters,
            BINS=triton.next_power_of_2(self.num_bins),
            num_warps=8,
        )
        return counts
