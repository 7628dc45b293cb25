# Verified kernel for task `cross_entropy` (task hash 7f545c3f6205d124), from trace 1b606f03bd714846a6e52bf8686e34e4.
# Check it: upskills check cross_entropy scripts/cross_entropy_kernel.py
"""Mean cross-entropy fp32: the result is a 0-dim tensor like F.cross_entropy's, not shape [1]."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _xent_rows(logits_ptr, target_ptr, out_ptr, M, C, stride_lm, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * stride_lm
    m = tl.full([], -float("inf"), dtype=tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for start in range(0, C, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < C, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    target = tl.load(target_ptr + row)
    picked = tl.load(base + target)
    loss = m + tl.log(s) - picked
    tl.atomic_add(out_ptr, loss / M)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, target):
        rows, classes = logits.shape
        out = torch.zeros((), dtype=logits.dtype, device=logits.device)
        _xent_rows[(rows,)](
            logits, target, out, rows, classes, logits.stride(0), BLOCK=1024, num_warps=4
        )
        return out
