"""Row cumsum fp32: 2-D tiles of 4 rows x 1024 columns with 8 warps and a carry per row, so
each loop step moves 16 KB instead of 1 KB and the scan work per load is 16x larger.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cumsum_tiles(
    x_ptr,
    out_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    row_ok = rows < n_rows
    carry = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_ok[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
        y = tl.cumsum(x, axis=1) + carry[:, None]
        tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], y, mask=mask)
        carry += tl.sum(x, axis=1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        block_n = min(1024, triton.next_power_of_2(n_cols))
        block_m = max(1, 4096 // block_n)
        grid = (triton.cdiv(rows, block_m),)
        _cumsum_tiles[grid](
            x2,
            out,
            rows,
            n_cols,
            x2.stride(0),
            out.stride(0),
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            num_warps=8,
        )
        return out.view(x.shape)
