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


CUDA_HALF_GEMM = '''from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <mma.h>
using namespace nvcuda;
constexpr int BM = 64, BK = 32, PAD = 8;

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\\\n" :: "r"(dst), "l"(gmem));
}

__global__ void gemm(const __half* A, const __half* B, float* C, int M, int N, int K) {
    __shared__ __half As[2][BM][BK + PAD];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (threadIdx.x < BM) cp_async16(&As[0][threadIdx.x][0], A + threadIdx.x * K + k0);
        __syncthreads();
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf;
            wmma::load_matrix_sync(af, &As[0][0][kk], BK + PAD);
            wmma::load_matrix_sync(bf, B + kk * N, N);
            wmma::mma_sync(acc, af, bf, acc);
        }
    }
}

__global__ void scale_h8(const __half* x, __half* y, int64_t n) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n / 8) return;
    uint4 u = reinterpret_cast<const uint4*>(x)[k];
    reinterpret_cast<uint4*>(y)[k] = u;
}

__global__ void row_norm(const float* x, float* out, int n) {
    __shared__ float red[32];
    float q = x[blockIdx.x * n + threadIdx.x];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
    if (lane == 0) red[warp] = q;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = red[0];
}

void launch(const __half* x, __half* y, int64_t n) {
    uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (n % 8 == 0 && (bits & 15) == 0) {
        scale_h8<<<(n / 8 + 127) / 128, 128>>>(x, y, n);
    } else {
        scale_scalar<<<(n + 255) / 256, 256>>>(x, y, n);
    }
}
"""
ext = load_inline("gemm_ext", cpp_sources="", cuda_sources=SRC)
'''
"""CUDA constructs from the live corpus: WMMA tiles, cp.async, a padded half tile, a ``uint4``
path behind an alignment check, a block reduction through one value per warp."""


def _line(source: str, finding) -> str:
    return source.splitlines()[finding.line - 1]


def test_cuda_tiles_async_copies_padding_vectors_and_alignment_checks():
    found = analyze_kernel(CUDA_HALF_GEMM)
    assert "mma_sync" in _line(CUDA_HALF_GEMM, found["tiling"])
    assert "cp.async" in _line(CUDA_HALF_GEMM, found["async_copy"])
    assert "[BK + PAD]" in _line(CUDA_HALF_GEMM, found["smem_padding"])
    assert "reinterpret_cast<const uint4*>" in _line(CUDA_HALF_GEMM, found["vectorized_memory"])
    assert "red[warp] = q" in _line(CUDA_HALF_GEMM, found["block_reduction"])
    assert "<<<" in _line(CUDA_HALF_GEMM, found["launch_config"])
    check = found["aligned_vector_path"]
    assert _line(CUDA_HALF_GEMM, check).strip() == "if (n % 8 == 0 && (bits & 15) == 0) {"
    # the example is the branch it opens, else included
    snippet = technique_snippet(CUDA_HALF_GEMM, "aligned_vector_path", check.line)
    assert snippet.splitlines()[0] == "if (n % 8 == 0 && (bits & 15) == 0) {"
    assert "} else {" in snippet and snippet.endswith("}") and "scale_scalar<<<" in snippet
    mma = technique_snippet(CUDA_HALF_GEMM, "tiling", found["tiling"].line)
    assert mma.startswith("for (int kk = 0; kk < BK; kk += 16) {") and "mma_sync" in mma
    copy = technique_snippet(CUDA_HALF_GEMM, "async_copy", found["async_copy"].line)
    assert copy.startswith("__device__ __forceinline__ void cp_async16(")


def test_unpadded_tiles_and_unchecked_vectors_are_not_credited():
    plain = CUDA_HALF_GEMM.replace("[BK + PAD]", "[BK]").replace("(bits & 15) == 0", "true")
    plain = plain.replace("uintptr_t bits = reinterpret_cast<uintptr_t>(x) | ", "auto b = ")
    found = analyze_kernel(plain)
    assert "smem_padding" not in found and "aligned_vector_path" not in found
    assert "vectorized_memory" in found


def test_a_template_shows_its_own_techniques_not_the_other_sessions_of_its_task(tmp_path):
    """cross_entropy's twelfth session (CUDA: warp shuffles, a TMA ring) was slower than its
    eighth (Triton), whose kernel stays the template; the distiller gave the Triton template
    the CUDA session's techniques, which moved it into gpu-reductions' scripts as if it showed
    warp shuffles. Test-case tags keep every solving kernel's techniques."""
    from tests.distill.tracegen import ROW_SUM_MASKED
    from upskills.distill.pipeline import DistillConfig, DistillResult, _collect

    h = load_task("row_sum").hash
    for i, (src, speed) in enumerate([(ROW_SUM_MASKED, 2.0), (CUDA_ROW_SUM, 1.8)]):
        write_trace(
            tmp_path / "traces" / f"s{i}.jsonl",
            [(src, verdict(src, True, task_hash=h, speedup=speed, gpu="H200"))],
            task_hash=h,
            started=f"2026-01-0{i + 1}T00:00:00.000000+00:00",
        )
    paths = sorted((tmp_path / "traces").glob("*.jsonl"))
    ev = _collect(paths, DistillConfig(), DistillResult(), None)
    assert ev.best[h].source == ROW_SUM_MASKED
    triton, cuda = set(analyze_kernel(ROW_SUM_MASKED)), set(analyze_kernel(CUDA_ROW_SUM))
    assert "warp_shuffle" in cuda - triton
    assert ev.template_techniques[h] == triton
    assert ev.techniques[h] == triton | cuda
