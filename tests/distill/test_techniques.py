from __future__ import annotations

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, ROW_SUM_TUNED
from upskills.distill.techniques import analyze_kernel

SOFTMAX_ONLINE = """
import triton
import triton.language as tl

@triton.jit
def softmax(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
"""

COL_STRIDED = """
import triton
import triton.language as tl

@triton.jit
def col(x_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + rows * N)
    tl.store(out_ptr + tl.program_id(0), tl.sum(v, axis=0))
"""

GEMM = """
import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({"BM": 64}, num_warps=4)], key=["M"])
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
"""

CUDA = '''
from torch.utils.cpp_extension import load_inline
src = r"""
__global__ void transpose(const float* x, float* y, int n) {
    __shared__ float tile[32][32 + 1];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { tile[threadIdx.y][threadIdx.x] = x[i]; }
    __syncthreads();
    float v = x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    float4 q = reinterpret_cast<const float4*>(x)[i];
}
"""
mod = load_inline("t", cpp_sources="", cuda_sources=src)
'''


def test_masking_is_found_only_in_the_fixed_kernel():
    assert "masking" not in analyze_kernel(ROW_SUM_TAIL_DROPPED)
    found = analyze_kernel(ROW_SUM_MASKED)
    assert "masking" in found
    assert "mask=cols < N" in found["masking"].code
    assert ROW_SUM_MASKED.splitlines()[found["masking"].line - 1].strip() == found["masking"].code


def test_row_sum_reduction_accumulation_and_coalescing():
    found = analyze_kernel(ROW_SUM_MASKED)
    assert {"block_reduction", "fp32_accumulation", "coalesced_access"} <= set(found)
    assert "strided_access" not in found
    assert "launch_config" not in found
    assert "launch_config" in analyze_kernel(ROW_SUM_TUNED)


def test_online_softmax_detected_from_the_rescaling_loop():
    assert "online_softmax" in analyze_kernel(SOFTMAX_ONLINE)
    assert "online_softmax" not in analyze_kernel(ROW_SUM_MASKED)


def test_strided_access_when_the_block_index_is_multiplied_by_a_stride():
    found = analyze_kernel(COL_STRIDED)
    assert "strided_access" in found and "coalesced_access" not in found


def test_gemm_tiling_autotune_and_fp32_accumulator():
    found = analyze_kernel(GEMM)
    assert {"tiling", "autotune", "fp32_accumulation", "coalesced_access", "launch_config"} <= set(
        found
    )
    assert "masking" not in found


def test_cuda_source_analysis():
    found = analyze_kernel(CUDA)
    expected = {
        "shared_memory",
        "smem_padding",
        "warp_shuffle",
        "masking",
        "coalesced_access",
        "vectorized_memory",
        "block_reduction",
    }
    assert expected <= set(found)
    assert "__shfl_down_sync" in found["warp_shuffle"].code
    assert "float tile[32][32 + 1]" in found["smem_padding"].code


def test_unparsable_source_has_no_techniques():
    assert analyze_kernel("def broken(:\n") == {}


def test_online_softmax_needs_the_rescale_of_the_running_sum():
    no_rescale = SOFTMAX_ONLINE.replace("s = s * tl.exp(m - m_new) +", "s = s +")
    assert no_rescale != SOFTMAX_ONLINE
    assert "online_softmax" not in analyze_kernel(no_rescale)
    via_name = SOFTMAX_ONLINE.replace(
        "s = s * tl.exp(m - m_new) +", "alpha = tl.exp(m - m_new)\n        s = s * alpha +"
    )
    assert "online_softmax" in analyze_kernel(via_name)


def test_atomic_updates_found_in_triton_and_cuda():
    hist = ROW_SUM_MASKED.replace(
        "tl.store(out_ptr + row, tl.sum(acc, axis=0))",
        "tl.atomic_add(out_ptr + row, tl.sum(acc, axis=0))",
    )
    found = analyze_kernel(hist)
    assert "atomic_update" in found and "tl.atomic_add" in found["atomic_update"].code
    assert "atomic_update" not in analyze_kernel(ROW_SUM_MASKED)
    cuda = 'src = """__global__ void h(int* o, const int* x) { atomicAdd(&o[x[0]], 1); }"""\n'
    assert "atomic_update" in analyze_kernel(cuda)


CLUSTER_ROW = '''
from torch.utils.cpp_extension import load_inline
SRC = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void __cluster_dims__(8, 1, 1) row_sum(const float* x, float* y, long n) {
  __shared__ float part;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) part = x[blockIdx.x];
  cluster.sync();
  if (threadIdx.x < 8) {
    const float* peer = cluster.map_shared_rank(&part, threadIdx.x);
    y[blockIdx.x * 8 + threadIdx.x] = *peer;
  }
  cluster.sync();
}
"""
'''


def test_a_peer_shared_memory_read_is_the_cluster_finding():
    found = analyze_kernel(CLUSTER_ROW)
    assert "map_shared_rank" in found["thread_block_cluster"].code
    declared_only = CLUSTER_ROW.replace("cluster.map_shared_rank(&part, threadIdx.x)", "&part")
    assert "__cluster_dims__" in analyze_kernel(declared_only)["thread_block_cluster"].code
    plain = declared_only.replace("__cluster_dims__(8, 1, 1) ", "").replace(
        "cg::cluster_group cluster = cg::this_cluster();", ""
    )
    assert "thread_block_cluster" not in analyze_kernel(plain)
