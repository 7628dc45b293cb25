"""Row argmax: the chunk's argmax is local to the chunk; add the chunk start to get the column."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_argmax(x_ptr, out_ptr, n_cols, stride_xm, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    best = tl.full([], -float("inf"), dtype=tl.float32)
    best_idx = tl.full([], 0, dtype=tl.int32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=cols < n_cols, other=-float("inf"))
        blk_max = tl.max(x, axis=0)
        blk_idx = tl.argmax(x, axis=0) + start
        take = blk_max > best
        best_idx = tl.where(take, blk_idx, best_idx)
        best = tl.where(take, blk_max, best)
    tl.store(out_ptr + row, best_idx.to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty(x.shape[:-1], dtype=torch.int64, device=x.device)
        _row_argmax[(rows,)](x2, out, n_cols, x2.stride(0), BLOCK=256, num_warps=4)
        return out
