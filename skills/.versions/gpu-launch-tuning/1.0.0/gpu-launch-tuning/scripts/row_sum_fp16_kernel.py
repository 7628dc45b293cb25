# Verified kernel for task `row_sum_fp16` (task hash 8392651619850632), from trace d25fffddc4ad48faa56e20f5159b5344.
# Check it: upskills check row_sum_fp16 scripts/row_sum_fp16_kernel.py
"""Row sum of fp16: same kernel, output allocated in the input dtype (fp16), cast on store."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum(x_ptr, out_ptr, n_cols, stride_xm, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, total.to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        _row_sum[(rows,)](x2, out, n_cols, x2.stride(0), BLOCK=1024, num_warps=4)
        return out
