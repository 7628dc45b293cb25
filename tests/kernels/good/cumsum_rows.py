"""Inclusive row cumsum in fp32: tl.cumsum per chunk plus a carry between chunks, one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cumsum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_row
    o_row = out_ptr + row * stride_row
    cols = tl.arange(0, BLOCK)
    carry = 0.0
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(o_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        out = torch.empty_like(x2)
        block = min(triton.next_power_of_2(n_cols), 1024)
        _cumsum_kernel[(x2.shape[0],)](x2, out, n_cols, x2.stride(0), BLOCK=block, num_warps=4)
        return out.reshape(x.shape)
