# Verified kernel for task `bias_gelu_fp16` (task hash f1c610c8ff13ea84), from trace 9d6c112e9b674a1fa69bc97dc1897699.
# Measured: 2.72x eager, 1.15x torch.compile on NVIDIA H200.
# Check it: upskills check bias_gelu_fp16 scripts/bias_gelu_fp16_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# gelu(x + bias), fp16 [M, N] with bias [N], exact erf GELU computed in fp32. The reference
# makes two passes (add, then gelu) with an fp16 intermediate; fused here into one. 2-D grid:
# blockIdx.y is the row, each thread handles 8 halves of it with one 16-byte load of x, one
# of bias and one store (uint4 viewed as four __half2) when N % 8 == 0 and pointers are
# aligned; otherwise scalar halves. The add is rounded to fp16 first, as the reference does.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.f + erff(v * 0.7071067811865476f)); }

__global__ void bias_gelu_v8(const __half* __restrict__ x, const __half* __restrict__ b, __half* __restrict__ y, int64_t n) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;   // 8-half chunk within the row
    if (k >= n / 8) return;
    int64_t base = (int64_t)blockIdx.y * n;
    uint4 xu = reinterpret_cast<const uint4*>(x + base)[k];
    uint4 bu = reinterpret_cast<const uint4*>(b)[k];
    __half2* xh = reinterpret_cast<__half2*>(&xu);
    const __half2* bh = reinterpret_cast<const __half2*>(&bu);
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
        float2 s = __half22float2(__hadd2(xh[j], bh[j]));
        xh[j] = __floats2half2_rn(gelu_erf(s.x), gelu_erf(s.y));
    }
    reinterpret_cast<uint4*>(y + base)[k] = xu;
}

__global__ void bias_gelu_scalar(const __half* __restrict__ x, const __half* __restrict__ b, __half* __restrict__ y, int64_t n) {
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) return;
    int64_t i = (int64_t)blockIdx.y * n + c;
    y[i] = __float2half_rn(gelu_erf(__half2float(__hadd(x[i], b[c]))));
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
        dim3 grid((unsigned)((n / 8 + 127) / 128), (unsigned)m);
        bias_gelu_v8<<<grid, 128, 0, stream>>>(xp, bp, yp, n);
    } else {
        dim3 grid((unsigned)((n + 255) / 256), (unsigned)m);
        bias_gelu_scalar<<<grid, 256, 0, stream>>>(xp, bp, yp, n);
    }
    return y;
}
"""

_ext = load_inline(
    name="corpus_bias_gelu_fp16_v8",
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
