"""Row softmax in fp16: pass 1 keeps a running max and sum over 256-wide chunks, pass 2 writes."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_online(x_ptr, out_ptr, n_cols, stride_xm, stride_om, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    m = tl.full([], -float("inf"), dtype=tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(out_ptr + row * stride_om + cols, y.to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        _softmax_online[(rows,)](
            x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=256, num_warps=4
        )
        return out.view(x.shape)
