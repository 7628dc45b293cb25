"""Re-check each corpus trace's final kernel with ``upskills check`` and compare speedups.

For every trace it writes the run_end's best kernel to a file, runs the real command
``python -m upskills check TASK FILE --device cuda --json`` (a fresh process, as a user would),
and compares the new speedup vs eager with the one the trace recorded. Rows are appended to
``--out`` (JSON lines) as they are produced; a table is printed at the end.

    python benchmarks/corpus/recheck.py traces/corpus-h200 --out recheck.jsonl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from upskills.trace import iter_trace_files, read_trace


def recheck(trace_path: Path, device: str, timeout: float) -> dict:
    """Re-check one trace's final kernel; returns a result row."""
    trace = read_trace(trace_path)
    start, end = trace.start, trace.end
    row: dict = {"trace": trace_path.name, "task": start.task if start else None}
    if end is None or not end.best_kernel_source or start is None:
        return row | {"error": "no final kernel in the trace"}
    row["recorded_speedup"] = end.best_speedup
    with tempfile.TemporaryDirectory() as tmp:
        kernel = Path(tmp) / f"{start.task}_final.py"
        kernel.write_text(end.best_kernel_source, encoding="utf-8")
        cmd = [
            sys.executable,
            "-m",
            "upskills",
            "check",
            start.task,
            str(kernel),
            "--device",
            device,
            "--json",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    try:
        verdict = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return row | {"error": f"exit {proc.returncode}: {proc.stderr[-300:]}"}
    new = verdict.get("speedup_eager")
    row |= {
        "passed": verdict.get("passed"),
        "speedup": new,
        "gpu": verdict.get("gpu"),
        "median_ms": (verdict.get("timing") or {}).get("median_ms"),
    }
    if new and end.best_speedup:
        row["ratio"] = round(new / end.best_speedup, 4)
        row["within_5pct"] = abs(new / end.best_speedup - 1) <= 0.05
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    rows = []
    for path in iter_trace_files(args.paths):
        row = recheck(path, args.device, args.timeout)
        rows.append(row)
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    ok = sum(1 for r in rows if r.get("within_5pct"))
    print(f"{ok}/{len(rows)} final kernels re-checked within 5% of the recorded speedup")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
