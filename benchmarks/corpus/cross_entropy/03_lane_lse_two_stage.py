"""Mean cross-entropy fp32: each lane keeps its own running (max, sum) over 4096-wide chunks and
they merge once per row (no per-chunk reductions); per-row losses go to a buffer and a second
one-program kernel sums them in a fixed order, so the result is deterministic.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _xent_rows(logits_ptr, target_ptr, loss_ptr, C, stride_lm, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * stride_lm
    # A finite floor for the running max: padded lanes (-inf) then add exp(-inf) = 0, never nan.
    m = tl.full([BLOCK], -1e30, dtype=tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, C, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < C, other=-float("inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    target = tl.load(target_ptr + row)
    picked = tl.load(base + target)
    tl.store(loss_ptr + row, row_max + tl.log(total) - picked)


@triton.jit
def _mean(loss_ptr, out_ptr, M, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, M, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + offs, mask=offs < M, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / M)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, target):
        rows, classes = logits.shape
        losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
        out = torch.empty((), dtype=logits.dtype, device=logits.device)
        block = min(4096, triton.next_power_of_2(classes))
        _xent_rows[(rows,)](
            logits, target, losses, classes, logits.stride(0), BLOCK=block, num_warps=8
        )
        _mean[(1,)](losses, out, rows, BLOCK=1024, num_warps=4)
        return out
