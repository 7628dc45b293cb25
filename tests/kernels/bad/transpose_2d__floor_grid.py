"""BAD: the grid uses floor division, so ragged edge tiles are never launched.

`(M // BLOCK, N // BLOCK)` covers 128x512 exactly (small passes) but leaves the last rows and
columns of 67x1003 unwritten (the output is zero-initialised here, so the failure is a
deterministic mismatch rather than garbage).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "mismatch"


@triton.jit
def _transpose_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, BLOCK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(
        x_ptr + rm[:, None].to(tl.int64) * stride_xm + rn[None, :] * stride_xn, mask=mask
    )
    # out[n, m] = x[m, n]; out is contiguous [N, M].
    out_ptrs = out_ptr + rn[:, None].to(tl.int64) * M + rm[None, :]
    out_mask = (rn[:, None] < N) & (rm[None, :] < M)
    tl.store(out_ptrs, tl.trans(tile), mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        m, n = x.shape
        out = torch.zeros((n, m), dtype=x.dtype, device=x.device)
        block = 64
        grid = (m // block, n // block)
        _transpose_kernel[grid](x, out, m, n, x.stride(0), x.stride(1), BLOCK=block, num_warps=4)
        return out
