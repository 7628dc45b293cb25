"""Verdicts per minute: upskills' judge next to KernelBench's own harness, same problems, same run.

    python benchmarks/verifier_vs_kernelbench.py --kernelbench PATH/TO/KernelBench-checkout \
        --out results.json [--kb-problems 3] [--kb-skip 0]

For each KernelBench level-1 problem in ``OPS`` (an honest one-pass Triton candidate built from
``TEMPLATE`` for each: one load, the expression, one store), at the problem's real sizes:

- upskills: ``Verifier('cuda').check(...)`` with default options (3 seeds x (the problem's shape
  + one drawn at random), adversarial domains when declared, timing with the L2 flush and the
  judge's clock check; speedup baselines off, since KernelBench's harness does not time the
  reference either). One warm verifier, the candidates checked one after another.
- KernelBench: ``eval_kernel_against_ref`` (5 correctness trials, 100 perf trials, triton
  backend), imported from the checkout given (its code is not part of this repository; its
  package ``__init__``, which pulls in API clients, is skipped).

Prints a table (verdicts/min each, ratio, upskills' per-stage cost) and writes JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
import types
from pathlib import Path

TEMPLATE = '''"""Honest Triton candidate for KernelBench level 1 {problem}: one elementwise pass."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, PARAM, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = {expr}
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self{init_sig}):
        super().__init__()
        self.param = {param}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _kernel[(triton.cdiv(n, 4096),)](x, out, n, self.param, BLOCK=4096, num_warps=8)
        return out
'''

OPS = {
    "19_ReLU": "tl.maximum(x, 0.0)",
    "20_LeakyReLU": "tl.where(x >= 0, x, x * PARAM)",
    "21_Sigmoid": "1.0 / (1.0 + tl.exp(-x))",
    "22_Tanh": "2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0",
    "25_Swish": "x / (1.0 + tl.exp(-x))",
    "26_GELU_": "0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))",
    "27_SELU_": "1.0507009873554805 * tl.where(x > 0, x, 1.6732632423543772 * (tl.exp(x) - 1.0))",
    "28_HardSigmoid": "tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)",
    "29_Softplus": "tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))",
    "32_HardTanh": "tl.minimum(tl.maximum(x, -1.0), 1.0)",
}


def candidate(problem: str) -> str:
    """The candidate module for one problem of ``OPS``."""
    leaky = problem == "20_LeakyReLU"
    return TEMPLATE.format(
        problem=problem,
        expr=OPS[problem],
        init_sig=", negative_slope: float = 0.01" if leaky else "",
        param="negative_slope" if leaky else "0.0",
    )


def _kernelbench_eval(checkout: Path):  # noqa: ANN202 - their function
    src = checkout / "src" / "kernelbench"
    # their utils module imports API clients at import time; none is used by the harness
    for name, attrs in {
        "dotenv": {"load_dotenv": lambda *a, **k: None},
        "openai": {"OpenAI": object},
        "litellm": {"completion": None},
    }.items():
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except ImportError:
                stub = types.ModuleType(name)
                stub.__dict__.update(attrs)
                sys.modules[name] = stub
    package = types.ModuleType("kernelbench")
    package.__path__ = [str(src)]  # type: ignore[attr-defined]
    sys.modules["kernelbench"] = package
    return importlib.import_module("kernelbench.eval").eval_kernel_against_ref


def main() -> None:
    """Run both judges over the problems and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernelbench", type=Path, required=True, help="KernelBench checkout")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kb-problems", type=int, default=3, help="how many to run through KB")
    parser.add_argument(
        "--kb-skip", type=int, default=0, help="skip the first N problems on KB's side"
    )
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()

    from upskills.tasks import load_task
    from upskills.verify import CheckOptions, Verifier

    problems = sorted(OPS, key=lambda p: int(p.split("_")[0]))
    level1 = args.kernelbench / "KernelBench" / "level1"
    rows: list[dict[str, object]] = []
    options = CheckOptions(seeds=args.seeds, baselines=False, timeout_s=600)
    with Verifier("cuda", options) as verifier:
        warm = verifier.check(load_task(level1 / f"{problems[0]}.py"), candidate(problems[0]))
        print(f"warm-up check: {warm.passed} ({warm.duration_s:.1f} s)", flush=True)
        for name in problems:
            task = load_task(level1 / f"{name}.py")
            start = time.monotonic()
            verdict = verifier.check(task, candidate(name))
            wall = time.monotonic() - start
            rows.append(
                {
                    "problem": name,
                    "upskills_passed": verdict.passed,
                    "upskills_s": round(wall, 3),
                    "upskills_message": verdict.message[:300],
                    "trials": len(verdict.variants),
                    "timing_median_ms": verdict.timing.median_ms if verdict.timing else None,
                    "timing_spread": verdict.timing.spread if verdict.timing else None,
                    "stage_seconds": verdict.stage_seconds,
                    "gpu": verdict.gpu,
                }
            )
            print(f"upskills {name}: {verdict.passed} {wall:.1f} s", flush=True)
            write_results(args.out, rows)
    eval_fn = _kernelbench_eval(args.kernelbench)
    for row in rows[args.kb_skip : args.kb_skip + args.kb_problems]:
        name = str(row["problem"])
        ref = (level1 / f"{name}.py").read_text()
        cand = candidate(name)
        start = time.monotonic()
        result = eval_fn(
            ref,
            cand,
            num_correct_trials=5,
            num_perf_trials=100,
            measure_performance=True,
            backend="triton",
            device=0,
        )
        row["kernelbench_s"] = round(time.monotonic() - start, 3)
        row["kernelbench_correct"] = bool(getattr(result, "correctness", False))
        row["kernelbench_runtime_ms"] = getattr(result, "runtime", None)
        print(
            f"kernelbench {name}: {row['kernelbench_correct']} {row['kernelbench_s']} s", flush=True
        )
        write_results(args.out, rows)
    summary = write_results(args.out, rows)
    print(f"{'problem':24} {'upskills s':>10} {'KB s':>8} {'pass':>5}")
    for r in rows:
        kb = r.get("kernelbench_s", "")
        print(f"{r['problem']!s:24} {r['upskills_s']!s:>10} {kb!s:>8} {r['upskills_passed']!s:>5}")
    print(json.dumps(summary, indent=2))


def write_results(out: Path, rows: list[dict[str, object]]) -> dict[str, object]:
    """Write the rows so far and their summary to ``out`` (called after every stage)."""
    both = [r for r in rows if "kernelbench_s" in r]
    all_ours = statistics.fmean(float(r["upskills_s"]) for r in rows)  # type: ignore[arg-type]
    summary: dict[str, object] = {
        "problems": len(rows),
        "problems_through_kernelbench": len(both),
        "upskills_passed": sum(bool(r["upskills_passed"]) for r in rows),
        "upskills_verdicts_per_min_all": round(60 / all_ours, 2),
    }
    if both:
        ours = statistics.fmean(float(r["upskills_s"]) for r in both)  # type: ignore[arg-type]
        theirs = statistics.fmean(float(r["kernelbench_s"]) for r in both)  # type: ignore[arg-type]
        summary["upskills_verdicts_per_min_same"] = round(60 / ours, 2)
        summary["kernelbench_verdicts_per_min"] = round(60 / theirs, 2)
        summary["ratio_same_problems"] = round(theirs / ours, 2)
    stages: dict[str, float] = {}
    for r in rows:
        for k, v in r["stage_seconds"].items():  # type: ignore[union-attr]
            stages[k] = stages.get(k, 0.0) + v / len(rows)
    summary["mean_stage_seconds"] = {k: round(v, 3) for k, v in sorted(stages.items())}
    spreads = [float(r["timing_spread"]) for r in rows if r["timing_spread"] is not None]  # type: ignore[arg-type]
    summary["timing_spread_median"] = statistics.median(spreads) if spreads else None
    summary["timing_spread_max"] = max(spreads) if spreads else None
    out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2))
    return summary


if __name__ == "__main__":
    main()
