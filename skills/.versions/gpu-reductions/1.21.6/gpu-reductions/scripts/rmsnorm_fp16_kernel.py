# Verified kernel for task `rmsnorm_fp16` (task hash dd6d1c7e53a6e29f), from trace 99623f2493db4dbb9b805b8821cf588a.
# Measured: 13.05x eager, 1.03x torch.compile on NVIDIA H200.
# Check it: upskills check rmsnorm_fp16 scripts/rmsnorm_fp16_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# RMSNorm, fp16 [M, N] in and out, fp32 math, the row read once: each of a CTA's 256 threads
# keeps its up to 4 x 16-byte chunks of the row (N <= 8192) in registers from the sum of squares
# to the output, and loads its weight chunks before the block reduction so they arrive while
# the barrier waits. Other shapes (N > 8192, N % 8 != 0, unaligned pointers) take the
# two-pass kernel of the first session.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float block_sum(float q, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    q = warp_sum(q);
    if (lane == 0) red[warp] = q;
    __syncthreads();
    if (warp == 0) {
        float t = lane < nw ? red[lane] : 0.f;
        t = warp_sum(t);
        if (lane == 0) red[32] = t;
    }
    __syncthreads();
    return red[32];
}

__device__ __forceinline__ float sumsq8(uint4 u) {
    const __half2* h = reinterpret_cast<const __half2*>(&u);
    float q = 0.f;
    #pragma unroll
    for (int j = 0; j < 4; ++j) { float2 f = __half22float2(h[j]); q = fmaf(f.x, f.x, fmaf(f.y, f.y, q)); }
    return q;
}

__device__ __forceinline__ uint4 scale8(uint4 u, uint4 wu, float r) {
    __half2* h = reinterpret_cast<__half2*>(&u);
    const __half2* wh = reinterpret_cast<const __half2*>(&wu);
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float2 f = __half22float2(h[j]);
        float2 g = __half22float2(wh[j]);
        h[j] = __floats2half2_rn(f.x * r * g.x, f.y * r * g.y);
    }
    return u;
}

// One row per 256-thread CTA; chunk k = threadIdx.x + v * 256 of the row's n / 8 chunks.
template <int V>
__global__ void __launch_bounds__(256) rmsnorm_regs(const __half* __restrict__ x, const __half* __restrict__ w,
                                                    __half* __restrict__ y, int64_t n, float eps) {
    __shared__ float red[33];
    const int64_t n8 = n / 8;
    const uint4* row = reinterpret_cast<const uint4*>(x + (int64_t)blockIdx.x * n);
    uint4* out = reinterpret_cast<uint4*>(y + (int64_t)blockIdx.x * n);
    const uint4* w8 = reinterpret_cast<const uint4*>(w);
    uint4 u[V], wu[V];
    #pragma unroll
    for (int v = 0; v < V; ++v) {
        const int64_t k = threadIdx.x + (int64_t)v * 256;
        u[v] = k < n8 ? row[k] : make_uint4(0u, 0u, 0u, 0u);
    }
    #pragma unroll
    for (int v = 0; v < V; ++v) {
        const int64_t k = threadIdx.x + (int64_t)v * 256;
        wu[v] = k < n8 ? w8[k] : make_uint4(0u, 0u, 0u, 0u);
    }
    float q = 0.f;
    #pragma unroll
    for (int v = 0; v < V; ++v) q += sumsq8(u[v]);
    const float r = rsqrtf(block_sum(q, red) / (float)n + eps);
    #pragma unroll
    for (int v = 0; v < V; ++v) {
        const int64_t k = threadIdx.x + (int64_t)v * 256;
        if (k < n8) out[k] = scale8(u[v], wu[v], r);
    }
}

__global__ void rmsnorm_two_pass(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y,
                                 int64_t n, float eps, bool vec) {
    __shared__ float red[33];
    const __half* row = x + (int64_t)blockIdx.x * n;
    __half* out = y + (int64_t)blockIdx.x * n;
    const int64_t n8 = vec ? n / 8 : 0;
    float q = 0.f;
    for (int64_t k = threadIdx.x; k < n8; k += blockDim.x) q += sumsq8(reinterpret_cast<const uint4*>(row)[k]);
    for (int64_t i = n8 * 8 + threadIdx.x; i < n; i += blockDim.x) { float f = __half2float(row[i]); q += f * f; }
    const float r = rsqrtf(block_sum(q, red) / (float)n + eps);
    for (int64_t k = threadIdx.x; k < n8; k += blockDim.x)
        reinterpret_cast<uint4*>(out)[k] = scale8(reinterpret_cast<const uint4*>(row)[k], reinterpret_cast<const uint4*>(w)[k], r);
    for (int64_t i = n8 * 8 + threadIdx.x; i < n; i += blockDim.x)
        out[i] = __float2half_rn(__half2float(row[i]) * r * __half2float(w[i]));
}

torch::Tensor rmsnorm_fwd(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kHalf, "2-D fp16 CUDA");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t m = xc.size(0), n = xc.size(1);
    if (m == 0 || n == 0) return y;
    auto xp = reinterpret_cast<const __half*>(xc.data_ptr<at::Half>());
    auto wp = reinterpret_cast<const __half*>(wc.data_ptr<at::Half>());
    auto yp = reinterpret_cast<__half*>(y.data_ptr<at::Half>());
    uintptr_t bits = reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(wp) | reinterpret_cast<uintptr_t>(yp);
    const bool vec = (n % 8 == 0) && ((bits & 15) == 0);
    auto st = at::cuda::getCurrentCUDAStream();
    const int64_t n8 = n / 8;
    if (vec && n8 <= 256) rmsnorm_regs<1><<<(unsigned)m, 256, 0, st>>>(xp, wp, yp, n, (float)eps);
    else if (vec && n8 <= 512) rmsnorm_regs<2><<<(unsigned)m, 256, 0, st>>>(xp, wp, yp, n, (float)eps);
    else if (vec && n8 <= 1024) rmsnorm_regs<4><<<(unsigned)m, 256, 0, st>>>(xp, wp, yp, n, (float)eps);
    else rmsnorm_two_pass<<<(unsigned)m, 256, 0, st>>>(xp, wp, yp, n, (float)eps, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="corpus_rmsnorm_fp16_regs",
    cpp_sources="torch::Tensor rmsnorm_fwd(torch::Tensor x, torch::Tensor w, double eps);",
    cuda_sources=_CUDA,
    functions=["rmsnorm_fwd"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter((1 + 0.1 * torch.randn(n)).to(torch.float16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.rmsnorm_fwd(x, self.weight, 1e-6)
