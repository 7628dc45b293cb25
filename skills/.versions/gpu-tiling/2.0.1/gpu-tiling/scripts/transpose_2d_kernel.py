# Verified kernel for task `transpose_2d` (task hash 6f2cfbb771b7847b), from trace 40ca5da98d234e36b1e8cd0188874f5a.
# Measured: 2.74x eager, 0.82x torch.compile on NVIDIA H200.
# Check it: upskills check transpose_2d scripts/transpose_2d_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Transpose fp32 [M, N] -> contiguous [N, M]. A direct copy makes either the reads or the
# writes strided (one 32-byte sector per element). Instead each 32x8 thread block moves a
# 32x32 tile: coalesced row reads into shared memory, then coalesced row writes of the
# transposed tile. The tile is padded to 32x33 so that reading a column of it hits 32
# different banks (without the pad every element of a column is in the same bank: 32-way
# conflicts). Edge tiles are masked for ragged M, N.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>

constexpr int TILE = 32;
constexpr int ROWS = 8;

__global__ void transpose_tiled(const float* __restrict__ x, float* __restrict__ y, int64_t m, int64_t n) {
    __shared__ float tile[TILE][TILE + 1];
    int64_t c = (int64_t)blockIdx.x * TILE + threadIdx.x;   // input column
    int64_t r0 = (int64_t)blockIdx.y * TILE;                // first input row of the tile
    #pragma unroll
    for (int j = threadIdx.y; j < TILE; j += ROWS) {
        int64_t r = r0 + j;
        if (r < m && c < n) tile[j][threadIdx.x] = x[r * n + c];
    }
    __syncthreads();
    int64_t oc = r0 + threadIdx.x;                          // output column = input row
    int64_t or0 = (int64_t)blockIdx.x * TILE;               // first output row = input column
    #pragma unroll
    for (int j = threadIdx.y; j < TILE; j += ROWS) {
        int64_t orow = or0 + j;
        if (orow < n && oc < m) y[orow * m + oc] = tile[threadIdx.x][j];
    }
}

torch::Tensor transpose_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat, "2-D fp32 CUDA");
    auto xc = x.contiguous();
    const int64_t m = xc.size(0), n = xc.size(1);
    auto y = torch::empty({n, m}, xc.options());
    if (m == 0 || n == 0) return y;
    dim3 block(TILE, ROWS);
    dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
    transpose_tiled<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), m, n);
    return y;
}
"""

_ext = load_inline(
    name="corpus_transpose_tiled33",
    cpp_sources="torch::Tensor transpose_fwd(torch::Tensor x);",
    cuda_sources=_CUDA,
    functions=["transpose_fwd"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.transpose_fwd(x)
