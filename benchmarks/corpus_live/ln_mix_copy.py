"""What DRAM gives 40_LayerNorm's traffic without its statistics: copies in s21's shape. (CUDA)

    python benchmarks/corpus_live/ln_mix_copy.py --out ln_mix_copy.json

Round 35 (``docs/design/corpus.md``) found s21's row period at 11.0 us, 72% of the copy
ceiling, whatever the row's sync did (s25 narrowed the straggler's drift; the period stayed).
This asks whether the traffic alone costs that: y = x over 40_LayerNorm's [16, 4194304] fp32
(268 + 268 MB), timed by the verifier's own timer (``time_cuda``, write flush) in one process,
thirteen ways, each against the first:

- ``flat``: a grid-stride float4 copy (what the copy ceiling measures);
- ``rows``: s21's grid and slices (256 CTAs of 256 threads, 16384 columns each), every CTA
  copying its slice row after row, loads then stores, no sync between CTAs;
- ``s21_order``: s21's loads, stores and cache hints without its statistics: per CTA, the
  held half of row r + 1 read evict-first into registers and the other half read into L2
  (``ld.global.cg``, summed so the loads stay), then row r written from the held registers and
  from the streamed half read again from L2 (``ld.global.cs``), stores evict-first;
- ``s21_order_synced``: the same with s21's dependency between CTAs: each CTA counts its
  arrival at row r once its loads of the row have landed (a block barrier, then one increment
  of the row's counter in global memory), and waits before writing row r until every CTA
  arrived (all CTAs resident through a cooperative launch), as s21's N(r) waits for the row's
  statistics. Unlike s21 the CTA's warps meet at a block barrier per row;
- ``s21_plain``: ``s21_order`` with plain loads and stores (no cache hints);
- ``s21_parked``: ``s21_order`` with the streamed half parked in shared memory (64 KiB a CTA,
  two rows by parity) instead of re-read from L2: x crosses L2 once, nothing is re-read;
- ``s21_parked_synced``: the same with the row's barrier;
- ``s21_order_balanced``: ``s21_order`` on two CTAs on every SM (264 on the H200, where s21's
  256 leave 8 SMs with one: s24's grid), each a slightly smaller slice (masked, as s21 masks);
- ``s21_fused``: s21's loads, stores and hints in one loop per row: chunk by chunk, S(r + 1)'s
  load and N(r)'s store together (added in the thirty-sixth session, before any variant had
  run). s21 runs S(r + 1) and then N(r), and its CTAs keep in step with the row's barrier, so
  the grid may read DRAM in one phase and write it in the next; a copy does both at once;
- ``s21_fused_synced``: the same with the row's barrier, which the fused loop leaves no slack
  (row r's last arrival ends the loop before N(r));
- ``s21_fused_lead2_synced``: S(r + 2) with N(r), one loop of slack, three held sets of 5
  columns (a LayerNorm kernel has registers for about that many beside its weight and bias);
- ``s21_parked_wb`` and ``s21_parked_wb_synced`` (added in the thirty-eighth session, after the
  H200 put the parked copies at 0.91 of flat and every other row-ordered shape lower): the
  parked copies writing y = x * w + b (w = 1, b = 0, so y = x exactly), with each CTA's
  weight and bias columns read from global memory every row under an L2 evict-last policy.
  A LayerNorm that parks x in shared memory has no room there for weight and bias (s21 keeps
  them in its 112 KiB a CTA), so it reads their 32 MiB from L2 every row; these say whether
  L2 keeps them and what that costs. Their held half is 4 columns, not 8 (12 parked: 96 KiB a
  CTA, two on an SM), and their stats loop parks two columns at a time: with s21's split nvcc
  spilled 252 B a thread beside the weight and bias (128 registers); as written, 40 B
  unsynced and 56 B synced of spill stores remain (nvcc 13, sm_90a, checked here).
  40_LayerNorm's bar (85% of the copy ceiling) asks for all its 570.4 MB, weight and bias
  included, in 0.1575 ms on the H200, about 0.936 of ``flat``'s rate with the row's barrier
  (``docs/design/corpus.md``, "Round 36 and the copies on the H200"); the synced one, which
  moves x, y and the weight and bias, says whether that is in reach. On an H100 (thirty-ninth
  session) they copied at 0.517 and 0.475 of flat: not in reach (``corpus.md``).

``flat`` near the ceiling and ``s21_order`` at ~72% would say the mix of reads and writes is
what costs, and then ``s21_parked`` and ``s21_plain`` say whether the L2 re-read or the hints
are the part that does (s21's shared memory holds weight and bias, so parking x there would
trade them for L2 reads: worth a kernel only if ``s21_parked`` is much faster), and
``s21_order_balanced`` whether s24's grid costs a copy too (round 34: s24, s21 on 264 CTAs,
ran 11% slower, its grid and its extra spills not separated);
``s21_order`` near ``flat`` and ``s21_order_synced`` at ~72% would say the row's barrier is.
``s21_fused`` near ``flat`` where ``s21_order`` is not would say the phases cost, and the two
synced fused variants whether a kernel shaped so can keep the gain with the row's barrier.
A diagnostic, never a candidate. Prints a table and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROWS, COLS = 16, 64 * 256 * 256
T, PER4, HOLD = 256, 16, 8
SLICE = T * PER4 * 4

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int T = 256, PER4 = 16, HOLD = 8, HOLD2 = 5, H3 = 4, G3 = 2, SLICE = T * PER4 * 4;

__global__ void copy_flat(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = x[i];
}

__global__ void __launch_bounds__(T, 2)
copy_rows(const float* __restrict__ x, float* __restrict__ y, int rows, long long d) {
  const long long c0 = (long long)blockIdx.x * SLICE;
  for (int r = 0; r < rows; ++r) {
    const float4* xs = reinterpret_cast<const float4*>(x + r * d + c0);
    float4* ys = reinterpret_cast<float4*>(y + r * d + c0);
    float4 v[PER4];
#pragma unroll
    for (int i = 0; i < PER4; ++i) v[i] = __ldcs(xs + i * T + threadIdx.x);
#pragma unroll
    for (int i = 0; i < PER4; ++i) __stcs(ys + i * T + threadIdx.x, v[i]);
  }
}

// A float4 of weight or bias, asked to stay in L2 (evict-last policy): read again every row.
__device__ __forceinline__ float4 ld_keep(const float4* p, unsigned long long policy) {
  float4 v;
  asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(policy));
  return v;
}

// st.global.cs as a volatile asm: stays in program order with ld_keep
__device__ __forceinline__ void st_ordered(float4* p, float4 v) {
  asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};"
               ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}

// Row r's arrival: every thread's loads of it have landed (acc depends on them), then one
// increment of the row's count. Its wait: the count has every CTA's arrival of this call.
__device__ __forceinline__ void arrive(unsigned* count, float acc) {
  const int any = __syncthreads_or(acc == 1.2345f);  // waits for acc, so for the loads
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(count, any ? 2u : 1u);  // 2 never in practice: the sum is not 1.2345
  }
}
__device__ __forceinline__ void wait_row(unsigned* count, unsigned target) {
  if (threadIdx.x == 0) {
    while (atomicAdd(count, 0u) < target) __nanosleep(32);
    __threadfence();
  }
  __syncthreads();
}

// s21's traffic: S(r + 1) (held half evict-first into registers, streamed half into L2), then
// N(r) (held half stored, streamed half read again from L2 and stored), rows two at a time.
// MODE 0: s21's hints (ld.cs / ld.cg / st.cs); MODE 1: the same loads and stores without hints;
// MODE 2: s21's hints, but the streamed half parked in shared memory (by row parity) instead of
// re-read from L2, so x crosses L2 once and the re-reads are gone. MODE 3: MODE 2, and each
// stored float4 is fma(x, w, b) with this CTA's weight and bias columns read from global memory
// every row under an L2 evict-last policy (32 MiB of them stay in L2, or not): a LayerNorm whose
// shared memory parks x cannot also hold weight and bias, as s21's does.
template <bool SYNC, int MODE, int H = HOLD>
__global__ void __launch_bounds__(T, 2)
copy_s21(const float* __restrict__ x, float* __restrict__ y, int rows, long long d,
         unsigned* counts, unsigned base, float* sink, const float* __restrict__ w,
         const float* __restrict__ b) {
  extern __shared__ __align__(16) float4 park[];  // MODE 2, 3: [2][PER4 - H][T]
  // this CTA's float4 columns [q0, q0 + n4) of each row: SLICE / 4 each on s21's grid, fewer
  // (masked, as s21 masks) on a larger one
  const long long q0 = (long long)blockIdx.x * (d / 4) / gridDim.x;
  const int n4 = (int)(((long long)blockIdx.x + 1) * (d / 4) / gridDim.x - q0);
  const long long c0 = q0 * 4;
  const int tid = threadIdx.x;
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
  float4 ha[H], hb[H];
  float acc = 0.f;
  unsigned long long keep = 0;
  if (MODE == 3) asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
  const float4* w4 = reinterpret_cast<const float4*>(w) + q0;
  const float4* b4 = reinterpret_cast<const float4*>(b) + q0;
  auto ld_first = [&](const float4* p) { return MODE == 1 ? *p : __ldcs(p); };
  auto st = [&](float4* p, float4 v) {
    if (MODE == 1) *p = v; else __stcs(p, v);
  };
  // MODE 3's N(r): y = x * w + b, w and b from L2 G3 = 2 columns at a time, loads and stores
  // kept in program order (volatile). Its held half is H3 = 4 columns, not s21's 8: with 8,
  // two rows' held halves and a group's weight and bias spilled 252 B (nvcc, 128 registers)
  auto norm_affine = [&](int r, const float4 (&held)[H], float4* ys) {
#pragma unroll
    for (int g = 0; g < PER4; g += G3) {
      float4 a[G3], c[G3];
#pragma unroll
      for (int k = 0; k < G3; ++k) {
        const int q = (g + k) * T + tid;
        a[k] = q < n4 ? ld_keep(w4 + q, keep) : zero;
        c[k] = q < n4 ? ld_keep(b4 + q, keep) : zero;
      }
#pragma unroll
      for (int k = 0; k < G3; ++k) {
        const int i = g + k;
        if (i * T + tid >= n4) continue;
        const float4 v = i < H ? held[i] : park[((r & 1) * (PER4 - H) + (i - H)) * T + tid];
        st_ordered(ys + i * T + tid,
                   make_float4(fmaf(v.x, a[k].x, c[k].x), fmaf(v.y, a[k].y, c[k].y),
                               fmaf(v.z, a[k].z, c[k].z), fmaf(v.w, a[k].w, c[k].w)));
      }
    }
  };
  auto stats = [&](int r, float4 (&held)[H]) {
    const float4* xs = reinterpret_cast<const float4*>(x + r * d + c0);
#pragma unroll
    for (int i = 0; i < H; ++i) held[i] = i * T + tid < n4 ? ld_first(xs + i * T + tid) : zero;
#pragma unroll(MODE == 3 ? 2 : PER4)  // MODE 3: not every load first (that spilled)
    for (int i = H; i < PER4; ++i) {
      const bool in = i * T + tid < n4;
      if (MODE >= 2) {  // a thread parks what it alone reads back: no barrier needed
        const float4 v = in ? __ldcs(xs + i * T + tid) : zero;
        park[((r & 1) * (PER4 - H) + (i - H)) * T + tid] = v;
      } else {
        const float4 v = !in ? zero : MODE == 1 ? xs[i * T + tid] : __ldcg(xs + i * T + tid);
        acc += (v.x + v.y) + (v.z + v.w);
      }
    }
    if (SYNC) {  // as s21 publishes its partial: after the row's loads, held ones included
#pragma unroll
      for (int i = 0; i < H; ++i) acc += (held[i].x + held[i].y) + (held[i].z + held[i].w);
      if (MODE >= 2) {
#pragma unroll(MODE == 3 ? 2 : PER4)
        for (int i = H; i < PER4; ++i) {
          const float4 v = park[((r & 1) * (PER4 - H) + (i - H)) * T + tid];
          acc += (v.x + v.y) + (v.z + v.w);
        }
      }
      arrive(counts + r, acc);
    }
  };
  auto norm = [&](int r, const float4 (&held)[H]) {
    if (SYNC) wait_row(counts + r, base + gridDim.x);  // as s21 waits for the row's statistics
    const float4* xs = reinterpret_cast<const float4*>(x + r * d + c0);
    float4* ys = reinterpret_cast<float4*>(y + r * d + c0);
    if (MODE == 3) {
      norm_affine(r, held, ys);
      return;
    }
#pragma unroll
    for (int i = 0; i < H; ++i)
      if (i * T + tid < n4) st(ys + i * T + tid, held[i]);
#pragma unroll
    for (int i = H; i < PER4; ++i) {
      if (i * T + tid >= n4) continue;
      const float4 v = MODE >= 2 ? park[((r & 1) * (PER4 - H) + (i - H)) * T + tid]
                                 : ld_first(xs + i * T + tid);
      st(ys + i * T + tid, v);
    }
  };
  stats(0, ha);
  for (int r = 0; r < rows; r += 2) {
    if (r + 1 < rows) stats(r + 1, hb);
    norm(r, ha);
    if (r + 1 >= rows) break;
    if (r + 2 < rows) stats(r + 2, ha);
    norm(r + 1, hb);
  }
  if (acc == 1.2345f) sink[blockIdx.x] = acc;  // keeps the streamed loads
}

// s21's traffic fused: one loop per row issues S(r + LEAD)'s loads (held part evict-first into
// registers, streamed part into L2) and N(r)'s stores (held part from registers, streamed part
// read again from L2) together, chunk by chunk, as a copy interleaves its reads and writes.
// SYNC: N(r) waits for every CTA's arrival at row r (as s21 waits for the row's statistics);
// with LEAD 1 that is a barrier per row with no slack (row r's last arrival ends the loop
// before), with LEAD 2 one loop of slack, at the price of a third held set (HOLD2 columns).
template <bool SYNC, int LEAD, int H>
__global__ void __launch_bounds__(T, 2)
copy_fused(const float* __restrict__ x, float* __restrict__ y, int rows, long long d,
           unsigned* counts, unsigned base, float* sink, const float* __restrict__ w,
           const float* __restrict__ b) {
  const long long c0 = (long long)blockIdx.x * SLICE;
  const int tid = threadIdx.x;
  float4 h[LEAD + 1][H];
  float acc = 0.f;
  auto load_row = [&](int r, float4 (&held)[H], int i) {  // S(r)'s float4 column i of this thread
    const float4* xs = reinterpret_cast<const float4*>(x + r * d + c0);
    if (i < H) {
      held[i] = __ldcs(xs + i * T + tid);
    } else {
      const float4 v = __ldcg(xs + i * T + tid);
      acc += (v.x + v.y) + (v.z + v.w);
    }
  };
  auto arrive_row = [&](int r, const float4 (&held)[H]) {
#pragma unroll
    for (int i = 0; i < H; ++i) acc += (held[i].x + held[i].y) + (held[i].z + held[i].w);
    if (SYNC) arrive(counts + r, acc);
  };
  // rows 0 .. LEAD - 1 alone
#pragma unroll
  for (int p = 0; p < LEAD; ++p) {
    if (p < rows) {
#pragma unroll
      for (int i = 0; i < PER4; ++i) load_row(p, h[p], i);
      arrive_row(p, h[p]);
    }
  }
  for (int r0 = 0; r0 < rows; r0 += LEAD + 1) {
#pragma unroll
    // row r = r0 + k is in held set k; S's row r + LEAD goes to set (k + LEAD) % (LEAD + 1)
    for (int k = 0; k <= LEAD; ++k) {
      const int r = r0 + k;
      if (r >= rows) break;
      if (SYNC) wait_row(counts + r, base + gridDim.x);
      const int rn = r + LEAD;
      const float4* xs = reinterpret_cast<const float4*>(x + r * d + c0);
      float4* ys = reinterpret_cast<float4*>(y + r * d + c0);
#pragma unroll
      for (int i = 0; i < PER4; ++i) {
        if (rn < rows) load_row(rn, h[(k + LEAD) % (LEAD + 1)], i);
        __stcs(ys + i * T + tid, i < H ? h[k][i] : __ldcs(xs + i * T + tid));
      }
      if (rn < rows) arrive_row(rn, h[(k + LEAD) % (LEAD + 1)]);
    }
  }
  if (acc == 1.2345f) sink[blockIdx.x] = acc;  // keeps the streamed loads
}
constexpr int PARK_BYTES = 2 * (PER4 - HOLD) * T * 16;  // 64 KiB: two CTAs fit an SM
constexpr int PARK3_BYTES = 2 * (PER4 - H3) * T * 16;   // 80 KiB: so do two of these

void run(int64_t which, torch::Tensor x, torch::Tensor y, torch::Tensor counts, int64_t call,
         torch::Tensor sink, torch::Tensor w, torch::Tensor b) {
  const int rows = (int)x.size(0);
  const long long d = x.size(1);
  const int grid = (int)(d / SLICE);
  auto stream = at::cuda::getCurrentCUDAStream();
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  if (which == 0) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    copy_flat<<<sms * 8, 512, 0, stream>>>(reinterpret_cast<const float4*>(xp),
                                           reinterpret_cast<float4*>(yp), x.numel() / 4);
  } else if (which == 1) {
    copy_rows<<<grid, T, 0, stream>>>(xp, yp, rows, d);
  } else {
    // which 2..12: s21_order, s21_order_synced, s21_plain, s21_parked, s21_parked_synced,
    // s21_order_balanced (two CTAs on every SM, smaller slices), the three fused ones, and
    // s21_parked_wb, s21_parked_wb_synced; each synced variant counts on its own rows of
    // counts, growing by the grid each of its calls
    int ctas = grid;
    if (which == 7) {
      ctas = 2 * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
      TORCH_CHECK((long long)ctas * T * PER4 * 4 >= d, "2 CTAs per SM cannot cover a row");
    }
    unsigned* cp = reinterpret_cast<unsigned*>(counts.data_ptr<int>()) +
                  (which == 6 ? rows : which == 9 ? 2 * rows : which == 10 ? 3 * rows
                   : which == 12 ? 4 * rows : 0);
    unsigned base = (unsigned)(call * grid);
    float* sp = sink.data_ptr<float>();
    int rows_i = rows;
    long long d_ = d;
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    void* args[] = {&xp, &yp, &rows_i, &d_, &cp, &base, &sp, &wp, &bp};
    void* k = which == 2 ? (void*)copy_s21<false, 0>
            : which == 3 ? (void*)copy_s21<true, 0>
            : which == 4 ? (void*)copy_s21<false, 1>
            : which == 5 ? (void*)copy_s21<false, 2>
            : which == 6 ? (void*)copy_s21<true, 2>
            : which == 8 ? (void*)copy_fused<false, 1, HOLD>
            : which == 9 ? (void*)copy_fused<true, 1, HOLD>
            : which == 10 ? (void*)copy_fused<true, 2, HOLD2>
            : which == 11 ? (void*)copy_s21<false, 3, H3>
            : which == 12 ? (void*)copy_s21<true, 3, H3>
                          : (void*)copy_s21<false, 0>;
    const int smem = which >= 11 ? PARK3_BYTES : which >= 5 ? PARK_BYTES : 0;
    if (smem)
      C10_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    C10_CUDA_CHECK(cudaLaunchCooperativeKernel(k, dim3(ctas), dim3(T), args, (size_t)smem, stream));
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

VARIANTS = (
    "flat",
    "rows",
    "s21_order",
    "s21_order_synced",
    "s21_plain",
    "s21_parked",
    "s21_parked_synced",
    "s21_order_balanced",
    "s21_fused",
    "s21_fused_synced",
    "s21_fused_lead2_synced",
    "s21_parked_wb",
    "s21_parked_wb_synced",
)
SYNCED = (3, 6, 9, 10, 12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("ln_mix_copy.json"))
    parser.add_argument("--rounds", type=int, default=3, help="passes over the variants")
    args = parser.parse_args()

    import statistics

    import torch
    from torch.utils.cpp_extension import load_inline

    from upskills.verify.timing import time_cuda

    ext = load_inline(
        name="upskills_bench_ln_mix_copy",
        cpp_sources="void run(int64_t which, torch::Tensor x, torch::Tensor y, "
        "torch::Tensor counts, int64_t call, torch::Tensor sink, torch::Tensor w, "
        "torch::Tensor b);",
        cuda_sources=CUDA_SRC,
        functions=["run"],
        extra_cuda_cflags=["-O3"],
    )
    x = torch.randn(ROWS, COLS, device="cuda")
    y = torch.empty_like(x)
    counts = torch.zeros(5 * ROWS, device="cuda", dtype=torch.int32)
    w = torch.ones(COLS, device="cuda")  # y = x * 1 + 0 = x exactly: the copy check holds
    b = torch.zeros(COLS, device="cuda")
    sink = torch.zeros(4096, device="cuda")  # one slot per CTA of any grid here
    synced = dict.fromkeys(SYNCED, 0)  # calls of each synced variant so far: each adds the grid

    def call(which: int) -> None:
        ext.run(which, x, y, counts, synced.get(which, 0), sink, w, b)
        if which in synced:
            synced[which] += 1

    wrong: list[str] = []  # a variant whose copy is wrong is reported so, and not timed
    for which in range(len(VARIANTS)):
        y.zero_()
        call(which)
        torch.cuda.synchronize()
        if not torch.equal(y, x):
            wrong.append(VARIANTS[which])
            print(f"{VARIANTS[which]}: the copy is wrong, not timed", flush=True)
    if "flat" in wrong:
        raise SystemExit("flat: the copy is wrong")
    nbytes = 2 * x.numel() * 4
    runs: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(args.rounds):  # interleaved, so clocks and the machine's state are shared
        for which, name in enumerate(VARIANTS):
            if name in wrong:
                continue
            timing, _ = time_cuda(lambda w=which: call(w), min_reps=50, target_s=0.3)
            runs[name].append(timing.median_ms)
    flat = statistics.median(runs["flat"])
    rows: list[dict[str, Any]] = [{"variant": name, "wrong": True} for name in wrong]
    for name in VARIANTS:
        if name in wrong:
            continue
        ms = statistics.median(runs[name])
        row = {
            "variant": name,
            "median_ms": round(ms, 5),
            "runs_ms": [round(v, 5) for v in runs[name]],
            "gbs": round(nbytes / (ms * 1e-3) / 1e9, 1),
            "of_flat": round(flat / ms, 3),
        }
        rows.append(row)
        print(
            f"{name:18s} {ms:.4f} ms  {row['gbs']:7.1f} GB/s  {row['of_flat']:.3f} of flat",
            flush=True,
        )
    result = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "bytes": nbytes,
        "flush": "write",
        "variants": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
