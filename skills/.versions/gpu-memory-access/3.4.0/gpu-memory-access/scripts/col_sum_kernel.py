# Verified kernel for task `col_sum` (task hash 06a6e5e7ee0a0e5e), from trace f693173708f345799f8a2cf716c526b3.
# Measured: 1.15x eager, 1.12x torch.compile on NVIDIA H200.
# Check it: upskills check col_sum scripts/col_sum_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# col_sum (x.sum(0) of an fp32 [M, N]), seventh session, after reading round 13 and the ninth
# session's re-check. s6 (2 KiB of a row per CTA, 528 CTAs of 128 x 2 threads, 4 per SM, four
# float4 loads in flight per thread; partials to global memory, a fence, a per-strip counter,
# the last CTA's in-order sum) is the final: 0.0754 ms in the re-check, 83.4% of the session's
# copy ceiling (84.7% against the profile's cached one). Its profile: memory throughput 84.7%,
# occupancy 49.6%, long_scoreboard 78.8 stall cycles per instruction. Over s3-s6 the layouts
# (1 KiB, 128 B, 512 B, 2 KiB pieces of a row) all land at 0.0754-0.0783 ms, while the
# row-wise reductions over the same 256 MiB (row_max 0.0713 ms, row_sum 0.0724 ms) have no
# cross-CTA step. What col_sum does that they do not is its end: every CTA writes its partial
# (1 MiB in all), fences (MEMBAR.SC.GPU in s6's SASS), bumps the strip's counter, and the
# strip's last CTA reads the 33 partials back from L2 before the strip's 2 KiB of y is written.
# This attempt moves that step on chip, which changes the grid with it (one change: the two
# cannot be had apart): each 2 KiB strip is summed by one thread-block cluster of 8 CTAs along
# the rows (128 CTAs of 128 x 2 threads, 120 registers so two fit on an SM and a cluster can sit
# on 4 SMs of a GPC; sixteen float4 loads in flight per thread, so the bytes in flight over the
# GPU stay s6's ~8 MiB); each CTA leaves its partial in its own
# shared memory, one cluster barrier, and the cluster's rank 0 reads the 8 partials through
# distributed shared memory in rank order (the same order every call) and writes y; a second
# barrier keeps the peers' shared memory alive until it has. No global partials, no fence, no
# counter. Rows whose width is not a multiple of 4 floats or pointers not 16-byte aligned: the
# same kernel on single floats.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cooperative_groups.h>
#include <cstdint>

namespace cg = cooperative_groups;

constexpr int TX = 128;  // vectors (float4 or float) of a row per CTA
constexpr int TY = 2;    // thread rows per CTA
constexpr int CL = 8;    // CTAs per cluster, along the rows
constexpr int U = 16;    // loads in flight per thread
constexpr int A = 8;     // accumulators per thread

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ float4 add(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
template <typename V> __device__ __forceinline__ V zero();
template <> __device__ __forceinline__ float zero<float>() { return 0.f; }
template <> __device__ __forceinline__ float4 zero<float4>() { return make_float4(0.f, 0.f, 0.f, 0.f); }

// nv vectors per row; CTA (blockIdx.x, blockIdx.y) sums rows [blockIdx.y * rows_per, ...) of
// vectors [blockIdx.x * TX, blockIdx.x * TX + TX); gridDim.y == CL, one cluster per strip.
template <typename V>
__global__ void __cluster_dims__(1, CL, 1) __launch_bounds__(TX * TY, 2)
col_sum_cluster(const V* __restrict__ x, V* __restrict__ y, int64_t m, int64_t nv, int64_t rows_per) {
  __shared__ V ps[TY][TX];
  __shared__ V part[TX];
  cg::cluster_group cluster = cg::this_cluster();
  const int64_t col = (int64_t)blockIdx.x * TX + threadIdx.x;
  const bool ok = col < nv;
  const int64_t r0 = (int64_t)blockIdx.y * rows_per;
  const int64_t r1 = r0 + rows_per < m ? r0 + rows_per : m;
  V a[A];
#pragma unroll
  for (int k = 0; k < A; ++k) a[k] = zero<V>();
  if (ok) {
    const V* p = x + col;
    int64_t j = r0 + threadIdx.y;
    for (; j + (U - 1) * TY < r1; j += U * TY) {
      V v[U];
#pragma unroll
      for (int k = 0; k < U; ++k) v[k] = p[(j + k * TY) * nv];
#pragma unroll
      for (int k = 0; k < U; ++k) a[k % A] = add(a[k % A], v[k]);
    }
    for (; j < r1; j += TY) a[0] = add(a[0], p[j * nv]);
  }
  V t0 = a[0];
#pragma unroll
  for (int k = 1; k < A; ++k) t0 = add(t0, a[k]);
  ps[threadIdx.y][threadIdx.x] = t0;
  __syncthreads();
  if (threadIdx.y == 0) {
    V t = zero<V>();
#pragma unroll
    for (int k = 0; k < TY; ++k) t = add(t, ps[k][threadIdx.x]);
    part[threadIdx.x] = t;
  }
  cluster.sync();  // every CTA's partial is in its shared memory
  if (cluster.block_rank() == 0 && threadIdx.y == 0) {
    V v[CL];
#pragma unroll
    for (int r = 0; r < CL; ++r) v[r] = *cluster.map_shared_rank(&part[threadIdx.x], (unsigned)r);
    V t = zero<V>();
#pragma unroll
    for (int r = 0; r < CL; ++r) t = add(t, v[r]);
    if (ok) y[col] = t;
  }
  cluster.sync();  // no CTA leaves while rank 0 may still read its partial
}

template <typename V>
void launch(const float* xp, float* yp, int64_t m, int64_t nv) {
  const int64_t rows_per = (m + CL - 1) / CL;
  const int64_t strips = (nv + TX - 1) / TX;
  TORCH_CHECK(strips < (int64_t)1 << 31, "too many columns");
  col_sum_cluster<V><<<dim3((unsigned)strips, CL), dim3(TX, TY), 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const V*>(xp), reinterpret_cast<V*>(yp), m, nv, rows_per);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

torch::Tensor col_sum(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat, "2-D fp32 CUDA tensor");
  auto xc = x.contiguous();
  const int64_t m = xc.size(0), n = xc.size(1);
  auto y = torch::empty({n}, xc.options());
  if (n == 0) return y;
  if (m == 0) return y.zero_();
  const float* xp = xc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const bool vec = n % 4 == 0 &&
      ((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(yp)) & 15) == 0;
  if (vec) launch<float4>(xp, yp, m, n / 4);
  else launch<float>(xp, yp, m, n);
  return y;
}
"""

_ext = load_inline(
    name="corpus_col_sum_cluster8",
    cpp_sources="torch::Tensor col_sum(torch::Tensor x);",
    cuda_sources=_CUDA,
    functions=["col_sum"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.col_sum(x)
