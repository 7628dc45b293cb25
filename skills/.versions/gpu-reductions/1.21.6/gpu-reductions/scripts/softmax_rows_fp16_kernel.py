# Verified kernel for task `softmax_rows_fp16` (task hash 4251d149ef0ce9ba), from trace 600465aa1f854a639e5fc08591834626.
# Measured: 3.67x eager, 2.16x torch.compile on NVIDIA H200.
# Check it: upskills check softmax_rows_fp16 scripts/softmax_rows_fp16_kernel.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


# Softmax over the last dim of fp16 [M, N], N up to 8192: one program per row loads the row
# (fp16, 2 bytes per element), computes max, exp and sum in fp32 (large inputs: subtract the
# max), stores fp16. One read and one write.
@triton.jit
def softmax_fp16_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    e = tl.where(mask, e, 0.0)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * n + cols, y.to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        m, n = x.shape
        y = torch.empty_like(x)
        block = triton.next_power_of_2(n)
        softmax_fp16_kernel[(m,)](x, y, n, BLOCK=block, num_warps=8 if block >= 4096 else 4)
        return y
