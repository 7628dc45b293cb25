# Verified kernel for task `88_MinGPTNewGelu` (task hash 66049b9026724849), from trace 9cac7fd0434c47ee897fa9752546e0d5.
# Measured: 8.83x eager, 1.36x torch.compile on NVIDIA H200.
# Check it: upskills check 88_MinGPTNewGelu scripts/88_MinGPTNewGelu_kernel.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The reference is seven eager kernels (pow, mul, add, mul, tanh, add, mul): seven passes over
# 256 MiB. One fused pass: float4 loads/stores (16-byte aligned pointers), tanh-form GELU in
# registers, a scalar kernel for the tail and the unaligned case.
_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>

__device__ __forceinline__ float gelu1(float v) {
    const float c = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * v * (1.f + tanhf(c * (v + 0.044715f * v * v * v)));
}

__global__ void newgelu_f4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        v.x = gelu1(v.x); v.y = gelu1(v.y); v.z = gelu1(v.z); v.w = gelu1(v.w);
        y[i] = v;
    }
}

__global__ void newgelu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t start, int64_t n) {
    int64_t i = start + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = gelu1(x[i]);
}

torch::Tensor newgelu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "fp32 CUDA tensor expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    auto stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    bool aligned = ((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(yp)) & 15) == 0;
    int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        newgelu_f4<<<(unsigned)((n4 + threads - 1) / threads), threads, 0, stream>>>(
            reinterpret_cast<const float4*>(xp), reinterpret_cast<float4*>(yp), n4);
    }
    int64_t rest = n - n4 * 4;
    if (rest > 0) {
        newgelu_scalar<<<(unsigned)((rest + threads - 1) / threads), threads, 0, stream>>>(xp, yp, n4 * 4, n);
    }
    return y;
}
"""

_ext = load_inline(
    name="corpus_kb88_newgelu_f4",
    cpp_sources="torch::Tensor newgelu_fwd(torch::Tensor x);",
    cuda_sources=_CUDA,
    functions=["newgelu_fwd"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return _ext.newgelu_fwd(x)
