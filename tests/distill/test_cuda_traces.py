"""Synthetic CUDA traces (``load_inline`` kernels): warp-shuffle and vectorization lessons."""

from __future__ import annotations

from tests.distill.tracegen import verdict, write_trace
from upskills.distill import distill
from upskills.distill.snippets import technique_snippet
from upskills.distill.techniques import analyze_kernel
from upskills.tasks import load_task

CUDA_ROW_SUM = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void row_sum_kernel(const float* x, float* out, int n) {
    const float* row = x + (long)blockIdx.x * n;
    float acc = 0.f;
    int n4 = n / 4;
    const float4* row4 = reinterpret_cast<const float4*>(row);
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
        float4 v = row4[i];
        acc += v.x + v.y + v.z + v.w;
    }
    for (int i = n4 * 4 + threadIdx.x; i < n; i += blockDim.x) acc += row[i];
    __shared__ float partial[32];
    acc = warp_sum(acc);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
        acc = warp_sum(acc);
        if (threadIdx.x == 0) out[blockIdx.x] = acc;
    }
}

torch::Tensor row_sum(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    row_sum_kernel<<<x.size(0), 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}
"""

ext = load_inline("row_sum_ext", cpp_sources="torch::Tensor row_sum(torch::Tensor x);",
                  cuda_sources=CUDA_SRC, functions=["row_sum"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_sum(x.contiguous())
'''


def test_cuda_techniques_and_their_snippets():
    found = analyze_kernel(CUDA_ROW_SUM)
    assert {"warp_shuffle", "vectorized_memory", "shared_memory", "launch_config"} <= set(found)
    shfl = technique_snippet(CUDA_ROW_SUM, "warp_shuffle", found["warp_shuffle"].line)
    assert shfl.startswith("__device__ float warp_sum(float v) {") and shfl.endswith("}")
    assert "__shfl_down_sync" in shfl and "ModelNew" not in shfl
    vec = technique_snippet(CUDA_ROW_SUM, "vectorized_memory", found["vectorized_memory"].line)
    assert "float4" in vec and "class ModelNew" not in vec


def test_cuda_traces_distill_into_warp_shuffle_and_vectorization_lessons(tmp_path):
    h = load_task("row_sum").hash
    for i in range(2):
        write_trace(
            tmp_path / "traces" / f"cuda{i}.jsonl",
            [(CUDA_ROW_SUM, verdict(CUDA_ROW_SUM, True, task_hash=h, speedup=1.8, gpu="H200"))],
            task_hash=h,
        )
    result = distill([tmp_path / "traces"], tmp_path / "skills", None)
    assert {p.name for p in result.packs} >= {"gpu-reductions", "gpu-memory-access"}
    red = (tmp_path / "skills/gpu-reductions/SKILL.md").read_text()
    assert "### Warp-shuffle reductions (2 traces)" in red
    assert "```cpp\n__device__ float warp_sum(float v) {" in red
    assert "lower to warp shuffles" in red  # how tl.sum/tl.max relate to the CUDA pattern
    mem = (tmp_path / "skills/gpu-memory-access/SKILL.md").read_text()
    assert "### Vectorized loads and stores (2 traces)" in mem and "float4" in mem
    assert "Final kernels using it" not in red + mem
    assert "scripts/row_sum_kernel.py" in mem and "1.80x eager" in mem
