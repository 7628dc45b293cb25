"""RMSNorm in fp16 with fp32 math: one program per row, the row in registers, 4 warps."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm(x_ptr, w_ptr, out_ptr, n_cols, stride_xm, stride_om, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * stride_om + cols, (x * rstd * w).to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter((1 + 0.1 * torch.randn(n)).to(torch.float16))

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        block_n = triton.next_power_of_2(n_cols)
        _rmsnorm[(rows,)](
            x2,
            self.weight,
            out,
            n_cols,
            x2.stride(0),
            out.stride(0),
            1e-6,
            BLOCK_N=block_n,
            num_warps=4,
        )
        return out.view(x.shape)
