"""Simulated throughput of a Ray evaluation at N GPUs, from a measured per-verdict cost.

    python benchmarks/ray_sim.py --verdict-s 1.51 --dispatch-ms 1.7 --gpus 1 2 8 64
    python benchmarks/ray_sim.py --from-evaluations reports/smollm2-135m-lift/evaluations.cuda.jsonl

A discrete-event model of what ``RayExecutor.run`` does: one actor per GPU, each becoming ready
``--actor-start-s`` after the run starts (actor process, verifier warm worker, first import of
torch), one unit in flight per actor; the driver is a single server that spends
``--dispatch-ms`` on each result (deserialize, append + fsync, dispatch the next unit), so it
caps the whole cluster at ``1000 / dispatch_ms`` verdicts per second; actors on other nodes than
the driver pay ``--rtt-ms`` per unit, and each node fetches each distinct task once
(``--task-fetch-ms``). Verdict costs are drawn (with a fixed seed) from the measured ones.
Prints verdicts/min and the efficiency against N x the one-GPU rate; writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
from pathlib import Path


def simulate(
    costs: list[float],
    gpus: int,
    units: int,
    dispatch_s: float,
    rtt_s: float,
    start_s: float,
    gpus_per_node: int,
    tasks: int,
    task_fetch_s: float,
    seed: int = 0,
) -> dict:
    """Makespan and rates of ``units`` verdicts on ``gpus`` actors (see the module docstring)."""
    rng = random.Random(seed)
    free = [(start_s, a) for a in range(gpus)]  # (time the actor is free, actor)
    heapq.heapify(free)
    driver = 0.0
    fetched: set[tuple[int, int]] = set()
    end = 0.0
    for i in range(units):
        t, actor = heapq.heappop(free)
        node = actor // gpus_per_node
        driver = max(driver, t) + dispatch_s  # the driver handles results one at a time
        begin = driver + (rtt_s / 2 if node else 0.0)
        task = i % tasks
        if (node, task) not in fetched:  # object store: once per node and task
            fetched.add((node, task))
            begin += task_fetch_s
        done = begin + rng.choice(costs) + (rtt_s / 2 if node else 0.0)
        end = max(end, done)
        heapq.heappush(free, (done, actor))
    return {
        "gpus": gpus,
        "nodes": -(-gpus // gpus_per_node),
        "units": units,
        "makespan_s": round(end, 1),
        "verdicts_per_min": round(units / end * 60, 1),
        "steady_per_min": round(units / (end - start_s) * 60, 1),
    }


def _costs(args: argparse.Namespace) -> list[float]:
    if args.from_evaluations:
        costs = []
        for line in Path(args.from_evaluations).read_text().splitlines():
            rec = json.loads(line)
            if rec.get("kernel_hash") and rec.get("duration_s"):
                costs.append(float(rec["duration_s"]))
        return costs
    return [args.verdict_s]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--verdict-s", type=float, default=1.51, help="per-verdict cost (s)")
    p.add_argument("--from-evaluations", help="an evaluations.*.jsonl: its durations")
    p.add_argument("--dispatch-ms", type=float, default=1.7, help="driver time per result")
    p.add_argument("--rtt-ms", type=float, default=1.0, help="round trip to another node")
    p.add_argument("--actor-start-s", type=float, default=15.0, help="actor + verifier warm-up")
    p.add_argument("--task-fetch-ms", type=float, default=5.0, help="a task into a node's store")
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--tasks", type=int, default=50, help="distinct tasks in the run")
    p.add_argument("--units", type=int, default=10_000)
    p.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 8, 64])
    p.add_argument("--out")
    args = p.parse_args()
    costs = _costs(args)
    rows = [
        simulate(
            costs,
            g,
            args.units,
            args.dispatch_ms / 1000,
            args.rtt_ms / 1000,
            args.actor_start_s,
            args.gpus_per_node,
            args.tasks,
            args.task_fetch_ms / 1000,
        )
        for g in args.gpus
    ]
    one = simulate(
        costs,
        1,
        args.units,
        args.dispatch_ms / 1000,
        0,
        args.actor_start_s,
        1,
        args.tasks,
        args.task_fetch_ms / 1000,
    )["steady_per_min"]
    for r in rows:
        r["efficiency"] = round(r["steady_per_min"] / (one * r["gpus"]), 3)
    info = {
        "verdict_s_mean": round(statistics.fmean(costs), 3),
        "verdict_costs": len(costs),
        "dispatch_ms": args.dispatch_ms,
        "rtt_ms": args.rtt_ms,
        "actor_start_s": args.actor_start_s,
        "driver_ceiling_per_min": round(60_000 / args.dispatch_ms),
        "rows": rows,
    }
    print(
        f"per-verdict cost mean {info['verdict_s_mean']} s over {len(costs)} measured; "
        f"driver ceiling {info['driver_ceiling_per_min']}/min"
    )
    print(
        f"{'GPUs':>5} {'nodes':>5} {'makespan s':>11} {'verdicts/min':>13} {'steady/min':>11} "
        f"{'efficiency':>10}"
    )
    for r in rows:
        print(
            f"{r['gpus']:>5} {r['nodes']:>5} {r['makespan_s']:>11} {r['verdicts_per_min']:>13} "
            f"{r['steady_per_min']:>11} {r['efficiency']:>10}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main()
