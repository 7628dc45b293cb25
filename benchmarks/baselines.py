"""Measure eager and torch.compile baselines of built-in tasks on this GPU.

    python benchmarks/baselines.py --out upskills/verify/data/baselines.json

Each task is measured in its own verifier child (a crash or hang loses that task only) and
written to ``--out`` as soon as it is measured, so an interrupted run keeps what it measured and
a rerun skips tasks already present for this GPU and torch version (``--force`` re-measures).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from upskills.verify.baselines import (
    BaselineEntry,
    baseline_key,
    read_baseline_file,
    store_baseline,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("upskills/verify/data/baselines.json"))
    parser.add_argument("--tasks", nargs="*", help="task names or files (default: all built-in)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per task")
    parser.add_argument("--force", action="store_true", help="re-measure tasks already present")
    args = parser.parse_args(argv)

    import torch

    from upskills.tasks import builtin_tasks, load_task
    from upskills.verify import Verifier

    if not torch.cuda.is_available():
        print("baselines need a CUDA GPU", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name()
    tasks = [load_task(t) for t in args.tasks] if args.tasks else builtin_tasks()
    have = read_baseline_file(args.out).entries if args.out.exists() else {}
    failures = 0
    with Verifier("cuda") as verifier:
        for task in tasks:
            key = baseline_key(gpu, torch.__version__, task.hash)
            if key in have and not args.force:
                print(f"{task.name:24s} already measured")
                continue
            start = time.monotonic()
            outcome = verifier.measure_baseline(task, timeout_s=args.timeout)
            took = time.monotonic() - start
            result = outcome.result
            if result is None or "internal_error" in result:
                failures += 1
                why = (
                    "timed out"
                    if outcome.timed_out
                    else (
                        result["internal_error"].strip().splitlines()[-1]
                        if result
                        else f"worker died (exit {outcome.exit_code})"
                    )
                )
                print(f"{task.name:24s} FAILED ({took:.0f} s): {why}", flush=True)
                continue
            entry = BaselineEntry.model_validate(result)
            store_baseline(entry, args.out)
            eager = f"{entry.eager.median_ms:.4f}" if entry.eager else "-"
            comp = f"{entry.compile.median_ms:.4f}" if entry.compile else "-"
            note = f"  ({entry.error})" if entry.error else ""
            print(
                f"{task.name:24s} eager {eager} ms  compile {comp} ms  [{took:.0f} s]{note}",
                flush=True,
            )
    print(f"wrote {args.out} ({failures} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
