# Verified kernel for task `39_L2Norm_` (task hash 2111f66c585cd247), from trace 6446fb7380fc4b508b32dfff62d91994.
# Measured: 1.97x eager, 2.23x torch.compile on NVIDIA H200.
# Check it: upskills check 39_L2Norm_ scripts/39_L2Norm__kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Row-wise op over dim 1 of an fp32 [rows, n] tensor, each row held on chip by one thread-block
# cluster: every CTA's slice arrives in shared memory by bulk asynchronous copies (TMA,
# cp.async.bulk on an mbarrier), and each CTA writes its slice from shared memory: one read, one
# write. Round 12: the partials are no longer swapped through two cluster barriers (each
# barrier.cluster.arrive.release compiles to MEMBAR.ALL.GPU in every thread, and round 11's
# profile showed 9.3 membar stall cycles per instruction): each CTA pushes its (max, sum) into
# every peer's shared memory with st.async, which completes on the peer's own mbarrier, and waits
# on its own mbarrier for the cluster's partials. One relaxed cluster barrier at the start (the
# peers' mbarriers are initialised before anyone pushes) overlaps the load; none at the end (a
# CTA's shared memory receives nothing after its wait completes).
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <cmath>

// MODE 0: softmax, 1: log-softmax, 2: x / mean(|x|), 3: x / ||x||_2
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

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// The shared-memory address `p` of this CTA, in CTA `rank` of the cluster.
__device__ __forceinline__ unsigned peer_addr(const void* p, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(p)), "r"(rank));
  return remote;
}
__device__ __forceinline__ void mbar_wait(unsigned mb, unsigned phase) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_MB:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_MB;\n}\n" ::"r"(mb), "r"(phase) : "memory");
}

template <int MODE, int T, int MINB>
__global__ void __launch_bounds__(T, MINB)
row_tma(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t chunk, int cl) {
  extern __shared__ float4 smem4[];
  float* s = reinterpret_cast<float*>(smem4);
  __shared__ float scratch[33];
  __shared__ alignas(8) float2 parts[16];  // (partial, sum) of each CTA of the cluster, pushed here
  __shared__ alignas(8) unsigned long long bar, xbar;
  const unsigned rank = cluster_rank();
  const int64_t base = (int64_t)(blockIdx.x / cl) * n;
  const int64_t lo = base + ((int64_t)rank * chunk < n ? (int64_t)rank * chunk : n);
  const int64_t hi = base + (((int64_t)rank + 1) * chunk < n ? ((int64_t)rank + 1) * chunk : n);
  const int64_t sb = lo & ~int64_t(3);
  int64_t a = (lo + 3) & ~int64_t(3);  // [lo, a) scalar head, [a, b) bulk body, [b, hi) scalar tail
  if (a > hi) a = hi;
  const int64_t b = a + ((hi - a) & ~int64_t(3));
  const unsigned body_bytes = (unsigned)((b - a) * 4);
  const unsigned mb = smem_addr(&bar), xb = smem_addr(&xbar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(mb) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(xb) : "memory");
    // this CTA's own arrival at xbar, expecting one 8-byte push from every CTA of the cluster
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(xb), "r"(8 * cl) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(mb), "r"(body_bytes) : "memory");
    // the body in pieces of at most 32 KiB, all issued at once
    const char* src = reinterpret_cast<const char*>(x + a);
    const unsigned dst = smem_addr(s + (a - sb));
    for (unsigned off = 0; off < body_bytes; off += 32768u) {
      const unsigned len = body_bytes - off < 32768u ? body_bytes - off : 32768u;
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
          ::"r"(dst + off), "l"(src + off), "r"(len), "r"(mb) : "memory");
    }
  }
  cluster_arrive_relaxed();  // after thread 0's init: a peer's push finds xbar ready
  float acc = MODE <= 1 ? -INFINITY : 0.f;
  for (int64_t j = lo + threadIdx.x; j < a; j += T) { float v = x[j]; s[j - sb] = v; take<MODE>(acc, v); }
  for (int64_t j = b + threadIdx.x; j < hi; j += T) { float v = x[j]; s[j - sb] = v; take<MODE>(acc, v); }
  __syncthreads();  // the barrier's init is seen by every thread before it waits on it
  mbar_wait(mb, 0);
  {
    const float4* s4 = reinterpret_cast<const float4*>(s + (a - sb));
    const int64_t nv = (b - a) >> 2;
    for (int64_t q = threadIdx.x; q < nv; q += T) {
      const float4 v = s4[q];
      take<MODE>(acc, v.x); take<MODE>(acc, v.y); take<MODE>(acc, v.z); take<MODE>(acc, v.w);
    }
  }
  const float local = block_reduce<(MODE <= 1)>(acc, scratch);
  float local_sum = 0.f;
  if (MODE <= 1) {  // exp(v - local max); kept in shared memory for softmax
    float sum = 0.f;
    for (int64_t j = lo + threadIdx.x; j < hi; j += T) {
      const float e = local == -INFINITY ? 0.f : expf(s[j - sb] - local);
      if (MODE == 0) s[j - sb] = e;
      sum += e;
    }
    local_sum = block_reduce<false>(sum, scratch);
  }
  cluster_wait();  // every peer has initialised its xbar (long ago: the arrive came before the load)
  if (threadIdx.x < (unsigned)cl) {  // push (partial, sum) into slot `rank` of CTA `threadIdx.x`
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n"
                 ::"r"(peer_addr(&parts[rank], threadIdx.x)), "f"(local), "f"(local_sum),
                 "r"(peer_addr(&xbar, threadIdx.x)) : "memory");
  }
  mbar_wait(xb, 0);  // all cl pushes are here; nothing is written into this CTA after this
  if (threadIdx.x < 32) {
    float pm = MODE <= 1 ? -INFINITY : 0.f, ps = 0.f;
    if (threadIdx.x < (unsigned)cl) {
      pm = parts[threadIdx.x].x;
      ps = parts[threadIdx.x].y;
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
  __syncthreads();
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

// Rows a cluster cannot hold, or pointers not 16-byte aligned: one CTA per row, reading it again.
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

constexpr int64_t MAX_SMEM = 200 * 1024;

// Launch with clusters of `cl` CTAs if such a cluster fits the GPU; false if it does not.
template <int MODE, int T, int MINB>
bool launch_cluster(const float* xp, float* yp, int64_t rows, int64_t n, int cl, cudaStream_t st) {
  const int64_t chunk = (((n + cl - 1) / cl) + 3) & ~int64_t(3);
  const int64_t bytes = (chunk + 8) * (int64_t)sizeof(float);
  if (bytes > MAX_SMEM || rows * cl > 0x7fffffffLL) return false;
  auto k = row_tma<MODE, T, MINB>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  C10_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  if (cl > 8) C10_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)cl;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)(rows * cl), 1, 1);
  cfg.blockDim = dim3(T, 1, 1);
  cfg.dynamicSmemBytes = (size_t)bytes;
  cfg.stream = st;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int active = 0;
  if (cudaOccupancyMaxActiveClusters(&active, (void*)k, &cfg) != cudaSuccess || active <= 0) {
    (void)cudaGetLastError();
    return false;
  }
  C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, xp, yp, n, chunk, cl));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <int MODE, int T, int MINB>
void launch(const float* xp, float* yp, int64_t rows, int64_t n, bool vec, int cl, cudaStream_t st) {
  if (vec && (launch_cluster<MODE, T, MINB>(xp, yp, rows, n, cl, st) ||
              launch_cluster<MODE, T, MINB>(xp, yp, rows, n, 8, st))) return;
  row_simple<MODE><<<(unsigned)rows, 1024, 0, st>>>(xp, yp, n);
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
  switch (mode) {  // softmaxes: 16-CTA clusters (96 KiB each, two per SM); norms: 8 (33 KiB, six per SM)
    case 0: launch<0, 512, 2>(xp, yp, rows, n, vec, 16, st); break;
    case 1: launch<1, 512, 2>(xp, yp, rows, n, vec, 16, st); break;
    case 2: launch<2, 256, 6>(xp, yp, rows, n, vec, 8, st); break;
    default: launch<3, 256, 6>(xp, yp, rows, n, vec, 8, st); break;
  }
  return y;
}
"""

_ext = load_inline(
    name="corpus_kb39_l2norm_push",
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
        return _ext.row_op(x, 3)
