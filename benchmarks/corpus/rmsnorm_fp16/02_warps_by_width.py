"""RMSNorm in fp16 with fp32 math: 16 warps for 8192-wide rows (no spills), 2-D tiles of rows
for narrow rows so each program still moves >= 8 KB.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_rows(
    x_ptr,
    w_ptr,
    out_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_om,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], y.to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter((1 + 0.1 * torch.randn(n)).to(torch.float16))

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 4096 // block_n)
        warps = 4 if block_n * block_m <= 2048 else (8 if block_n * block_m <= 4096 else 16)
        grid = (triton.cdiv(rows, block_m),)
        _rmsnorm_rows[grid](
            x2,
            self.weight,
            out,
            rows,
            n_cols,
            x2.stride(0),
            out.stride(0),
            1e-6,
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            num_warps=warps,
        )
        return out.view(x.shape)
