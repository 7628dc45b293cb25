"""Row L2 normalisation: one program per row, two masked passes (sum of squares, then scale)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _l2_normalize_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    norm = tl.sqrt(tl.sum(acc, axis=0))
    inv = 1.0 / tl.maximum(norm, 1e-12)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        y = x * inv
        tl.store(out_ptr + row * stride_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        BLOCK = min(1024, triton.next_power_of_2(n_cols))
        _l2_normalize_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK=BLOCK)
        return out
