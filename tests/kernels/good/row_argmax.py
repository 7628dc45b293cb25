"""Row argmax (first index of the maximum, int64), one program per row, chunked over columns."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_argmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    best_val = -float("inf")
    best_idx = 0
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_row + start + cols, mask=mask, other=-float("inf"))
        chunk_max = tl.max(x, axis=0)
        chunk_idx = tl.argmax(x, axis=0) + start
        better = chunk_max > best_val
        best_idx = tl.where(better, chunk_idx, best_idx)
        best_val = tl.where(better, chunk_max, best_val)
    tl.store(out_ptr + row, best_idx.to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        out = torch.empty(x2.shape[0], dtype=torch.int64, device=x.device)
        block = min(triton.next_power_of_2(n_cols), 4096)
        _row_argmax_kernel[(x2.shape[0],)](x2, out, n_cols, x2.stride(0), BLOCK=block, num_warps=8)
        return out.reshape(x.shape[:-1])
