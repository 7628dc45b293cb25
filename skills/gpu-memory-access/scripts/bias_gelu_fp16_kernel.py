# Verified kernel for task `bias_gelu_fp16` (task hash f1c610c8ff13ea84), from trace 65fcb19d313e4ef294c7ba9b8415bda0.
# Measured: 3.42x eager, 1.44x torch.compile on NVIDIA H200.
# Check it: upskills check bias_gelu_fp16 scripts/bias_gelu_fp16_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Round 11 (sixth session's plan). Round 7's A&S erf kernel (s3): 0.0848 ms, 2.99x eager,
# 74% of copy bandwidth, ncu SM throughput ~90%: the ALU, not DRAM, sets the time (one
# reciprocal, one exp and ~20 float ops per element, plus the half<->float conversions).
# Attempt: GELU's tanh form, 0.5*v*(1 + tanh(sqrt(2/pi)*(v + 0.044715 v^3))), evaluated on
# half2 pairs: HADD2 (bias), HMUL2, HFMA2, HMUL2, one tanh.approx.f16x2 (one MUFU op for two
# elements), HMUL2, HFMA2 -- about 7 instructions per two elements instead of ~50. Checked on
# the CPU first by emulating that sequence in fp16 with tanh's approximation error (2^-10.7
# relative) against F.gelu on 2048x8192 randn + bias: max |err| 3.9e-3, relative L2 5.8e-4,
# no element outside the fp16 tolerance (atol 1e-2*rms, rtol 1e-2). Memory path unchanged:
# two 16-byte chunks per thread loaded before any math, streaming loads/stores.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ __half2 tanh_h2(__half2 x) {
    unsigned in = *reinterpret_cast<unsigned*>(&x), out;
    asm("tanh.approx.f16x2 %0, %1;" : "=r"(out) : "r"(in));
    return *reinterpret_cast<__half2*>(&out);
}

__device__ __forceinline__ __half2 gelu_h2(__half2 v) {
    const __half2 c0 = __float2half2_rn(0.7978845608f);   // sqrt(2/pi)
    const __half2 c1 = __float2half2_rn(0.0356774081f);   // sqrt(2/pi) * 0.044715
    const __half2 half = __float2half2_rn(0.5f);
    __half2 u = __hmul2(v, __hfma2(__hmul2(v, v), c1, c0));
    __half2 hv = __hmul2(v, half);
    return __hfma2(hv, tanh_h2(u), hv);
}

__device__ __forceinline__ float gelu_f(float v) {
    float u = 0.7978845608f * fmaf(0.044715f * v, v * v, v);
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    return 0.5f * v * (1.f + t);
}

__global__ void __launch_bounds__(256) bias_gelu_h2(const __half* __restrict__ x, const __half* __restrict__ b, __half* __restrict__ y, int64_t n) {
    int64_t n8 = n / 8;
    int64_t k0 = (int64_t)blockIdx.x * (2 * blockDim.x) + threadIdx.x;
    int64_t base = (int64_t)blockIdx.y * n;
    uint4 xu[2], bu[2];
    #pragma unroll
    for (int u = 0; u < 2; ++u) {
        int64_t k = k0 + u * blockDim.x;
        if (k < n8) { xu[u] = __ldcs(reinterpret_cast<const uint4*>(x + base) + k); bu[u] = __ldg(reinterpret_cast<const uint4*>(b) + k); }
    }
    #pragma unroll
    for (int u = 0; u < 2; ++u) {
        int64_t k = k0 + u * blockDim.x;
        if (k >= n8) continue;
        __half2* xh = reinterpret_cast<__half2*>(&xu[u]);
        const __half2* bh = reinterpret_cast<const __half2*>(&bu[u]);
        #pragma unroll
        for (int j = 0; j < 4; ++j) xh[j] = gelu_h2(__hadd2(xh[j], bh[j]));
        __stcs(reinterpret_cast<uint4*>(y + base) + k, xu[u]);
    }
}

__global__ void bias_gelu_scalar(const __half* __restrict__ x, const __half* __restrict__ b, __half* __restrict__ y, int64_t n) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) return;
    int64_t i = (int64_t)blockIdx.y * n + c;
    y[i] = __float2half_rn(gelu_f(__half2float(__hadd(x[i], b[c]))));
}

torch::Tensor bias_gelu_fwd(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kHalf, "2-D fp16 CUDA");
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t m = xc.size(0), n = xc.size(1);
    if (m == 0 || n == 0) return y;
    TORCH_CHECK(m <= 65535, "rows go on grid.y (at most 65535)");
    auto xp = reinterpret_cast<const __half*>(xc.data_ptr<at::Half>());
    auto bp = reinterpret_cast<const __half*>(bc.data_ptr<at::Half>());
    auto yp = reinterpret_cast<__half*>(y.data_ptr<at::Half>());
    uintptr_t bits = reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(bp) | reinterpret_cast<uintptr_t>(yp);
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n % 8 == 0 && (bits & 15) == 0) {
        dim3 grid((unsigned)((n / 8 + 511) / 512), (unsigned)m);
        bias_gelu_h2<<<grid, 256, 0, stream>>>(xp, bp, yp, n);
    } else {
        dim3 grid((unsigned)((n + 255) / 256), (unsigned)m);
        bias_gelu_scalar<<<grid, 256, 0, stream>>>(xp, bp, yp, n);
    }
    return y;
}
"""

_ext = load_inline(
    name="corpus_bias_gelu_fp16_tanh_h2",
    cpp_sources="torch::Tensor bias_gelu_fwd(torch::Tensor x, torch::Tensor bias);",
    cuda_sources=_CUDA,
    functions=["bias_gelu_fwd"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return _ext.bias_gelu_fwd(x, bias)
