"""Cast fp32 -> bf16 with explicit round-to-nearest-even on the bits (bit-exact everywhere).

The Triton interpreter truncates in ``.to(tl.bfloat16)`` while the GPU rounds to nearest even;
rounding by hand makes the CPU and GPU results identical, at a few integer ops per element.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cast_bf16_rtne(x_ptr, out_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    bits = x.to(tl.uint32, bitcast=True)
    lsb = (bits >> 16) & 1
    rounded = (bits + 0x7FFF + lsb) >> 16
    rounded = tl.where(x != x, 0x7FC0, rounded)
    y = rounded.to(tl.uint16).to(tl.bfloat16, bitcast=True)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not x.is_contiguous():
            raise ValueError("this flat kernel expects a contiguous input")
        out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
        numel = x.numel()
        block = 8192
        _cast_bf16_rtne[(triton.cdiv(numel, block),)](x, out, numel, BLOCK=block, num_warps=8)
        return out
