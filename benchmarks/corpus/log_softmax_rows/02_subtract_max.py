"""Row log-softmax in fp32: out = (x - max) - log(sum(exp(x - max))); the shift must stay in."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _log_softmax(x_ptr, out_ptr, n_cols, stride_xm, stride_om, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    log_sum = tl.log(tl.sum(tl.exp(shifted), axis=0))
    tl.store(out_ptr + row * stride_om + cols, shifted - log_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        rows, n_cols = x2.shape
        out = torch.empty((rows, n_cols), dtype=x.dtype, device=x.device)
        block_n = triton.next_power_of_2(n_cols)
        _log_softmax[(rows,)](
            x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK_N=block_n, num_warps=4
        )
        return out.view(x.shape)
