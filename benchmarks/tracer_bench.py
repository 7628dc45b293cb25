"""Tracer overhead: microseconds per event written (validate + redact + append + flush) and read.

Run: ``python benchmarks/tracer_bench.py [--events 20000] [--out results.json]``
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from upskills.trace import TraceWriter, read_trace
from upskills.trace.events import ModelCall, ToolCall, ToolCallRequest, ToolResult, Usage
from upskills.verify.verdict import Verdict

KERNEL = "import triton\n" + "x = 1\n" * 200  # ~1.2 kB of kernel source


def _events(trace_id: str, n: int):
    verdict = Verdict(task="t", task_hash="h", candidate_hash="c", device="cuda", passed=True)
    for i in range(n):
        k = i % 3
        if k == 0:
            yield ModelCall(
                trace_id=trace_id,
                provider="mock",
                model="m",
                response_text="y" * 400,
                tool_calls=[ToolCallRequest(id=str(i), name="check")],
                usage=Usage(input_tokens=1000, output_tokens=100),
            )
        elif k == 1:
            yield ToolCall(
                trace_id=trace_id, tool_name="check", call_id=str(i), arguments={"source": KERNEL}
            )
        else:
            yield ToolResult(
                trace_id=trace_id,
                tool_name="check",
                call_id=str(i),
                output="PASS",
                verdict=verdict,
                kernel_source=KERNEL,
                kernel_hash="abc",
            )


def run(n: int, durable: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        events = list(_events("bench", n))
        t0 = time.perf_counter()
        with TraceWriter(path, trace_id="bench", durable=durable) as w:
            for e in events:
                w.write(e)
        write_s = time.perf_counter() - t0
        size = path.stat().st_size
        t0 = time.perf_counter()
        trace = read_trace(path, strict=True)
        read_s = time.perf_counter() - t0
        assert len(trace.events) == n
    return {
        "events": n,
        "durable_fsync": durable,
        "write_us_per_event": round(write_s / n * 1e6, 1),
        "read_us_per_event": round(read_s / n * 1e6, 1),
        "bytes_per_event": round(size / n),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = [run(args.events, False), run(max(args.events // 10, 100), True)]
    result = {"machine": platform.platform(), "cpu": platform.processor(), "results": rows}
    print(f"{'mode':<10}{'events':>8}{'write us/ev':>13}{'read us/ev':>12}{'B/ev':>7}")
    for r in rows:
        mode = "fsync" if r["durable_fsync"] else "flush"
        print(
            f"{mode:<10}{r['events']:>8}{r['write_us_per_event']:>13}{r['read_us_per_event']:>12}"
            f"{r['bytes_per_event']:>7}"
        )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
