# Verified kernel for task `38_L1Norm_` (task hash a11fdac52d4f562c), from trace 5ea40384b08846bd89792cc5240438e8.
# Measured: 2.39x eager, 1.80x torch.compile on NVIDIA H200.
# Check it: upskills check 38_L1Norm_ scripts/38_L1Norm__kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# x / mean(|x|) over dim 1, each 256 KiB row held on chip by a cluster of 8 CTAs (32 KiB of
# shared memory each, several clusters per SM): read once, sums swapped through distributed shared memory.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cooperative_groups.h>
#include <cstdint>
#include <cmath>

namespace cg = cooperative_groups;

// MODE 0: softmax, 1: log-softmax, 2: x / mean(|x|), 3: x / ||x||_2 (all over dim 1 of [rows, n])
constexpr int CL = 8;                       // CTAs per row: one thread-block cluster holds a row
constexpr int64_t MAX_SMEM = 200 * 1024;    // bytes of a CTA's share of the row in shared memory

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide max or sum, returned to every thread (scratch: 33 floats of shared memory).
template <bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  v = MAX ? warp_max(v) : warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : (MAX ? -INFINITY : 0.f);
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[32] = v;
  }
  __syncthreads();
  return scratch[32];
}

template <int MODE>
__device__ __forceinline__ void take(float& acc, float v) {
  if (MODE <= 1) acc = fmaxf(acc, v);
  else if (MODE == 2) acc += fabsf(v);
  else acc = fmaf(v, v, acc);
}

template <int MODE>
__device__ __forceinline__ void take4(float& acc, float4 v) {
  take<MODE>(acc, v.x); take<MODE>(acc, v.y); take<MODE>(acc, v.z); take<MODE>(acc, v.w);
}

// One row per cluster of CL CTAs. CTA k of the cluster copies its slice [lo, hi) of the row into
// shared memory (element j at s[j - sb]: a 16-byte aligned global address lands on a 16-byte
// aligned shared one), reduces it, the CTAs swap their partial results through distributed
// shared memory, and each writes its slice from shared memory: the row is read once.
template <int MODE, int T, int MINB>
__global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(T, MINB)
row_cluster(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t chunk, bool vec) {
  extern __shared__ float4 smem4[];
  float* s = reinterpret_cast<float*>(smem4);
  __shared__ float scratch[33];
  __shared__ float stat[2];
  cg::cluster_group cluster = cg::this_cluster();
  const int64_t rank = (int64_t)cluster.block_rank();
  const int64_t base = (int64_t)(blockIdx.x / CL) * n;
  const int64_t lo = base + (rank * chunk < n ? rank * chunk : n);
  const int64_t hi = base + ((rank + 1) * chunk < n ? (rank + 1) * chunk : n);
  const int64_t sb = lo & ~int64_t(3);
  int64_t a = lo, b = lo;  // [lo, a) scalar head, [a, b) float4 body, [b, hi) scalar tail
  if (vec) {
    a = (lo + 3) & ~int64_t(3);
    if (a > hi) a = hi;
    b = a + ((hi - a) & ~int64_t(3));
  }
  float acc = MODE <= 1 ? -INFINITY : 0.f;
  for (int64_t j = lo + threadIdx.x; j < a; j += T) { float v = x[j]; s[j - sb] = v; take<MODE>(acc, v); }
  {
    const float4* x4 = reinterpret_cast<const float4*>(x + a);
    float4* s4 = reinterpret_cast<float4*>(s + (a - sb));
    const int64_t nv = (b - a) >> 2;
    int64_t q = threadIdx.x;
    for (; q + 3 * T < nv; q += 4 * T) {
      float4 v0 = x4[q], v1 = x4[q + T], v2 = x4[q + 2 * T], v3 = x4[q + 3 * T];
      s4[q] = v0; s4[q + T] = v1; s4[q + 2 * T] = v2; s4[q + 3 * T] = v3;
      take4<MODE>(acc, v0); take4<MODE>(acc, v1); take4<MODE>(acc, v2); take4<MODE>(acc, v3);
    }
    for (; q < nv; q += T) { float4 v = x4[q]; s4[q] = v; take4<MODE>(acc, v); }
  }
  for (int64_t j = b + threadIdx.x; j < hi; j += T) { float v = x[j]; s[j - sb] = v; take<MODE>(acc, v); }

  const float local = block_reduce<(MODE <= 1)>(acc, scratch);
  float local_sum = 0.f;
  if (MODE <= 1) {  // exp(v - local max), kept in shared memory for softmax
    float sum = 0.f;
    for (int64_t j = lo + threadIdx.x; j < hi; j += T) {
      const float e = local == -INFINITY ? 0.f : expf(s[j - sb] - local);
      if (MODE == 0) s[j - sb] = e;
      sum += e;
    }
    local_sum = block_reduce<false>(sum, scratch);
  }
  if (threadIdx.x == 0) { stat[0] = local; stat[1] = local_sum; }
  cluster.sync();
  if (threadIdx.x < 32) {
    float pm = MODE <= 1 ? -INFINITY : 0.f, ps = 0.f;
    if (threadIdx.x < CL) {
      const float* peer = cluster.map_shared_rank(stat, (unsigned)threadIdx.x);
      pm = peer[0];
      ps = peer[1];
    }
    float r0, r1 = 0.f;
    if (MODE <= 1) {
      r0 = warp_max(pm);
      r1 = warp_sum(ps > 0.f ? ps * expf(pm - r0) : (ps != ps ? ps : 0.f));
    } else {
      r0 = warp_sum(pm);
    }
    if (threadIdx.x == 0) { scratch[0] = r0; scratch[1] = r1; }
  }
  cluster.sync();  // also: no CTA leaves while a peer may still read its `stat`
  const float big = scratch[0], total = scratch[1];
  float mul = 1.f, sub = 0.f, den = 1.f;
  if (MODE == 0) mul = (local == -INFINITY ? 0.f : expf(local - big)) / total;
  if (MODE == 1) sub = big + logf(total);
  if (MODE == 2) den = big / (float)n;
  if (MODE == 3) den = sqrtf(big);
  auto f = [&](float v) -> float {
    if (MODE == 0) return v * mul;
    if (MODE == 1) return v - sub;
    return v / den;
  };
  for (int64_t j = lo + threadIdx.x; j < a; j += T) y[j] = f(s[j - sb]);
  {
    float4* y4 = reinterpret_cast<float4*>(y + a);
    const float4* s4 = reinterpret_cast<const float4*>(s + (a - sb));
    const int64_t nv = (b - a) >> 2;
    for (int64_t q = threadIdx.x; q < nv; q += T) {
      float4 v = s4[q];
      v.x = f(v.x); v.y = f(v.y); v.z = f(v.z); v.w = f(v.w);
      y4[q] = v;
    }
  }
  for (int64_t j = b + threadIdx.x; j < hi; j += T) y[j] = f(s[j - sb]);
}

// Rows too long for a cluster's shared memory: one CTA per row, reading the row again.
template <int MODE>
__global__ void __launch_bounds__(1024) row_simple(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  __shared__ float scratch[33];
  const float* r = x + (int64_t)blockIdx.x * n;
  float* o = y + (int64_t)blockIdx.x * n;
  float acc = MODE <= 1 ? -INFINITY : 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) take<MODE>(acc, r[j]);
  const float A = block_reduce<(MODE <= 1)>(acc, scratch);
  float B = 0.f;
  if (MODE <= 1) {
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += expf(r[j] - A);
    B = block_reduce<false>(sum, scratch);
  }
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = r[j];
    if (MODE == 0) o[j] = expf(v - A) / B;
    else if (MODE == 1) o[j] = v - A - logf(B);
    else if (MODE == 2) o[j] = v / (A / (float)n);
    else o[j] = v / sqrtf(A);
  }
}

template <int MODE, int T, int MINB>
void launch(const float* xp, float* yp, int64_t rows, int64_t n, bool vec, cudaStream_t st) {
  const int64_t chunk = (((n + CL - 1) / CL) + 3) & ~int64_t(3);
  const int64_t bytes = (chunk + 8) * (int64_t)sizeof(float);
  if (bytes <= MAX_SMEM && rows * CL <= 0x7fffffffLL) {
    auto k = row_cluster<MODE, T, MINB>;
    C10_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    k<<<(unsigned)(rows * CL), T, (size_t)bytes, st>>>(xp, yp, n, chunk, vec);
  } else {
    row_simple<MODE><<<(unsigned)rows, 1024, 0, st>>>(xp, yp, n);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

torch::Tensor row_op(torch::Tensor x, int64_t mode) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat, "2-D fp32 CUDA tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t rows = xc.size(0), n = xc.size(1);
  if (rows == 0 || n == 0) return y;
  const float* xp = xc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const bool vec = ((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(yp)) & 15) == 0;
  cudaStream_t st = at::cuda::getCurrentCUDAStream();
  switch (mode) {
    case 0: launch<0, 1024, 1>(xp, yp, rows, n, vec, st); break;
    case 1: launch<1, 1024, 1>(xp, yp, rows, n, vec, st); break;
    case 2: launch<2, 256, 4>(xp, yp, rows, n, vec, st); break;
    default: launch<3, 256, 4>(xp, yp, rows, n, vec, st); break;
  }
  return y;
}
"""

_ext = load_inline(
    name="corpus_kb38_l1norm_cluster",
    cpp_sources="torch::Tensor row_op(torch::Tensor x, int64_t mode);",
    cuda_sources=_CUDA,
    functions=["row_op"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2
        return _ext.row_op(x, 2)
