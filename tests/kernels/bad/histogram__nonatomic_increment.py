"""BAD: counts are incremented with a plain load + store instead of an atomic add.

Equal values in the same block (or in blocks running at the same time on a GPU) read the same
old count and each store old + 1, so increments are lost. In the interpreter a program runs
its block at once: every bin hit k > 1 times within a block gains 1 instead of k, a
deterministic mismatch on every variant.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = ["guard", "mismatch"]  # CPU: the static race check fires first
EXPECTED_ERROR_CUDA = "mismatch"


@triton.jit
def _histogram_kernel(x_ptr, counts_ptr, numel, num_bins, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    ok = mask & (x >= 0) & (x < num_bins)
    old = tl.load(counts_ptr + x, mask=ok, other=0)
    tl.store(counts_ptr + x, old + 1, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, x):
        x = x.contiguous()
        counts = torch.zeros(self.num_bins, dtype=torch.int64, device=x.device)
        numel = x.numel()
        block = 1024
        _histogram_kernel[(triton.cdiv(numel, block),)](
            x, counts, numel, self.num_bins, BLOCK=block, num_warps=4
        )
        return counts
