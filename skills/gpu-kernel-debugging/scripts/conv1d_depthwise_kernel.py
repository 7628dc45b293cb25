# Verified kernel for task `conv1d_depthwise` (task hash cc40814cb35be549), from trace a6073d7d8f1641488b6fedb590ef91db.
# Check it: upskills check conv1d_depthwise scripts/conv1d_depthwise_kernel.py
"""Depthwise conv1d fp32: taps unrolled (K is a compile-time constant), the channel's weights
loaded once, 4096 outputs per program with 8 warps; shifted loads of the same row hit L1.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _dwconv1d(
    x_ptr,
    w_ptr,
    out_ptr,
    C,
    L,
    L_out,
    stride_xb,
    stride_xc,
    stride_xl,
    KS: tl.constexpr,
    PAD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    b = row // C
    c = row % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x_row = x_ptr + b * stride_xb + c * stride_xc
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for t in tl.static_range(KS):
        pos = offs + (t - PAD)
        x = tl.load(x_row + pos * stride_xl, mask=(pos >= 0) & (pos < L), other=0.0)
        acc += x * tl.load(w_ptr + c * KS + t)
    tl.store(out_ptr + row * L_out + offs, acc, mask=offs < L_out)


class ModelNew(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c, 1, k) / k**0.5)

    def forward(self, x):
        bsz, chans, length = x.shape
        ks = self.weight.shape[-1]
        pad = ks // 2
        l_out = length + 2 * pad - ks + 1
        out = torch.empty((bsz, chans, l_out), dtype=x.dtype, device=x.device)
        block = min(4096, triton.next_power_of_2(l_out))
        grid = (bsz * chans, triton.cdiv(l_out, block))
        _dwconv1d[grid](
            x,
            self.weight,
            out,
            chans,
            length,
            l_out,
            *x.stride(),
            KS=ks,
            PAD=pad,
            BLOCK=block,
            num_warps=8 if block >= 2048 else 4,
        )
        return out
