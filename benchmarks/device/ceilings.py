"""Measure the two ceilings on this GPU: device-to-device copy bandwidth and dense matmul rate.

Copy: a 4 GiB fp32 tensor copied into another, bytes counted as read + write. Matmul: 8192^3
fp16 and bf16 products through torch.matmul on random data. Both timed with CUDA events after
warm-up, median of 20. Writes JSON to --out.

    python benchmarks/device/ceilings.py --out ceilings.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch


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
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
