"""Fused bias + GELU (erf form) for fp16: one pass over x, math in fp32.

A 2-D grid (row, column block) keeps the bias a contiguous vector load and avoids a
per-element integer modulo; each thread moves 8 contiguous halves (16-byte accesses).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_kernel(x_ptr, b_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    s = (x + b).to(tl.float32)  # the add rounds to fp16 first, as in the eager reference
    y = 0.5 * s * (1.0 + tl.math.erf(s * 0.7071067811865476))
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, bias):
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        bias = bias.contiguous()
        out = torch.empty_like(x2)
        block = min(triton.next_power_of_2(n_cols), 1024)
        grid = (x2.shape[0], triton.cdiv(n_cols, block))
        _bias_gelu_kernel[grid](x2, bias, out, n_cols, BLOCK=block, num_warps=4)
        return out.reshape(x.shape)
