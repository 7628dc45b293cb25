"""What does the timer's L2 flush cost the call it times? (CUDA)

    python benchmarks/flush_bias.py --out flush_bias.json

The verifier flushes the L2 before each timed call by writing a 256 MiB buffer
(``upskills.verify.timing``, ``flush_mode="write"``). That leaves the L2 full of dirty lines,
and the timed call then pays for their write-back to DRAM as it evicts them. A flush that reads
the buffer instead (``flush_mode="read"``) leaves the L2 as cold but clean: the write-back of
whatever ran before happens during the flush, untimed. This probe times the same calls under
both flushes in one process, interleaved call by call set by set (write, read, write, read), so
clocks and the machine's state are shared:

- a read-only reduction (``torch.sum``) of 268 MB (cross_entropy's logits) and of 16 MB;
- ``F.cross_entropy`` over [4096, 16384] fp32 logits (the built-in task's main shape);
- a 268 MB device-to-device copy (read + write), the kind of call the copy ceiling times.

For each: median ms under each flush, bandwidth on the call's own bytes, and write / read
ratio. Prints a table and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _cases() -> dict[str, tuple[Callable[[], Any], int]]:
    """name -> (call, bytes it must move at least)."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(4096, 16384, device="cuda", generator=g)
    target = torch.randint(0, 16384, (4096,), device="cuda", generator=g)
    small = torch.randn(4 * 1024 * 1024, device="cuda", generator=g)
    dst = torch.empty_like(logits)
    big = logits.numel() * 4
    return {
        "sum 268 MB": (lambda: logits.sum(), big),
        "sum 16 MB": (lambda: small.sum(), small.numel() * 4),
        "cross_entropy 268 MB": (lambda: F.cross_entropy(logits, target), big + 4096 * 8),
        "copy 268+268 MB": (lambda: dst.copy_(logits), 2 * big),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("flush_bias.json"))
    parser.add_argument("--rounds", type=int, default=2, help="write/read pairs per call")
    args = parser.parse_args()

    import statistics

    import torch

    from upskills.verify.timing import time_cuda

    rows: list[dict[str, Any]] = []
    for name, (fn, nbytes) in _cases().items():
        medians: dict[str, list[float]] = {"write": [], "read": []}
        for _ in range(args.rounds):
            for mode in ("write", "read"):
                timing, _ = time_cuda(fn, flush_mode=mode, min_reps=50, target_s=0.3)
                medians[mode].append(timing.median_ms)
        row: dict[str, Any] = {"call": name, "bytes": nbytes}
        for mode, values in medians.items():
            ms = statistics.median(values)
            row[f"{mode}_flush_ms"] = round(ms, 5)
            row[f"{mode}_flush_runs_ms"] = [round(v, 5) for v in values]
            row[f"{mode}_flush_gbs"] = round(nbytes / (ms * 1e-3) / 1e9, 1)
        row["write_over_read"] = round(row["write_flush_ms"] / row["read_flush_ms"], 3)
        rows.append(row)
        print(
            f"{name:22s} write flush {row['write_flush_ms']:.4f} ms ({row['write_flush_gbs']:7.1f}"
            f" GB/s)  read flush {row['read_flush_ms']:.4f} ms ({row['read_flush_gbs']:7.1f}"
            f" GB/s)  write/read {row['write_over_read']:.3f}",
            flush=True,
        )
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "calls": rows}
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
