"""Cast fp32 -> bf16 (round to nearest even): 8192 elements per program and 8 warps,
so each thread keeps eight 16-byte loads in flight."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cast_bf16(x_ptr, out_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not x.is_contiguous():
            raise ValueError("this flat kernel expects a contiguous input")
        out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
        numel = x.numel()
        block = 8192
        _cast_bf16[(triton.cdiv(numel, block),)](x, out, numel, BLOCK=block, num_warps=8)
        return out
