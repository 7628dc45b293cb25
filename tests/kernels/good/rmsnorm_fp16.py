"""RMSNorm for fp16 rows: statistics and scaling in fp32, one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(
    x_ptr, w_ptr, out_ptr, n_cols, stride_row, eps, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_row
    o_row = out_ptr + row * stride_row
    cols = tl.arange(0, BLOCK)
    if ONE_PASS:
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(o_row + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(o_row + start + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter((1 + 0.1 * torch.randn(n)).to(torch.float16))

    def forward(self, x):
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        out = torch.empty_like(x2)
        full = triton.next_power_of_2(n_cols)
        one_pass = full <= 8192
        block = full if one_pass else 4096
        warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
        _rmsnorm_kernel[(x2.shape[0],)](
            x2,
            self.weight.contiguous(),
            out,
            n_cols,
            x2.stride(0),
            1e-6,
            BLOCK=block,
            ONE_PASS=one_pass,
            num_warps=warps,
        )
        return out.reshape(x.shape)
