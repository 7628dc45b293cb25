"""Verdicts per minute through an executor: a lift evaluation, known kernels, or bare overhead.

    # a lift run's evaluation, from scratch in a copy of the run folder
    python benchmarks/executor_bench.py lift reports/smollm2-135m-lift --device cuda \
        --executor ray --workers 2 --out ray.json
    # the known-good and known-bad kernels of tests/kernels, COPIES distinct copies of each
    python benchmarks/executor_bench.py kernels --copies 2 --device cuda --executor local
    # per-unit scheduling + transfer cost: units that fail at parse (no child process)
    python benchmarks/executor_bench.py overhead --units 300 --executor ray --workers 1

Startup (Ray, actors, each verifier's warm worker) is reported apart from the steady rate:
``steady_per_min`` counts the results after each worker's first, over the time since the last
worker's first result came back. Writes one JSON object to ``--out`` and prints it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from upskills.executor import ExecutorConfig, WorkUnit, make_executor  # noqa: E402


def _rates(stamps: list[tuple[float, str]], start: float, workers: int) -> dict:
    """Wall rate and steady rate from (time, worker) of each result."""
    n = len(stamps)
    wall = (stamps[-1][0] - start) if stamps else 0.0
    firsts: dict[str, float] = {}
    for t, w in stamps:
        firsts.setdefault(w, t)
    warm = max(firsts.values()) if firsts else start
    after = [t for t, w in stamps if t > warm]
    steady = len(after) / (after[-1] - warm) * 60 if len(after) >= 2 else None
    return {
        "results": n,
        "wall_s": round(wall, 2),
        "per_min": round(n / wall * 60, 1) if wall > 0 else None,
        "first_result_s": round(stamps[0][0] - start, 2) if stamps else None,
        "all_workers_warm_s": round(warm - start, 2),
        "steady_per_min": round(steady, 1) if steady else None,
        "workers_seen": len(firsts),
    }


def _run(units: list[WorkUnit], args: argparse.Namespace) -> tuple[dict, list]:
    config = ExecutorConfig(name=args.executor, workers=args.workers, ray_address=args.ray_address)
    start = time.monotonic()
    stamps, results = [], []
    with make_executor(config, args.device) as ex:
        started = time.monotonic()
        for r in ex.run(units):
            stamps.append((time.monotonic(), r.worker))
            results.append(r)
        info = _rates(stamps, start, args.workers or 1)
        info["executor_start_s"] = round(started - start, 2)
        if hasattr(ex, "stats"):
            info["ray_stats"] = {k: v for k, v in vars(ex.stats).items() if k != "retried"}
    durations = [r.verdict.duration_s for r in results]
    if durations:
        info["verdict_s_median"] = round(statistics.median(durations), 3)
        info["verdict_s_mean"] = round(statistics.fmean(durations), 3)
    return info, results


def _lift(args: argparse.Namespace) -> dict:
    from upskills.lift.evaluate import evaluate_with
    from upskills.lift.store import EvaluationRecord, evaluations_name, read_records

    src = Path(args.run)
    with tempfile.TemporaryDirectory(prefix="executor-bench-") as tmp:
        run = Path(tmp) / src.name
        run.mkdir()
        for name in ("run.json", "generations.jsonl"):
            shutil.copy(src / name, run / name)
        config = ExecutorConfig(
            name=args.executor, workers=args.workers, ray_address=args.ray_address
        )
        start = time.monotonic()
        with make_executor(config, args.device) as ex:
            started = time.monotonic()
            evaluate_with(run, args.device, ex, progress=False)
        wall = time.monotonic() - start
        recs = read_records(run / evaluations_name(args.device), EvaluationRecord)
        judged = [r for r in recs if r.kernel_hash]
        units = len({r.kernel_hash for r in judged})
        info = {
            "samples": len(recs),
            "verifier_units": units,
            "wall_s": round(wall, 2),
            "executor_start_s": round(started - start, 2),
            "units_per_min": round(units / wall * 60, 1),
            "units_per_min_after_start": round(units / (wall - (started - start)) * 60, 1),
            "verdict_s_sum": round(sum(r.duration_s for r in judged), 2),
            "outcomes": sorted((r.key, r.passed, r.error_class) for r in recs),
        }
        if args.save_evaluations:
            shutil.copy(run / evaluations_name(args.device), args.save_evaluations)
        committed = src / evaluations_name(args.device)
        if committed.exists():
            old = {
                r.key: (r.passed, r.error_class) for r in read_records(committed, EvaluationRecord)
            }
            info["agree_with_committed"] = sum(
                old.get(r.key) == (r.passed, r.error_class) for r in recs
            )
        return info


def _kernel_units(args: argparse.Namespace) -> list[WorkUnit]:
    from upskills.tasks import load_task
    from upskills.verify import CheckOptions

    options = CheckOptions(seeds=1, timing=args.device == "cuda", baselines=args.device == "cuda")
    units = []
    for path in sorted((ROOT / "tests" / "kernels").glob("*/*.py")):
        if path.parent.name not in ("good", "bad"):
            continue
        task = load_task(path.stem.split("__")[0])
        for i in range(args.copies):  # distinct sources: a trailing comment
            src = path.read_text() + f"\n# copy {i}\n"
            units.append(
                WorkUnit(key=f"{path.stem}#{i}", task=task, candidate=src, options=options)
            )
    return units


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("what", choices=["lift", "kernels", "overhead"])
    p.add_argument("run", nargs="?", help="lift run folder (for `lift`)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--executor", default="local", choices=["local", "ray"])
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--ray-address", default=None)
    p.add_argument("--copies", type=int, default=1)
    p.add_argument("--units", type=int, default=200)
    p.add_argument("--save-evaluations", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    info: dict = {
        "what": args.what,
        "executor": args.executor,
        "workers": args.workers,
        "device": args.device,
    }
    if args.what == "lift":
        info.update(_lift(args))
    elif args.what == "kernels":
        res, results = _run(_kernel_units(args), args)
        info.update(res)
        info["outcomes"] = sorted((r.key, r.verdict.passed, r.verdict.error_class) for r in results)
    else:
        from upskills.tasks import load_task

        task = load_task("vector_add")
        units = [
            WorkUnit(key=str(i), task=task, candidate=f"def f(:\n# {i}\n")
            for i in range(args.units)
        ]
        res, _ = _run(units, args)
        info.update(res)
        info["unit_json_bytes"] = len(units[0].model_dump_json())
        info["unit_json_bytes_without_task"] = len(units[0].model_dump_json(exclude={"task"}))
    if "outcomes" in info:  # one hash to compare executors at a glance
        info["outcomes_sha256"] = hashlib.sha256(json.dumps(info["outcomes"]).encode()).hexdigest()
    print(json.dumps({k: v for k, v in info.items() if k != "outcomes"}, indent=1))
    text = json.dumps(info, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
