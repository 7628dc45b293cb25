# Verified kernel for task `rmsnorm_fp16` (task hash dd6d1c7e53a6e29f), from trace dfb1ef3231a44360aa3b8e09383059b7.
# Measured: 11.82x eager, 0.93x torch.compile on NVIDIA H200.
# Check it: upskills check rmsnorm_fp16 scripts/rmsnorm_fp16_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# RMSNorm, fp16 [M, N] in and out, fp32 math. One 256-thread block per row; 128-bit loads of
# 8 halves (uint4 viewed as 4 __half2) when N % 8 == 0 and the pointers are aligned, sum of
# squares in fp32 reduced with __shfl_xor_sync then across warps in shared memory; the row is
# read a second time for the output (it is 16 KiB: still in L1/L2). Zero rows give 0 (eps).
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void rmsnorm_h2(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y,
                           int64_t n, float eps, bool vec) {
    __shared__ float red[32];
    const __half* row = x + (int64_t)blockIdx.x * n;
    __half* out = y + (int64_t)blockIdx.x * n;
    int64_t n8 = vec ? n / 8 : 0;
    float q = 0.f;
    for (int64_t k = threadIdx.x; k < n8; k += blockDim.x) {
        uint4 u = reinterpret_cast<const uint4*>(row)[k];
        const __half2* h = reinterpret_cast<const __half2*>(&u);
        #pragma unroll
        for (int j = 0; j < 4; ++j) { float2 f = __half22float2(h[j]); q += f.x * f.x + f.y * f.y; }
    }
    for (int64_t i = n8 * 8 + threadIdx.x; i < n; i += blockDim.x) { float f = __half2float(row[i]); q += f * f; }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    q = warp_sum(q);
    if (lane == 0) red[warp] = q;
    __syncthreads();
    if (warp == 0) {
        float t = lane < nw ? red[lane] : 0.f;
        t = warp_sum(t);
        if (lane == 0) red[0] = t;
    }
    __syncthreads();
    const float r = rsqrtf(red[0] / (float)n + eps);
    for (int64_t k = threadIdx.x; k < n8; k += blockDim.x) {
        uint4 u = reinterpret_cast<const uint4*>(row)[k];
        uint4 wu = reinterpret_cast<const uint4*>(w)[k];
        __half2* h = reinterpret_cast<__half2*>(&u);
        const __half2* wh = reinterpret_cast<const __half2*>(&wu);
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            float2 f = __half22float2(h[j]);
            float2 g = __half22float2(wh[j]);
            h[j] = __floats2half2_rn(f.x * r * g.x, f.y * r * g.y);
        }
        reinterpret_cast<uint4*>(out)[k] = u;
    }
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
    bool vec = (n % 8 == 0) && ((bits & 15) == 0);
    rmsnorm_h2<<<(unsigned)m, 256, 0, at::cuda::getCurrentCUDAStream()>>>(xp, wp, yp, n, (float)eps, vec);
    return y;
}
"""

_ext = load_inline(
    name="corpus_rmsnorm_fp16_h2",
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
