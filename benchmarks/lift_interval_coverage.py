"""Coverage of the lift intervals on 0/1 outcomes that come several cases a task, by simulation.

    python benchmarks/lift_interval_coverage.py --out benchmarks/results/lift_interval_coverage.json

Each run draws tasks of ``per`` cases; a task is easy (45%) or not, an easy task's case passes
the reference arm with 90%, a hard one never; the arm then flips failing cases to passing with
rate ``up`` and passing ones to failing with rate ``down``, either case by case (``indep``) or
a whole task at once (``task``: the cases of a task move together). The true lift of a run is
its expected difference given the reference, ``up * (1 - ref) - down * ref``. Three intervals
of each run are scored, how often they hold the truth and how wide they are:

- ``paired_lift``: what the reports print (``newcombe-tasks`` for these data since the
  twenty-ninth session);
- ``cluster_t``: the t interval over task clusters these data got before (a point when no
  case differs, as the bootstrap gave);
- ``newcombe_cases``: Newcombe's paired interval treating the cases as independent.

Prints one line per setting and the worst coverage of each interval; writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from upskills.lift.stats import cluster_t_interval, newcombe_paired, paired_lift

SETTINGS = [
    (tasks, per, mode, up, down)
    for tasks, per in ((10, 3), (21, 3), (30, 2), (25, 4))
    for mode in ("indep", "task")
    for up, down in ((0.02, 0.0), (0.1, 0.0), (0.2, 0.05), (0.3, 0.1))
]


def _cluster_t(diffs: np.ndarray, names: list[str]) -> tuple[float, float]:
    if not np.any(diffs - diffs.mean()):
        return (float(diffs.mean()),) * 2
    low, high = cluster_t_interval(diffs, names)
    return (max(low, -1.0), min(high, 1.0))


def simulate(
    tasks: int, per: int, mode: str, up: float, down: float, runs: int, rng: np.random.Generator
) -> dict[str, Any]:
    """Coverage and mean width of each interval over ``runs`` simulated experiments."""
    names = [f"t{i}" for i in range(tasks) for _ in range(per)]
    hits = dict.fromkeys(("paired_lift", "cluster_t", "newcombe_cases"), 0)
    width = dict.fromkeys(hits, 0.0)
    for _ in range(runs):
        easy = np.repeat(rng.random(tasks) < 0.45, per)
        ref = (easy & (rng.random(tasks * per) < 0.9)).astype(float)
        u = rng.random(tasks * per) if mode == "indep" else np.repeat(rng.random(tasks), per)
        arm = ref.copy()
        arm[(ref == 0) & (u < up)] = 1.0
        arm[(ref == 1) & (u < down)] = 0.0
        truth = up * (1 - ref.mean()) - down * ref.mean()
        lift = paired_lift(arm.tolist(), ref.tolist(), names)
        got = {
            "paired_lift": (lift.ci_low, lift.ci_high),
            "cluster_t": _cluster_t(arm - ref, names),
            "newcombe_cases": newcombe_paired(arm.tolist(), ref.tolist()),
        }
        for key, (low, high) in got.items():
            hits[key] += low - 1e-9 <= truth <= high + 1e-9
            width[key] += high - low
    return {
        "tasks": tasks,
        "cases_per_task": per,
        "flips": mode,
        "up": up,
        "down": down,
        "runs": runs,
        "coverage": {k: round(v / runs, 3) for k, v in hits.items()},
        "mean_width": {k: round(v / runs, 3) for k, v in width.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("lift_interval_coverage.json"))
    parser.add_argument("--runs", type=int, default=800, help="simulated experiments a setting")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for tasks, per, mode, up, down in SETTINGS:
        row = simulate(tasks, per, mode, up, down, args.runs, rng)
        rows.append(row)
        cov, wid = row["coverage"], row["mean_width"]
        print(
            f"{tasks:2d} tasks x {per} {mode:5s} up {up:.2f} down {down:.2f}: "
            + "  ".join(f"{k} {cov[k]:.3f} (width {wid[k]:.3f})" for k in cov),
            flush=True,
        )
    worst = {k: min(r["coverage"][k] for r in rows) for k in rows[0]["coverage"]}
    print("worst coverage: " + ", ".join(f"{k} {v:.3f}" for k, v in worst.items()))
    out = {"runs": args.runs, "seed": args.seed, "worst": worst, "settings": rows}
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
