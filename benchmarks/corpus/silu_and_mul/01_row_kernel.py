"""SiLU(gate) * up in fp16: one program per (row, column block); the row offset uses H."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_mul(x_ptr, out_ptr, half, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < half
    base = x_ptr + row * half
    gate = tl.load(base + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(base + half + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * half + cols, y.to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        half = x.shape[-1] // 2
        rows = x.numel() // x.shape[-1]
        out = torch.empty((*x.shape[:-1], half), dtype=x.dtype, device=x.device)
        block = 1024
        grid = (rows, triton.cdiv(half, block))
        _silu_mul[grid](x, out, half, BLOCK=block, num_warps=4)
        return out
