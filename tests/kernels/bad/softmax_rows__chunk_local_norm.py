"""BAD: a tiled softmax that normalises each 256-wide chunk by its own max and sum.

The cross-chunk reduction is missing: every chunk of a row sums to 1 on its own, so rows
longer than one chunk (N=512 and N=1003) are wrong on every variant.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "mismatch"


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_row + start + cols, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * stride_row + start + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        out = torch.empty_like(x2)
        _softmax_kernel[(x2.shape[0],)](x2, out, n_cols, x2.stride(0), BLOCK=256, num_warps=4)
        return out.reshape(x.shape)
