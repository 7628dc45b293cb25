"""Run one forward of a candidate on CUDA, bracketed for a profiler (``ncu``, ``nsys``).

    python -m upskills.verify.ncu_driver TASK.json CANDIDATE.py

Builds the task's main variant on CUDA (seed 0), warms the candidate up (compilation,
autotuning), then runs one forward between ``cudaProfilerStart`` and ``cudaProfilerStop`` so a
profiler started with ``--profile-from-start off`` sees only that call. It judges nothing: it
is only run on a candidate that already passed the verifier.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

WARMUP = 3
"""Untimed forwards before the profiled one."""


def main(argv: list[str]) -> int:
    """Entry point; returns the exit status."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    import torch

    from upskills.tasks import runtime
    from upskills.tasks.model import Task

    task = Task.model_validate_json(Path(argv[0]).read_text(encoding="utf-8"))
    module = runtime.load_reference(task, None)
    init_inputs = runtime.build_init_inputs(module, "cuda", 0)
    inputs = runtime.build_inputs(module, "cuda", 0)
    spec = importlib.util.spec_from_file_location("candidate", argv[1])
    assert spec is not None and spec.loader is not None
    candidate = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = candidate
    spec.loader.exec_module(candidate)
    model = runtime.build_module(candidate.ModelNew, init_inputs, "cuda", 0)
    with torch.no_grad():
        for _ in range(WARMUP):
            model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
