"""Sum of each column: one program per block of columns, a loop over rows, fp32 accumulator."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _col_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_row, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(0, n_rows):
        x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty(n_cols, device=x.device, dtype=x.dtype)
        BLOCK = 256
        grid = (triton.cdiv(n_cols, BLOCK),)
        _col_sum_kernel[grid](x, out, n_rows, n_cols, x.stride(0), BLOCK=BLOCK)
        return out
