"""Row argmax: several rows per program, 2048-wide chunks, per-row running (max, index) vectors."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_argmax_2d(
    x_ptr, out_ptr, n_rows, n_cols, stride_xm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    row_ok = rows < n_rows
    best = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    best_idx = tl.zeros([BLOCK_M], dtype=tl.int32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_ok[:, None] & (cols[None, :] < n_cols)
        x = tl.load(
            x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=-float("inf")
        ).to(tl.float32)
        blk_max = tl.max(x, axis=1)
        blk_idx = tl.argmax(x, axis=1) + start
        take = blk_max > best
        best_idx = tl.where(take, blk_idx, best_idx)
        best = tl.where(take, blk_max, best)
    tl.store(out_ptr + rows, best_idx.to(tl.int64), mask=row_ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty(x.shape[:-1], dtype=torch.int64, device=x.device)
        block_n = min(2048, triton.next_power_of_2(n_cols))
        block_m = max(1, min(16, 8192 // block_n))
        grid = (triton.cdiv(rows, block_m),)
        _row_argmax_2d[grid](
            x2, out, rows, n_cols, x2.stride(0), BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8
        )
        return out
