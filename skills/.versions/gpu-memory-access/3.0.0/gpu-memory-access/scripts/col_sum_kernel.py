# Verified kernel for task `col_sum` (task hash 06a6e5e7ee0a0e5e), from trace 2a3d305b83dc4aab991a5ab49a5a2525.
# Measured: 1.09x eager, 1.06x torch.compile on NVIDIA H200.
# Check it: upskills check col_sum scripts/col_sum_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# col_sum (x.sum(0) of an fp32 [M, N]), fifth session. Round 11's CUDA kernel (32 x 8 blocks,
# one float per thread per row: a warp reads 128 bytes of a 32 KiB row) reached 80.8% of copy,
# below the Triton final's 83% (whose programs read 1 KiB row pieces); ncu: occupancy 94%, yet
# 57 long-scoreboard stall cycles per instruction. Wider pieces again, and more bytes per load:
# each thread owns 4 neighbouring columns and loads them as one float4 (a warp reads 512
# contiguous bytes per row, a 32 x 8 block covers 128 columns), 4 float4 accumulators per thread
# (16 floats, 4 loads of 16 bytes in flight). At 8192 x 8192: 64 column strips x 16 row ranges
# = 1024 CTAs of 256 threads, one wave on 132 SMs (8 per SM). Partials, the per-strip counter and
# the last CTA's in-order sum (deterministic) as in round 11. Rows whose width is not a multiple
# of 4 floats or pointers not 16-byte aligned: round 11's one-float-per-thread kernel.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

constexpr int TY = 8;

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ float4 add(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
template <typename V> __device__ __forceinline__ V zero();
template <> __device__ __forceinline__ float zero<float>() { return 0.f; }
template <> __device__ __forceinline__ float4 zero<float4>() { return make_float4(0.f, 0.f, 0.f, 0.f); }

// V = float4: x, part and y are read and written as float4 (nv = n / 4 vectors per row).
template <typename V>
__global__ void __launch_bounds__(256) col_sum_split(const V* __restrict__ x, V* __restrict__ part,
    V* __restrict__ y, unsigned* __restrict__ count, int64_t m, int64_t nv, int64_t rows_per, int split) {
  __shared__ V ps[TY][32];
  __shared__ bool last;
  const int64_t col = (int64_t)blockIdx.x * 32 + threadIdx.x;
  const bool ok = col < nv;
  const int64_t r0 = (int64_t)blockIdx.y * rows_per;
  const int64_t r1 = r0 + rows_per < m ? r0 + rows_per : m;
  V a0 = zero<V>(), a1 = zero<V>(), a2 = zero<V>(), a3 = zero<V>();
  if (ok) {
    const V* p = x + col;
    int64_t j = r0 + threadIdx.y;
    for (; j + 3 * TY < r1; j += 4 * TY) {
      const V v0 = p[j * nv], v1 = p[(j + TY) * nv], v2 = p[(j + 2 * TY) * nv], v3 = p[(j + 3 * TY) * nv];
      a0 = add(a0, v0); a1 = add(a1, v1); a2 = add(a2, v2); a3 = add(a3, v3);
    }
    for (; j < r1; j += TY) a0 = add(a0, p[j * nv]);
  }
  ps[threadIdx.y][threadIdx.x] = add(add(a0, a1), add(a2, a3));
  __syncthreads();
  if (threadIdx.y == 0) {
    V t = zero<V>();
#pragma unroll
    for (int k = 0; k < TY; ++k) t = add(t, ps[k][threadIdx.x]);
    if (split == 1) {
      if (ok) y[col] = t;
    } else {
      if (ok) part[(int64_t)blockIdx.y * nv + col] = t;
      __threadfence();  // the partial is visible device-wide before the counter says so
    }
  }
  if (split == 1) return;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) last = atomicAdd(&count[blockIdx.x], 1u) == (unsigned)(split - 1);
  __syncthreads();
  if (last && threadIdx.y == 0) {
    __threadfence();
    if (ok) {
      V t = zero<V>();
      for (int s = 0; s < split; ++s) t = add(t, __ldcg(&part[(int64_t)s * nv + col]));
      y[col] = t;
    }
    if (threadIdx.x == 0) count[blockIdx.x] = 0u;  // ready for the next call (same stream order)
  }
}

template <typename V>
void launch(const float* xp, float* pp, float* yp, unsigned* cp, int64_t m, int64_t nv, int64_t split) {
  const int64_t rows_per = (m + split - 1) / split > 0 ? (m + split - 1) / split : 1;
  const int64_t strips = (nv + 31) / 32;
  TORCH_CHECK(strips < (int64_t)1 << 31, "too many columns");
  dim3 grid((unsigned)strips, (unsigned)split);
  col_sum_split<V><<<grid, dim3(32, TY), 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const V*>(xp), reinterpret_cast<V*>(pp), reinterpret_cast<V*>(yp), cp, m, nv,
      rows_per, (int)split);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

torch::Tensor col_sum(torch::Tensor x, torch::Tensor count) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat, "2-D fp32 CUDA tensor");
  auto xc = x.contiguous();
  const int64_t m = xc.size(0), n = xc.size(1);
  auto y = torch::empty({n}, xc.options());
  if (n == 0) return y;
  TORCH_CHECK(count.numel() >= (n + 31) / 32 && count.scalar_type() == torch::kInt, "counter buffer too small");
  int64_t split = (m + 511) / 512;
  if (split > 16) split = 16;
  if (split < 1) split = 1;
  torch::Tensor part;
  float* pp = nullptr;
  if (split > 1) {
    part = torch::empty({split, n}, xc.options());
    pp = part.data_ptr<float>();
  }
  const float* xp = xc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  unsigned* cp = reinterpret_cast<unsigned*>(count.data_ptr<int>());
  const bool vec = n % 4 == 0 &&
      ((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(yp) | reinterpret_cast<uintptr_t>(pp)) & 15) == 0;
  if (vec) launch<float4>(xp, pp, yp, cp, m, n / 4, split);
  else launch<float>(xp, pp, yp, cp, m, n, split);
  return y;
}
"""

_ext = load_inline(
    name="corpus_col_sum_split_float4",
    cpp_sources="torch::Tensor col_sum(torch::Tensor x, torch::Tensor count);",
    cuda_sources=_CUDA,
    functions=["col_sum"],
    extra_cuda_cflags=["-O3"],
)

_COUNTERS: dict[tuple[torch.device, int], torch.Tensor] = {}


def _counters(device: torch.device, strips: int) -> torch.Tensor:
    """``strips`` zeroed int32 counters on ``device``, kept across calls (each call leaves them at 0)."""
    key = (device, strips)
    if key not in _COUNTERS:
        _COUNTERS[key] = torch.zeros((max(strips, 1),), device=device, dtype=torch.int32)
    return _COUNTERS[key]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.col_sum(x, _counters(x.device, (x.shape[1] + 31) // 32))
