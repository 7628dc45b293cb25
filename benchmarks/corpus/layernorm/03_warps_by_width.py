"""LayerNorm in fp32: warps scale with the row width so an 8192-wide row does not spill.

Rows up to 16384 columns stay in registers; wider rows use a chunked two-pass kernel.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm(
    x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_xm, stride_om, eps, BLOCK_N: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(diff * diff, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_om + cols, diff * rstd * w + b, mask=mask)


@triton.jit
def _layernorm_chunked(
    x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_xm, stride_om, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        d = tl.where(mask, tl.load(x_row + cols, mask=mask, other=0.0) - mean, 0.0)
        acc += d * d
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        tl.store(out_ptr + row * stride_om + cols, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(n))
        self.bias = nn.Parameter(0.1 * torch.randn(n))

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        args = (x2, self.weight, self.bias, out, n_cols, x2.stride(0), out.stride(0), 1e-5)
        block_n = triton.next_power_of_2(n_cols)
        if block_n <= 16384:
            warps = 4 if block_n <= 1024 else (8 if block_n <= 4096 else 16)
            _layernorm[(rows,)](*args, BLOCK_N=block_n, num_warps=warps)
        else:
            _layernorm_chunked[(rows,)](*args, BLOCK=4096, num_warps=8)
        return out.view(x.shape)
