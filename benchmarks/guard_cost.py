"""What do guard (d)'s process-state checks cost, each time they run? (CPU, in process)

    python benchmarks/guard_cost.py --out guard_cost.json

The candidate's process compares its state with a snapshot taken before the candidate's
import (``docs/design/verifier.md``, guard (d)). Some comparisons run at every call of
``forward``, timed calls included, so their cost is host time between launches; others run
only after the import, each trial and the timing. This times each piece where it runs, in a
process that has imported torch and triton as the candidate's process has:

- ``mode_depths``: the mode stacks, the thread's dispatch keys, the interpreter's hooks and
  interval timers (twice per call of ``forward``);
- ``signal_handlers``: every signal's Python handler (after the import and each trial);
- ``collect_garbage``: a full pass of the cyclic collector over a frozen heap (before each
  trial, timing request and bulk run), and a young pass (before each timed call); the heap is
  frozen first (``quiet_collector``), as in the candidate's process;
- ``dispatch_table.snapshot`` and ``dispatch_table.changed``: a hash of every op's dispatcher
  entry (once before the import; after the import, the trials and the timing);
- a trial's forward (eight allocation and view ops on a 1M-element tensor, as an honest
  forward makes around its launches) under the op recorder alone, and under the recorder with
  its marks and the shadow profile (``verify/shadow_ops.py``, since 2026-12-05), its analysis
  included: the difference is what the shadow profile adds to each trial.

Prints a table of medians (µs) and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _time(fn: Callable[[], Any], repeats: int) -> dict[str, float]:
    fn()  # first use: imports, lazy set-up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return {"median_us": statistics.median(samples), "min_us": min(samples), "n": repeats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()

    import torch
    import triton

    from upskills.verify import dispatch_table
    from upskills.verify.guards import LaunchState, OpLog, make_op_recorder
    from upskills.verify.modes import (
        collect_garbage,
        mode_depths,
        quiet_collector,
        signal_handlers,
    )
    from upskills.verify.shadow_ops import shadow_profile

    x = torch.randn(1 << 20)

    def forward() -> None:
        for _ in range(4):
            torch.empty_like(x).view(-1)

    def recorded() -> None:
        with torch.no_grad(), make_op_recorder(OpLog(), LaunchState()):
            forward()

    def shadowed() -> None:
        with torch.no_grad(), shadow_profile() as shadow:
            with make_op_recorder(OpLog(), LaunchState(), mark=shadow.mark):
                forward()
        assert not shadow.unseen()

    table = dispatch_table.snapshot()
    quiet_collector()  # as the candidate's process: torch's objects frozen, the collector off
    slow = max(5, args.repeats // 20)  # the dispatcher's pieces take ~0.1 s each
    rows = {
        "mode_depths (each forward, x2)": _time(mode_depths, args.repeats),
        "signal_handlers (each trial)": _time(signal_handlers, args.repeats),
        "collect_garbage (each trial)": _time(collect_garbage, args.repeats),
        "collect_garbage young (each timed call)": _time(
            lambda: collect_garbage(young=True), args.repeats
        ),
        "dispatch_table.snapshot (once)": _time(dispatch_table.snapshot, slow),
        "dispatch_table.changed (x3 a check)": _time(lambda: dispatch_table.changed(table), slow),
        "forward, op recorder (each trial)": _time(recorded, args.repeats),
        "forward, recorder + shadow profile (each trial)": _time(shadowed, args.repeats),
    }
    import gc

    gc.unfreeze()  # frozen objects outlive the exit, and triton's bindings then report leaks
    gc.enable()
    width = max(map(len, rows))
    print(f"{'piece':<{width}}  median_us  min_us")
    for name, row in rows.items():
        print(f"{name:<{width}}  {row['median_us']:9.1f}  {row['min_us']:6.1f}")
    result = {
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "ops_in_dispatcher": len(table.ops),
        "pieces": rows,
    }
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
