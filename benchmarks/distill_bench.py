"""Benchmark: distill N synthetic traces (default 1,000) and report wall time and peak memory.

The traces are benchmark input generated here, never shipped data: each solves ``row_sum`` in
four attempts (a tail-dropping kernel that fails the ragged variant, the masked fix, a retune,
and a re-check), with long model responses so files are realistic in size (~40 KB). Verdicts
are synthetic: this measures the distiller, not the verifier.

Usage: python benchmarks/distill_bench.py [--traces 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import tempfile
import time
from pathlib import Path

from upskills.distill import DistillConfig, distill
from upskills.trace.events import ModelCall, RunEnd, RunStart, ToolCall, ToolResult, dump_event
from upskills.verify.verdict import ErrorClass, VariantResult, Verdict

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range({stop}):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols{mask})
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        M, N = x.shape
        out = torch.empty(M, device=x.device, dtype=x.dtype)
        row_sum_kernel[(M,)](x, out, N, x.stride(0), BLOCK={block}{launch})
        return out
"""


def _kernel(i: int, block: int, masked: bool, warps: int | None) -> str:
    # A per-trace comment makes every trace's kernels unique, as in a real corpus.
    return f"# synthetic benchmark kernel, trace {i}\n" + KERNEL.format(
        stop="0, N, BLOCK" if masked else "0, N - BLOCK + 1, BLOCK",
        mask=", mask=cols < N, other=0.0" if masked else "",
        block=block,
        launch=f", num_warps={warps}" if warps else "",
    )


def _verdict(source: str, passed: bool, speedup: float | None) -> Verdict:
    return Verdict(
        task="row_sum",
        task_hash="0" * 16,
        device="cuda",
        gpu="NVIDIA H200",
        candidate_hash=hashlib.sha256(source.encode()).hexdigest()[:16],
        passed=passed,
        error_class=None if passed else ErrorClass.MISMATCH,
        message="ok" if passed else "variant 'ragged' seed 0: 67 of 67 elements exceed tolerance",
        variants=[] if passed else [VariantResult(variant="ragged", seed=0, passed=False)],
        speedup_eager=speedup,
        timing_status="measured" if speedup else "failed",
    )


def write_synthetic(folder: Path, n: int) -> None:
    """Write ``n`` synthetic trace files into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    filler = "Reasoning about the kernel's memory access and masking. " * 70
    ts = "2026-01-01T00:00:00.000000+00:00"
    for i in range(n):
        tid = f"{i:032x}"
        block = (64, 128, 256)[i % 3]
        attempts = [
            (_kernel(i, block, False, None), False, None),
            (_kernel(i, block, True, None), True, 1.0 + (i % 7) / 10),
            (_kernel(i, block, True, 4 + 4 * (i % 2)), True, 1.6 + (i % 5) / 10),
            (_kernel(i, block, True, 4 + 4 * (i % 2)), True, 1.6 + (i % 5) / 10),
        ]
        lines = [
            RunStart(
                trace_id=tid,
                ts=ts,
                task="row_sum",
                task_hash="0" * 16,
                agent_role="teacher",
                provider="mock",
                model="bench",
            )
        ]
        for j, (src, ok, sp) in enumerate(attempts):
            lines.append(
                ModelCall(trace_id=tid, ts=ts, provider="mock", model="bench", response_text=filler)
            )
            lines.append(
                ToolCall(
                    trace_id=tid,
                    ts=ts,
                    tool_name="benchmark",
                    call_id=f"c{j}",
                    arguments={"source": src},
                )
            )
            lines.append(
                ToolResult(
                    trace_id=tid,
                    ts=ts,
                    tool_name="benchmark",
                    call_id=f"c{j}",
                    verdict=_verdict(src, ok, sp),
                    kernel_source=src,
                )
            )
        best = attempts[-1]
        lines.append(
            RunEnd(
                trace_id=tid,
                ts=ts,
                outcome="solved",
                best_speedup=best[2],
                best_kernel_source=best[0],
            )
        )
        text = "".join(dump_event(e) + "\n" for e in lines)
        (folder / f"trace_{i:05d}.jsonl").write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--keep", type=Path, default=None, help="write into this folder instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        traces = root / "traces"
        write_synthetic(traces, args.traces)
        size = sum(p.stat().st_size for p in traces.glob("*.jsonl"))
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        result = distill([traces], root / "skills", None, DistillConfig())
        seconds = time.perf_counter() - start
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    packs = ", ".join(f"{p.name}@{p.version}" for p in result.packs)
    mb = size / 1e6
    print(f"traces: {result.traces_read} read ({mb:.1f} MB), {result.traces_selected} selected")
    print(f"lessons: {result.lessons}; packs: {packs}")
    print(f"distill wall time: {seconds:.2f} s")
    print(f"peak RSS: {rss_after / 1024:.0f} MiB (before distill: {rss_before / 1024:.0f} MiB)")
    return 0 if seconds < 30 else 1


if __name__ == "__main__":
    sys.exit(main())
