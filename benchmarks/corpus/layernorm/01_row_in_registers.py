"""LayerNorm in fp32: one program per row, the row in registers, mean and variance in one kernel."""

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
    mean = tl.sum(x, axis=0) / BLOCK_N
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / BLOCK_N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_om + cols, diff * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(n))
        self.bias = nn.Parameter(0.1 * torch.randn(n))

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        block_n = triton.next_power_of_2(n_cols)
        _layernorm[(rows,)](
            x2,
            self.weight,
            self.bias,
            out,
            n_cols,
            x2.stride(0),
            out.stride(0),
            1e-5,
            BLOCK_N=block_n,
            num_warps=4,
        )
        return out.view(x.shape)
