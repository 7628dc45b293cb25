# Verified kernel for task `transpose_2d` (task hash 6f2cfbb771b7847b), from trace c1d0521cd6ed4cb08cb32aabe918d21a.
# Measured: 3.33x eager, 1.00x torch.compile on NVIDIA H200.
# Check it: upskills check transpose_2d scripts/transpose_2d_kernel.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


# Session 2's float4 64x64 kernel (round 4) measured 0.1721 ms, no better than the 32x33 kernel's
# 0.171 ms (73.7% of copy): bytes per instruction were not the limit. torch.compile's kernel
# takes 0.140 ms on the same shape (round 4's baseline). What differs is the order in which the
# tiles reach DRAM: with one 64x64 tile per block and blockIdx.x walking along an input row,
# neighbouring blocks write 64 different output rows 32 KiB apart each. This attempt is a Triton
# tile transpose (a [BM, BN] tile loaded along rows, stored through tl.trans as a [BN, BM] tile
# along output rows; Triton stages the layout change in shared memory) with the programs grouped
# GROUP tiles tall: consecutive programs walk down a column of tiles, so their writes fill
# consecutive stretches of the same output rows. Masked for ragged M, N.
@triton.jit
def transpose_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    width = GROUP * grid_n
    first_m = (pid // width) * GROUP
    size_m = tl.minimum(grid_m - first_m, GROUP)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], mask=mask)
    out = y_ptr + rn[:, None].to(tl.int64) * M + rm[None, :]
    tl.store(out, tl.trans(tile), mask=(rn[:, None] < N) & (rm[None, :] < M))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        m, n = x.shape
        y = torch.empty((n, m), device=x.device, dtype=x.dtype)
        if m == 0 or n == 0:
            return y
        bm, bn = 64, 64
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        transpose_kernel[grid](x, y, m, n, BM=bm, BN=bn, GROUP=8, num_warps=4)
        return y
