# Verified kernel for task `40_LayerNorm` (task hash 6c19ce957de04456), from trace 661d5adcab394f499cdc6490a74a3127.
# Measured: 46.45x eager, 1.78x torch.compile on NVIDIA H200.
# Check it: upskills check 40_LayerNorm scripts/40_LayerNorm_kernel.py
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

# 40_LayerNorm, twenty-first session, after reading round 30. s19 (one poller and merger per CTA
# and row, the CTA's other warps reading mean and rstd from shared memory) passed at 0.1857 ms
# submit, 43.5x eager, 71.5% of copy, the new final, re-checked in a later call at ratio 1.029;
# s20 (s17 with a red.release increment and no seq_cst fence after the acquire poll) ran 0.1931
# ms, level with s17. Round 29's s18 put two more L2 round trips on the row's sync path and lost
# 3.8 us a row. So the sync path is on the critical path, and what costs on it is round trips
# and contention on the row's lines, not fences. s19's path after the last CTA's sums: its
# partial's store, a fence, the increment of count[r], the claimer's next poll of count[r]
# (256 claimers on one line), then the merge's loads of the 256 partials: two L2 round trips
# after the increment lands. One change to s19: no counter. A partial is one 64-bit word, its
# two float sums, each with its lowest mantissa bit set to the call's parity, written by one
# single-copy-atomic 64-bit store; every call writes every word once, so a word that is not this
# call's is the last call's, of the other parity. The claimer's poll is the merge's load: all 32
# lanes load the row's 256 words together, and the warp merges once every word shows this
# call's parity (else it sleeps and loads again). The sums are merged in s17's order; each
# partial is within 1 ulp of s19's (the parity bit), so the statistics match s19's to ~1e-7
# relative, not bit for bit. (A first draft kept each sum whole beside a 32-bit call number, two
# words a partial: nvcc put 176/240 bytes of spills on it, against s19's 16/32.)


_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <cmath>

// KERNEL_BEGIN
constexpr int T = 256;                        // threads per CTA (two CTAs per SM)
constexpr int PER4 = 16;                      // float4 columns per thread per row (64 floats)
constexpr int PER4S = 14;                     // of them, weight and bias in shared memory
constexpr int HOLD = 8;                       // float4 columns per thread held in registers a row
constexpr int BATCH = 4;                      // float4 re-read loads in flight per thread
constexpr int MERGE = T / 32;                 // row partials merged per lane (H <= T)
constexpr int SLICE = T * PER4 * 4;           // 16384 columns per CTA
constexpr int SH4 = T * PER4S;                // 3584 float4 of weight (then as many of bias) in smem
constexpr int SHARED_COLS = SH4 * 4;          // 14336 columns
constexpr int SMEM = 2 * SHARED_COLS * 4;     // 114688 bytes: two CTAs fit an SM's 228 KiB

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// A partial's word: its two sums, each with its lowest mantissa bit set to the call's parity, in
// one 64-bit access (single-copy atomic): a word that shows this call's parity is this call's.
__device__ __forceinline__ unsigned with_parity(float v, unsigned parity) {
  return (__float_as_uint(v) & ~1u) | parity;
}
__device__ __forceinline__ void st_word(unsigned long long* p, float s1, float s2, unsigned parity) {
  const unsigned long long w = ((unsigned long long)with_parity(s2, parity) << 32) | with_parity(s1, parity);
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;\n" ::"l"(p), "l"(w) : "memory");
}
__device__ __forceinline__ unsigned long long ld_word(const unsigned long long* p) {
  unsigned long long w;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];\n" : "=l"(w) : "l"(p) : "memory");
  return w;
}
// bytes of global memory into shared memory by TMA bulk copies of at most 32 KiB, completing on mb
__device__ __forceinline__ void bulk_load(unsigned dst, const float* src, unsigned bytes, unsigned mb) {
  const char* s = reinterpret_cast<const char*>(src);
  for (unsigned off = 0; off < bytes; off += 32768u) {
    const unsigned len = bytes - off < 32768u ? bytes - off : 32768u;
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(dst + off), "l"(s + off), "r"(len), "r"(mb) : "memory");
  }
}
__device__ __forceinline__ void mbar_wait(unsigned mb, unsigned phase) {
  asm volatile("{\n.reg .pred p;\nWAIT_LN9:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra WAIT_LN9;\n}\n" ::"r"(mb), "r"(phase) : "memory");
}

// A CTA's running sums of one row, in shared memory: its warps add theirs as they finish, and
// the last to arrive publishes them (no block barrier). Two slots, by row parity.
struct Slot {
  float s1, s2;
  unsigned n;
};

// Row r's mean and rstd for a CTA's warps, in one of two slots by row parity: the CTA's first warp
// to reach row r claims it and merges; the rest wait here.
struct RowStat {
  float mean, rstd;
  int ready;  // the last row whose statistics are in the slot (-1: none)
  int claim;  // the last row a warp claimed (-1: none)
};

// S(r): this warp's sums of x - K and (x - K)^2 over its threads' columns of row r, added to the
// CTA's slot; the CTA's last warp to arrive publishes word r * H + j.
// The first HOLD float4 columns of each thread are kept in registers for the normalize (read
// with evict-first: L2 never sees them again); the rest stream through at L2's normal priority,
// to be re-read from L2 by the normalize one row later.
__device__ __forceinline__ void row_stats(const float4* x4, int n4, float K, float4 (&held)[HOLD], Slot* slot,
                                          unsigned long long* part_rj, unsigned parity) {
  const int tid = threadIdx.x;
  float s1 = 0.f, s2 = 0.f;
#pragma unroll
  for (int i = 0; i < HOLD; ++i) {
    const int q = i * T + tid;
    held[i] = q < n4 ? __ldcs(x4 + q) : make_float4(K, K, K, K);  // K adds nothing
  }
#pragma unroll
  for (int h = HOLD; h < PER4; h += BATCH) {
    float4 v[BATCH];
#pragma unroll
    for (int i = 0; i < BATCH; ++i) {
      const int q = (h + i) * T + tid;
      v[i] = q < n4 ? __ldcg(x4 + q) : make_float4(K, K, K, K);
    }
#pragma unroll
    for (int i = 0; i < BATCH; ++i) {
      const float a0 = v[i].x - K, a1 = v[i].y - K, a2 = v[i].z - K, a3 = v[i].w - K;
      s1 += (a0 + a1) + (a2 + a3);
      s2 += (a0 * a0 + a1 * a1) + (a2 * a2 + a3 * a3);
    }
  }
#pragma unroll
  for (int i = 0; i < HOLD; ++i) {
    const float a0 = held[i].x - K, a1 = held[i].y - K, a2 = held[i].z - K, a3 = held[i].w - K;
    s1 += (a0 + a1) + (a2 + a3);
    s2 += (a0 * a0 + a1 * a1) + (a2 * a2 + a3 * a3);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s1 += __shfl_xor_sync(0xffffffffu, s1, o);
    s2 += __shfl_xor_sync(0xffffffffu, s2, o);
  }
  if ((tid & 31) == 0) {
    atomicAdd(&slot->s1, s1);
    atomicAdd(&slot->s2, s2);
    __threadfence_block();  // this warp's sums land before its arrival is counted
    if (atomicAdd(&slot->n, 1u) == T / 32 - 1) {  // the CTA's last warp on this row
      __threadfence_block();
      const float a = atomicExch(&slot->s1, 0.f), q = atomicExch(&slot->s2, 0.f);
      atomicExch(&slot->n, 0u);  // reset before the row is published: the slot's next row
                                 // (r + 2) starts only after row r's partials are all in
      st_word(part_rj, a, q, parity);
    }
  }
}

// Row r's mean and rstd, per warp: the warp loads the H partials' words until every one shows
// this call's parity, then merges them in fp64 (every claimer of every CTA in the same order:
// the same result).
__device__ __forceinline__ float2 row_moments(const unsigned long long* part_r, unsigned parity, int H,
                                              double d, float K, float eps) {
  const int lane = threadIdx.x & 31;
  // H <= T = 256 partials (the host checks), so at most MERGE per lane, all loaded together: the
  // poll and the merge's loads are one L2 round trip. An index past H loads partial H - 1 (a
  // valid address) and is skipped in the adds, which keep s12's order (lane, lane + 32, ...).
  unsigned long long w[MERGE];
  for (;;) {
#pragma unroll
    for (int k = 0; k < MERGE; ++k) w[k] = ld_word(part_r + min(lane + 32 * k, H - 1));
    bool in = true;
#pragma unroll
    for (int k = 0; k < MERGE; ++k) in = in && ((unsigned)w[k] & 1u) == parity && ((unsigned)(w[k] >> 32) & 1u) == parity;
    if (__all_sync(0xffffffffu, in)) break;
    __nanosleep(32);
  }
  double m1 = 0.0, m2 = 0.0;
#pragma unroll
  for (int k = 0; k < MERGE; ++k) {
    if (lane + 32 * k < H) {
      m1 += __uint_as_float((unsigned)w[k]);
      m2 += __uint_as_float((unsigned)(w[k] >> 32));
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    m1 += __shfl_xor_sync(0xffffffffu, m1, o);
    m2 += __shfl_xor_sync(0xffffffffu, m2, o);
  }
  const double mean_k = m1 / d;  // mean of x - K
  const double var = fmax(m2 / d - mean_k * mean_k, 0.0);
  return make_float2((float)((double)K + mean_k), (float)(1.0 / sqrt(var + (double)eps)));
}

// Row r's statistics for this warp. The CTA's first warp to get here claims the row, waits for
// the grid and merges (row_moments); the other warps wait on the CTA's slot in shared memory. A
// warp reaches N(r + 2), which reuses the slot, only after row r + 2's partials are all in, so after
// every warp of this CTA finished S(r + 2) and with it N(r): no warp still reads row r's slot.
__device__ __forceinline__ float2 cta_row_moments(RowStat* rs, int r, const unsigned long long* part_r,
                                                  unsigned parity, int H, double d, float K, float eps) {
  const int lane = threadIdx.x & 31;
  volatile RowStat* v = rs;
  int merge = 0;
  if (lane == 0) merge = v->ready != r && atomicMax(&rs->claim, r) < r;
  merge = __shfl_sync(0xffffffffu, merge, 0);
  if (merge) {
    const float2 ms = row_moments(part_r, parity, H, d, K, eps);
    if (lane == 0) {
      v->mean = ms.x;
      v->rstd = ms.y;
      __threadfence_block();  // the statistics land before the slot says so
      v->ready = r;
    }
    return ms;
  }
  float mean = 0.f, rstd = 0.f;
  if (lane == 0) {
    while (v->ready != r) __nanosleep(20);
    __threadfence_block();
    mean = v->mean;
    rstd = v->rstd;
  }
  return make_float2(__shfl_sync(0xffffffffu, mean, 0), __shfl_sync(0xffffffffu, rstd, 0));
}

__device__ __forceinline__ float4 norm4(float4 a, float4 u, float4 c, float mean, float rstd) {
  return make_float4((a.x - mean) * rstd * u.x + c.x, (a.y - mean) * rstd * u.y + c.y,
                     (a.z - mean) * rstd * u.z + c.z, (a.w - mean) * rstd * u.w + c.w);
}

// N(r): row r's statistics, then y for this CTA's columns: the held part from registers, the
// rest re-read from L2 (streaming loads: their last use), weight and bias from shared memory
// (float4 columns k < PER4S) or registers.
__device__ __forceinline__ void row_normalize(const float* x, float* y, int r, int64_t d, int64_t c0, int n4,
                                              const float4 (&held)[HOLD], const float4* wbs, const float4 (&wr)[PER4 - PER4S],
                                              const float4 (&br)[PER4 - PER4S], const unsigned long long* part,
                                              unsigned parity, int H, float eps, RowStat* rs) {
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)r * d;
  const float K = __ldcg(xr);
  const float2 ms = cta_row_moments(rs + (r & 1), r, part + (int64_t)r * H, parity, H, (double)d, K, eps);
  const float mean = ms.x, rstd = ms.y;
  const float4* x4 = reinterpret_cast<const float4*>(xr + c0);
  float4* y4 = reinterpret_cast<float4*>(y + (int64_t)r * d + c0);
#pragma unroll
  for (int h = HOLD; h < PER4; h += BATCH) {
    float4 v[BATCH];
#pragma unroll
    for (int i = 0; i < BATCH; ++i) {
      const int q = (h + i) * T + tid;
      if (q < n4) v[i] = __ldcs(x4 + q);
    }
    if (h == HOLD) {  // the held part while the first re-reads are in flight
#pragma unroll
      for (int k = 0; k < HOLD; ++k) {
        const int q = k * T + tid;
        if (q < n4) __stcs(y4 + q, norm4(held[k], wbs[k * T + tid], wbs[SH4 + k * T + tid], mean, rstd));
      }
    }
#pragma unroll
    for (int i = 0; i < BATCH; ++i) {
      const int k = h + i, q = k * T + tid;
      if (q < n4) {
        const float4 u = k < PER4S ? wbs[k * T + tid] : wr[k - PER4S];
        const float4 c = k < PER4S ? wbs[SH4 + k * T + tid] : br[k - PER4S];
        __stcs(y4 + q, norm4(v[i], u, c, mean, rstd));
      }
    }
  }
}

// rows x d (d % 4 == 0), grid H = ceil(d / SLICE) CTAs, all resident (cooperative launch). CTA j
// owns columns [j * SLICE, min(d, (j + 1) * SLICE)) of every row and holds their weight and bias
// for the whole call: the first SHARED_COLS in shared memory, the rest in registers. Per CTA:
// S(0), then for each row r: S(r + 1), N(r); rows alternate between two register sets, so the
// loop takes two rows a turn.
__global__ void __launch_bounds__(T, 2)
ln_wb_resident(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
               float* __restrict__ y, unsigned long long* __restrict__ part, int rows,
               int64_t d, unsigned parity, float eps) {
  extern __shared__ __align__(128) float4 wbs[];  // [0, SH4): weight, [SH4, 2 SH4): bias
  __shared__ Slot slots[2];  // by row parity
  __shared__ RowStat rowstat[2];  // by row parity
  __shared__ alignas(8) unsigned long long bar;
  const int H = gridDim.x, j = blockIdx.x, tid = threadIdx.x;
  const int64_t c0 = (int64_t)j * SLICE;
  const int len = (int)(d - c0 < SLICE ? d - c0 : SLICE);
  const int n4 = len / 4;
  const int ls = len < SHARED_COLS ? len : SHARED_COLS;
  const unsigned mb = smem_addr(&bar);
  if (tid < 2) slots[tid] = Slot{0.f, 0.f, 0u};
  if (tid < 2) rowstat[tid] = RowStat{0.f, 0.f, -1, -1};
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(mb) : "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(mb), "r"((unsigned)ls * 8u) : "memory");
    bulk_load(smem_addr(wbs), w + c0, (unsigned)ls * 4u, mb);
    bulk_load(smem_addr(wbs + SH4), b + c0, (unsigned)ls * 4u, mb);
  }
  // the register part of weight and bias: float4 columns PER4S..PER4-1 of this thread
  float4 wr[PER4 - PER4S], br[PER4 - PER4S];
  const float4* w4 = reinterpret_cast<const float4*>(w + c0);
  const float4* b4 = reinterpret_cast<const float4*>(b + c0);
#pragma unroll
  for (int k = 0; k < PER4 - PER4S; ++k) {
    const int q = (PER4S + k) * T + tid;
    wr[k] = q < n4 ? __ldg(w4 + q) : make_float4(0.f, 0.f, 0.f, 0.f);
    br[k] = q < n4 ? __ldg(b4 + q) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __syncthreads();  // the mbarrier and the slots are initialised before anyone uses them
  // From here on no block barrier: each warp goes through the rows at its own pace.

  float4 ha[HOLD], hb[HOLD];  // the held columns of even rows, of odd rows
  row_stats(reinterpret_cast<const float4*>(x + c0), n4, __ldcg(x), ha, &slots[0], part + j, parity);
  mbar_wait(mb, 0);  // weight and bias are in shared memory before the first normalize
  for (int r = 0; r < rows; r += 2) {
    if (r + 1 < rows) {
      const float* xn = x + (int64_t)(r + 1) * d;
      row_stats(reinterpret_cast<const float4*>(xn + c0), n4, __ldcg(xn), hb, &slots[(r + 1) & 1],
                part + (int64_t)(r + 1) * H + j, parity);
    }
    row_normalize(x, y, r, d, c0, n4, ha, wbs, wr, br, part, parity, H, eps, rowstat);
    if (r + 1 >= rows) break;
    if (r + 2 < rows) {
      const float* xn = x + (int64_t)(r + 2) * d;
      row_stats(reinterpret_cast<const float4*>(xn + c0), n4, __ldcg(xn), ha, &slots[r & 1],
                part + (int64_t)(r + 2) * H + j, parity);
    }
    row_normalize(x, y, r + 1, d, c0, n4, hb, wbs, wr, br, part, parity, H, eps, rowstat);
  }
}
// KERNEL_END

// True if launched; false if this shape or GPU cannot hold every CTA resident with its slice.
bool layer_norm_resident(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor y,
                         torch::Tensor part, int64_t rows, int64_t d,
                         int64_t epoch, double eps) {
  const int64_t H = (d + SLICE - 1) / SLICE;
  if (rows <= 0 || d <= 0 || d % 4 != 0 || H > T || rows * H > part.numel() / 2 || epoch <= 0)
    return false;
  for (const torch::Tensor* t : {&x, &w, &b, &y, &part})
    if (!t->is_cuda() || t->get_device() != x.get_device()) return false;
  if (x.scalar_type() != torch::kFloat || w.scalar_type() != torch::kFloat || b.scalar_type() != torch::kFloat)
    return false;
  const void* ptrs[4] = {x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr()};
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) & 15) return false;
  const int smem = SMEM;
  auto k = ln_wb_resident;
  if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
    (void)cudaGetLastError();  // a GPU with less shared memory per block: the fallback
    return false;
  }
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, T, smem));
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  if ((int64_t)per_sm * sms < H) return false;  // a cooperative grid must be co-resident
  const float* xp = x.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  unsigned long long* pp = reinterpret_cast<unsigned long long*>(part.data_ptr<float>());
  int rows_i = (int)rows;
  int64_t d_ = d;
  unsigned parity = (unsigned)(epoch & 1);  // call 1 is odd: the zeroed words are no call's
  float eps_f = (float)eps;
  void* args[] = {&xp, &wp, &bp, &yp, &pp, &rows_i, &d_, &parity, &eps_f};
  C10_CUDA_CHECK(cudaLaunchCooperativeKernel((void*)k, dim3((unsigned)H), dim3(T), args, (size_t)smem,
                                             at::cuda::getCurrentCUDAStream()));
  return true;
}
"""

_ext = load_inline(
    name="corpus_kb40_layernorm_wb_resident_words",
    cpp_sources="bool layer_norm_resident(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor y, "
    "torch::Tensor part, int64_t rows, int64_t d, int64_t epoch, double eps);",
    cuda_sources=_CUDA,
    functions=["layer_norm_resident"],
    extra_cuda_cflags=["-O3"],
)

SLICE_COLS = 16384

class _Resident:
    """Per (device, rows, CTAs): the partials' words (zeroed once, parity 0: call 1 is odd) and
    the number of calls made; call k waits for words of k's parity, which every call rewrites."""

    def __init__(self, device: torch.device, rows: int, ctas: int):
        self.part = torch.zeros((rows * ctas * 2,), device=device, dtype=torch.float32)
        self.calls = 0


_STATE: dict[tuple[torch.device, int, int], _Resident] = {}



# Session 3's kernels, unchanged: the path for shapes the resident kernel cannot take.
@triton.jit
def chunk_stats_kernel(x_ptr, mean_ptr, m2_ptr, n, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    c = tl.program_id(0)
    offs = c * CHUNK + tl.arange(0, CHUNK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    cnt = tl.minimum(n - c * CHUNK, CHUNK).to(tl.float32)
    mean = tl.sum(x, axis=0) / cnt
    d = tl.where(mask, x - mean, 0.0)
    tl.store(mean_ptr + row * n_chunks + c, mean)
    tl.store(m2_ptr + row * n_chunks + c, tl.sum(d * d, axis=0))


@triton.jit
def merge_stats_kernel(mean_ptr, m2_ptr, stat_ptr, n, n_chunks, eps, CHUNK: tl.constexpr, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_C)
    mask = c < n_chunks
    means = tl.load(mean_ptr + row * n_chunks + c, mask=mask, other=0.0)
    m2s = tl.load(m2_ptr + row * n_chunks + c, mask=mask, other=0.0)
    cnt = tl.where(mask, tl.minimum(n - c * CHUNK, CHUNK), 0).to(tl.float32)
    mean = tl.sum(means * cnt, axis=0) / n
    dev = tl.where(mask, means - mean, 0.0)
    var = (tl.sum(m2s, axis=0) + tl.sum(cnt * dev * dev, axis=0)) / n
    tl.store(stat_ptr + row * 2, mean)
    tl.store(stat_ptr + row * 2 + 1, 1.0 / tl.sqrt(var + eps))


@triton.jit
def normalize_rows_kernel(x_ptr, w_ptr, b_ptr, stat_ptr, y_ptr, n, rows, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    for r in range(0, rows):
        row = r.to(tl.int64)
        mean = tl.load(stat_ptr + row * 2)
        rstd = tl.load(stat_ptr + row * 2 + 1)
        x = tl.load(x_ptr + row * n + offs, mask=mask)
        tl.store(y_ptr + row * n + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = self.ln.weight.numel()
        rows = x.numel() // n
        y = torch.empty_like(x)
        if rows > 0 and x.is_cuda and x.dtype == torch.float32 and self.ln.weight.dtype == torch.float32:
            ctas = -(-n // SLICE_COLS)  # each row's slices
            key = (x.device, rows, ctas)
            if key not in _STATE:
                _STATE[key] = _Resident(x.device, rows, ctas)
            st = _STATE[key]
            st.calls += 1
            if _ext.layer_norm_resident(x, self.ln.weight, self.ln.bias, y, st.part,
                                        rows, n, st.calls, self.ln.eps):
                return y
            st.calls -= 1
        # session 3's kernels: row statistics in chunks, merged, then one normalize pass
        chunk = 4096
        n_chunks = triton.cdiv(n, chunk)
        means = torch.empty((rows, n_chunks), device=x.device, dtype=torch.float32)
        m2s = torch.empty_like(means)
        stats = torch.empty((rows, 2), device=x.device, dtype=torch.float32)
        chunk_stats_kernel[(n_chunks, rows)](x, means, m2s, n, n_chunks, CHUNK=chunk, num_warps=8)
        merge_stats_kernel[(rows,)](
            means, m2s, stats, n, n_chunks, self.ln.eps, CHUNK=chunk,
            BLOCK_C=triton.next_power_of_2(n_chunks), num_warps=8,
        )
        block = 2048
        normalize_rows_kernel[(triton.cdiv(n, block),)](
            x, self.ln.weight, self.ln.bias, stats, y, n, rows, BLOCK=block, num_warps=4
        )
        return y
