"""How fast and how steady is the verifier on this machine?

    python benchmarks/verifier_bench.py --device auto --out verifier_bench.json

1. Throughput: a batch of candidates for ``vector_add`` (correct kernels with different block
   sizes, a wrong one, a cheat, a syntax error, an interface error) checked one after another
   by one warm :class:`Verifier`, compile and timing included: verdicts per minute, and the
   per-verdict cost of the fresh child alone (a check that fails right after import).
2. Timing stability (CUDA): the same kernel checked 5 times; the spread of the 5 medians
   (max/min - 1) and of each measurement's p10..p90. Each of those checks is followed by one
   with the judge's per-call input perturbation off (``CheckOptions(perturb_timing=False)``),
   one with the audit of timed calls off (``audit_timed_calls=False``) and one with the
   audited clock check off (``audit_clock_calls=False``), so they are compared side by side in
   one run: what each costs a timed call (the median) and a check (its seconds).

Prints a table and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, out, n, BLOCK=BLOCK_SIZE)
        return out
"""


def candidates() -> list[tuple[str, str]]:
    """(label, source) of the batch."""
    batch = [
        (f"good BLOCK={b}", KERNEL.replace("BLOCK_SIZE", str(b))) for b in (512, 1024, 2048, 4096)
    ]
    good = KERNEL.replace("BLOCK_SIZE", "1024")
    batch += [
        ("wrong values", good.replace("x + y, mask", "x * y, mask")),
        ("cheat: torch op", good.replace("out = torch.empty_like(x)", "out = torch.add(x, y)")),
        ("syntax error", good.replace("def forward(self, x, y):", "def forward(self, x, y)")),
        ("no ModelNew", good.replace("class ModelNew", "class Other")),
    ]
    return batch


def _stability(medians: list[float], spreads: list[float]) -> dict:
    return {
        "medians_ms": medians,
        "medians_spread": round(max(medians) / min(medians) - 1, 4) if medians else None,
        "mean_p10_p90_spread": round(statistics.fmean(spreads), 4) if spreads else None,
        "timing": "measured" if medians else "unavailable on this device",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--task", default="vector_add")
    parser.add_argument("--repeats", type=int, default=5, help="checks of one kernel (stability)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("verifier_bench.json"))
    args = parser.parse_args(argv)

    from upskills.tasks import load_task
    from upskills.verify import CheckOptions, Verifier

    task = load_task(args.task)
    options = CheckOptions(seeds=args.seeds, timeout_s=600)
    report: dict = {"task": task.name, "seeds": args.seeds}
    with Verifier(args.device, options) as verifier:
        report["device"] = verifier.device
        start = time.monotonic()
        verifier.check(
            task, KERNEL.replace("BLOCK_SIZE", "1024")
        )  # warm: zygote, caches, baselines
        report["first_verdict_s"] = round(time.monotonic() - start, 3)
        rows = []
        start = time.monotonic()
        for label, source in candidates():
            t0 = time.monotonic()
            v = verifier.check(task, source)
            rows.append(
                {
                    "candidate": label,
                    "passed": v.passed,
                    "error_class": v.error_class,
                    "seconds": round(time.monotonic() - t0, 3),
                    "median_ms": v.timing.median_ms if v.timing else None,
                }
            )
        batch_s = time.monotonic() - start
        report["batch"] = rows
        report["verdicts_per_minute"] = round(len(rows) / batch_s * 60, 2)
        child = [r["seconds"] for r in rows if r["candidate"] == "no ModelNew"]
        report["child_overhead_s"] = child[0] if child else None
        variants = {
            "perturbed": options,
            "plain": options.model_copy(update={"perturb_timing": False}),
            "unaudited": options.model_copy(update={"audit_timed_calls": False}),
            "clock_unaudited": options.model_copy(update={"audit_clock_calls": False}),
        }
        runs: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in variants}
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.repeats):
            for name, opts in variants.items():
                t0 = time.monotonic()
                v = verifier.check(task, KERNEL.replace("BLOCK_SIZE", "1024"), opts)
                seconds[name].append(time.monotonic() - t0)
                if v.timing is not None:
                    runs[name][0].append(v.timing.median_ms)
                    runs[name][1].append(v.timing.spread)
        report["stability"] = {name: _stability(*runs[name]) for name in runs}
        report["check_seconds"] = {n: round(statistics.median(t), 3) for n, t in seconds.items()}

        def ratio(a: str, b: str) -> float | None:
            if not (runs[a][0] and runs[b][0]):
                return None
            return round(statistics.median(runs[a][0]) / statistics.median(runs[b][0]), 4)

        report["perturbed_over_plain"] = ratio("perturbed", "plain")
        report["audited_over_unaudited"] = ratio("perturbed", "unaudited")
        report["clock_audited_over_unaudited"] = ratio("perturbed", "clock_unaudited")
    print(f"device {report['device']}, task {task.name}, {args.seeds} seeds")
    print(f"{'candidate':24s} {'passed':7s} {'error':10s} {'seconds':>8s} {'median ms':>10s}")
    for r in rows:
        med = f"{r['median_ms']:.4f}" if r["median_ms"] is not None else "-"
        print(
            f"{r['candidate']:24s} {r['passed']!s:7s} {r['error_class'] or '-':10s} "
            f"{r['seconds']:8.2f} {med:>10s}"
        )
    print(
        f"verdicts/minute: {report['verdicts_per_minute']}  (first verdict, cold: "
        f"{report['first_verdict_s']} s; fresh-child overhead: {report['child_overhead_s']} s)"
    )
    for name, st in report["stability"].items():
        print(
            f"stability over {args.repeats} checks, {name}: medians {st['medians_ms']} -> "
            f"spread {st['medians_spread']} ({st['timing']})"
        )
    print(
        f"median of medians, perturbed / plain: {report['perturbed_over_plain']}; audited / "
        f"unaudited: {report['audited_over_unaudited']}; clock-audited / clock-unaudited: "
        f"{report['clock_audited_over_unaudited']}"
    )
    print(
        "check seconds (median): "
        + ", ".join(f"{k} {v}" for k, v in report["check_seconds"].items())
    )
    args.out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
