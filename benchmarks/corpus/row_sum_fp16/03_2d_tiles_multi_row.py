"""Row sum of fp16: several rows per program, 2-D fp32 accumulator, one reduction at the end."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum_2d(
    x_ptr, out_ptr, n_rows, n_cols, stride_xm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    row_ok = rows < n_rows
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_ok[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=1)
    tl.store(out_ptr + rows, total.to(out_ptr.dtype.element_ty), mask=row_ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        block_n = min(2048, triton.next_power_of_2(n_cols))
        block_m = max(1, min(16, 8192 // block_n))
        grid = (triton.cdiv(rows, block_m),)
        _row_sum_2d[grid](
            x2, out, rows, n_cols, x2.stride(0), BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8
        )
        return out
