# Verified kernel for task `cumsum_rows` (task hash 57429b6baa5eef2e), from trace 26d16a27d0574600839dd28e8181192a.
# Check it: upskills check cumsum_rows scripts/cumsum_rows_kernel.py
"""Row cumsum fp32: the carry accumulates every earlier chunk (carry += chunk sum), not one."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cumsum_rows(x_ptr, out_ptr, n_cols, stride_xm, stride_om, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    carry = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + row * stride_om + cols, y, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        _cumsum_rows[(rows,)](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=256, num_warps=4)
        return out.view(x.shape)
