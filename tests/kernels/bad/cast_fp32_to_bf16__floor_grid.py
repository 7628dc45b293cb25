"""BAD: the grid uses floor division, so the ragged tail of the tensor is never converted.

128*512 is a multiple of BLOCK=4096 (small passes); 67*1003 leaves 1665 elements at zero.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "mismatch"


@triton.jit
def _cast_bf16_kernel(x_ptr, out_ptr, numel, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    bits = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.uint32, bitcast=True)
    lsb = (bits >> 16) & 1
    rounded = (bits + 0x7FFF + lsb) >> 16
    is_nan = (bits & 0x7FFFFFFF) > 0x7F800000
    quiet_nan = (bits >> 16) | 0x0040
    out_bits = tl.where(is_nan, quiet_nan, rounded).to(tl.uint16)
    # out_ptr is the bf16 output viewed as int16: store the bit pattern unchanged.
    tl.store(out_ptr + offs, out_bits.to(tl.int16, bitcast=True), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.zeros(x.shape, dtype=torch.bfloat16, device=x.device)
        numel = x.numel()
        block = 4096
        _cast_bf16_kernel[(numel // block,)](
            x, out.view(torch.int16), numel, BLOCK=block, num_warps=8
        )
        return out
