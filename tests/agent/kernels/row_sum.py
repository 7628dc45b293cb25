import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        m, n = x.shape
        out = torch.empty(m, device=x.device, dtype=x.dtype)
        _row_sum_kernel[(m,)](x, out, n, x.stride(0), BLOCK=512)
        return out
