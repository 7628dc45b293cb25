"""BAD: the column loop stops at the last full block, dropping the ragged tail of each row.

`range(0, N - BLOCK + 1, BLOCK)` is exact when N is a multiple of BLOCK (the small variant
passes) and loses N % BLOCK columns otherwise (ragged N=1003 with BLOCK=256 loses 235).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "mismatch"


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols - BLOCK + 1, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_row + start + cols, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        out = torch.empty(x2.shape[0], dtype=x.dtype, device=x.device)
        block = 256
        _row_sum_kernel[(x2.shape[0],)](x2, out, n_cols, x2.stride(0), BLOCK=block, num_warps=4)
        return out.reshape(x.shape[:-1])
