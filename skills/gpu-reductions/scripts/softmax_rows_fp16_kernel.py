# Verified kernel for task `softmax_rows_fp16` (task hash 4251d149ef0ce9ba), from trace 3000e6e88a0043308ddc957647fdf835.
# Check it: upskills check softmax_rows_fp16 scripts/softmax_rows_fp16_kernel.py
"""Row softmax in fp16: the whole row in registers (one read, one write), exp2, warps by width.

Rows wider than 16384 fall back to the two-pass online kernel.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_single(x_ptr, out_ptr, n_cols, stride_xm, stride_om, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = (x - tl.max(x, axis=0)) * 1.4426950408889634
    e = tl.exp2(z)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * stride_om + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_online(x_ptr, out_ptr, n_cols, stride_xm, stride_om, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    m = tl.full([], -float("inf"), dtype=tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(out_ptr + row * stride_om + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        block_n = triton.next_power_of_2(n_cols)
        if block_n <= 16384:
            warps = 4 if block_n <= 1024 else (8 if block_n <= 4096 else 16)
            _softmax_single[(rows,)](
                x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK_N=block_n, num_warps=warps
            )
        else:
            _softmax_online[(rows,)](
                x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=4096, num_warps=8
            )
        return out.view(x.shape)
