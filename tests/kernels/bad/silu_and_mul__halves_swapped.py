"""BAD: the activation is applied to the second half: silu(x[:, H:]) * x[:, :H].

A misread of the gate/up order; wrong values on every variant.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "mismatch"


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, half, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < half
    gate_ptrs = x_ptr + row * (2 * half) + cols
    u = tl.load(gate_ptrs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(gate_ptrs + half, mask=mask, other=0.0).to(tl.float32)
    # Round silu(g) to the output dtype before the product, as the eager reference does.
    act = (g / (1.0 + tl.exp(-g))).to(out_ptr.dtype.element_ty).to(tl.float32)
    tl.store(out_ptr + row * half + cols, (act * u).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        half = x.shape[-1] // 2
        x2 = x.reshape(-1, 2 * half).contiguous()
        out = torch.empty((x2.shape[0], half), dtype=x.dtype, device=x.device)
        block = min(triton.next_power_of_2(half), 1024)
        grid = (x2.shape[0], triton.cdiv(half, block))
        _silu_and_mul_kernel[grid](x2, out, half, BLOCK=block, num_warps=4)
        return out.reshape(*x.shape[:-1], half)
