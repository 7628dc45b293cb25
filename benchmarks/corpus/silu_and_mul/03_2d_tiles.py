"""SiLU(gate) * up in fp16: 2-D tiles of ~4096 outputs per program, 8 warps, exp2-based sigmoid."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_mul_2d(
    x_ptr, out_ptr, n_rows, half, stride_xm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < half)
    src = x_ptr + rows[:, None] * stride_xm + cols[None, :]
    gate = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(src + half, mask=mask, other=0.0).to(tl.float32)
    sig = 1.0 / (1.0 + tl.exp2(gate * -1.4426950408889634))
    y = gate * sig * up
    tl.store(out_ptr + rows[:, None] * half + cols[None, :], y.to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        half = x.shape[-1] // 2
        x2 = x.reshape(-1, x.shape[-1])
        rows = x2.shape[0]
        out = torch.empty((*x.shape[:-1], half), dtype=x.dtype, device=x.device)
        block_n = min(1024, triton.next_power_of_2(half))
        block_m = max(1, 4096 // block_n)
        grid = (triton.cdiv(rows, block_m), triton.cdiv(half, block_n))
        _silu_mul_2d[grid](
            x2, out, rows, half, x2.stride(0), BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8
        )
        return out
