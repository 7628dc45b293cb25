# Verified kernel for task `bias_gelu_fp16` (task hash f1c610c8ff13ea84), from trace 1788f72ef1ca4c4aa6c16e1c7450c81a.
# Check it: upskills check bias_gelu_fp16 scripts/bias_gelu_fp16_kernel.py
"""bias + GELU (erf) in fp16: flat pass with 4096-element blocks and 8 warps."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_flat(x_ptr, bias_ptr, out_ptr, numel, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % n_cols, mask=mask, other=0.0).to(tl.float32)
    v = x + b
    y = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, bias):
        out = torch.empty_like(x)
        numel = x.numel()
        block = 4096
        grid = (triton.cdiv(numel, block),)
        _bias_gelu_flat[grid](x, bias, out, numel, x.shape[-1], BLOCK=block, num_warps=8)
        return out
