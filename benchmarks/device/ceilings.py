"""Measure the ceilings on this GPU: device-to-device copy bandwidth, dense matmul rate, and the
rate at which the SMs can read data that sits in L2.

Copy: a 4 GiB fp32 tensor copied into another, bytes counted as read + write. Matmul: 8192^3
fp16 and bf16 products through torch.matmul on random data. L2 read: a 16 MiB fp32 buffer (well
inside an H200's L2) read over and over by 4 programs per SM, 16-byte loads, each pass in a
different order of its blocks; bytes counted as every pass's reads (a kernel that re-reads
parameters from L2 once per row, like a layer norm over rows as large as its weight, cannot beat
this). All timed with CUDA events after warm-up, median of 20.

Copy by size (``copy_by_size``, added in the thirty-eighth session): the same copy at sizes from
32 MiB to 16 GiB moved, timed as the verifier times a kernel (``time_cuda``: L2 flushed by a
write before each call, median). The copy ceiling above is a 4 GiB copy's, 2 ms a call; a
kernel of 0.1 ms is timed with the flush's write-back in its call, which a copy of its own size
pays too (40_LayerNorm's bytes copied flat reached 90.8% of the ceiling so,
``docs/design/corpus.md``). These say what a copy reaches at each size under that timer.
Writes JSON to --out.

    python benchmarks/device/ceilings.py --out ceilings.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch
import triton
import triton.language as tl


@triton.jit
def _l2_read(x_ptr, out_ptr, n_blocks, passes, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for p in range(passes):
        for b in range(pid, n_blocks, step):
            blk = (b + p * 7) % n_blocks  # another order each pass: nothing to hoist
            acc += tl.load(x_ptr + blk * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def l2_read_gb_per_s(mib: int = 16, passes: int = 64) -> float:
    """SM reads of an L2-resident buffer, GB/s (bytes = passes x buffer)."""
    block = 4096
    x = torch.randn(mib * (1 << 20) // 4, device="cuda")
    n_blocks = x.numel() // block
    programs = 4 * torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.empty(programs, device="cuda")

    def run() -> None:
        _l2_read[(programs,)](x, out, n_blocks, passes, BLOCK=block, num_warps=8)

    ms = _median_ms(run)
    return round(passes * x.numel() * 4 / (ms * 1e-3) / 1e9, 1)


def copy_by_size(moved: list[int]) -> list[dict[str, float]]:
    """A copy's bandwidth at each size of ``moved`` (bytes read + written), timed as a kernel."""
    from upskills.verify.timing import time_cuda

    rows: list[dict[str, float]] = []
    for nbytes in moved:
        src = torch.randn(nbytes // 8, device="cuda")  # each fp32 element read and written once
        dst = torch.empty_like(src)
        timing, _ = time_cuda(lambda dst=dst, src=src: dst.copy_(src), target_s=0.3)
        ms = timing.median_ms
        rows.append(
            {
                "bytes": 2 * src.numel() * 4,
                "median_ms": round(ms, 5),
                "gb_per_s": round(2 * src.numel() * 4 / (ms * 1e-3) / 1e9, 1),
            }
        )
        del src, dst
    return rows


def _median_ms(fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    n = 1 << 30  # 4 GiB of fp32
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    ms = _median_ms(lambda dst=dst, src=src: dst.copy_(src))
    result = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "copy_gb_per_s": round(2 * n * 4 / (ms * 1e-3) / 1e9, 1),
        "copy_ms": ms,
    }
    del src, dst
    s = 8192
    for dtype in (torch.float16, torch.bfloat16):
        a = torch.randn(s, s, device="cuda", dtype=dtype)
        b = torch.randn(s, s, device="cuda", dtype=dtype)
        ms = _median_ms(lambda a=a, b=b: a @ b)
        result[f"matmul_{str(dtype)[6:]}_tflops"] = round(2 * s**3 / (ms * 1e-3) / 1e12, 1)
    try:
        result["l2_read_gb_per_s"] = l2_read_gb_per_s()
    except Exception as exc:  # the two ceilings above stand without it
        result["l2_read_error"] = f"{type(exc).__name__}: {exc}"
    try:
        result["copy_by_size"] = copy_by_size([1 << k for k in range(25, 35)])
    except Exception as exc:  # nor does it need this
        result["copy_by_size_error"] = f"{type(exc).__name__}: {exc}"
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
