"""Can a forward tell a watched trial from an unwatched call by its own clock? (found 2026-12-05)

The trials run the candidate's ``forward`` under the op recorder (a ``TorchDispatchMode``) and
the shadow profile (RecordFunction); the timed calls run it under neither. Each op the forward
runs pays the watchers' host cost, so a forward that times one ``torch.empty(1)`` with
``time.perf_counter`` knows which it is in. One that used its own kernel when watched and
PyTorch (beside a launch of anything) when not would pass its trials and the late trial, and
be timed at PyTorch's speed: no guard looks at how a timed call's output was made.

Two measurements, no GPU needed:
1. In this process: the probe's time bare, under the recorder, and under the recorder and the
   shadow profile (as in a trial), ``--repeats`` times each, interleaved.
2. In the real verifier (CPU; every call of a CPU check is a trial): two candidates that use
   the probe. ``wrong_when_watched`` returns ``2x`` when its probe reads watched, so it fails
   if the probe works inside the judge's trials; ``wrong_when_unwatched`` returns ``2x``
   when its probe reads bare, so it passes on CPU (a CPU check has no unwatched call) and is
   the shape of the cheat on a GPU.

Usage: python benchmarks/verifier_v2/watch_probe.py [--repeats 300] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

THRESHOLD_US = 10.0
"""The probe's cut: the least of three ``torch.empty(1)`` above this reads as watched."""

CANDIDATE = f"""
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def watched():
    best = 1.0
    for _ in range(3):
        t0 = time.perf_counter()
        torch.empty(1)
        best = min(best, time.perf_counter() - t0)
    return best * 1e6 > {THRESHOLD_US}


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        if watched() == WRONG_WHEN_WATCHED:
            add_kernel[(triton.cdiv(n, 1024),)](x, x, out, n, BLOCK=1024)  # 2x: wrong
        return out
"""


def probe_us() -> float:
    import torch

    t0 = time.perf_counter()
    torch.empty(1)
    return (time.perf_counter() - t0) * 1e6


def in_process(repeats: int) -> dict[str, dict[str, float]]:
    import torch

    from upskills.verify.guards import LaunchState, OpLog, make_op_recorder
    from upskills.verify.shadow_ops import shadow_profile

    got: dict[str, list[float]] = {"bare": [], "recorder": [], "recorder_and_shadow": []}
    for _ in range(repeats):
        got["bare"].append(probe_us())
        with torch.no_grad(), make_op_recorder(OpLog(), LaunchState()):
            got["recorder"].append(probe_us())
        with torch.no_grad(), shadow_profile() as shadow:
            with make_op_recorder(OpLog(), LaunchState(), mark=shadow.mark):
                got["recorder_and_shadow"].append(probe_us())
    out = {}
    for name, values in got.items():
        values.sort()
        out[name] = {
            "min_us": round(values[0], 2),
            "median_us": round(statistics.median(values), 2),
            "p99_us": round(values[int(0.99 * len(values))], 2),
            f"share_above_{THRESHOLD_US:g}us": round(
                sum(v > THRESHOLD_US for v in values) / len(values), 4
            ),
        }
    return out


def in_verifier() -> dict[str, dict[str, object]]:
    from upskills.tasks import load_task
    from upskills.verify import CheckOptions, Verifier

    task = load_task("vector_add")
    out: dict[str, dict[str, object]] = {}
    with Verifier("cpu", CheckOptions(seeds=3, timeout_s=300)) as verifier:
        for name, flag in (("wrong_when_watched", "True"), ("wrong_when_unwatched", "False")):
            verdict = verifier.check(task, CANDIDATE.replace("WRONG_WHEN_WATCHED", flag))
            out[name] = {"passed": verdict.passed, "message": verdict.message}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    report = {"threshold_us": THRESHOLD_US, "probe": in_process(args.repeats)}
    report["verifier_cpu"] = in_verifier()
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
