"""Histogram (bincount) of int64 values: 64 private int32 copies of the histogram in global
memory (256 KB at 1024 bins, L2-resident); program p adds into copy p % 64 with per-element
atomics, spreading contention over 64x more addresses, then one kernel folds the copies into
the int64 result. No tl.histogram, so no per-element cost that grows with the bin count.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

COPIES = 64


@triton.jit
def _bincount_copies(x_ptr, copies_ptr, numel, num_bins, COPIES: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    vals = tl.load(x_ptr + offs, mask=mask, other=0)
    ones = tl.full([BLOCK], 1, dtype=tl.int32)
    tl.atomic_add(copies_ptr + (pid % COPIES) * num_bins + vals, ones, mask=mask)


@triton.jit
def _fold_copies(copies_ptr, out_ptr, num_bins, COPIES: tl.constexpr, BLOCK: tl.constexpr):
    bins = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = bins < num_bins
    acc = tl.zeros([BLOCK], dtype=tl.int64)
    for c in range(COPIES):
        acc += tl.load(copies_ptr + c * num_bins + bins, mask=ok, other=0).to(tl.int64)
    tl.store(out_ptr + bins, acc, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, x):
        copies = torch.zeros((COPIES, self.num_bins), dtype=torch.int32, device=x.device)
        out = torch.empty(self.num_bins, dtype=torch.int64, device=x.device)
        numel = x.numel()
        block = 2048
        _bincount_copies[(triton.cdiv(numel, block),)](
            x, copies, numel, self.num_bins, COPIES=COPIES, BLOCK=block, num_warps=8
        )
        fold_block = 256
        _fold_copies[(triton.cdiv(self.num_bins, fold_block),)](
            copies, out, self.num_bins, COPIES=COPIES, BLOCK=fold_block, num_warps=4
        )
        return out
