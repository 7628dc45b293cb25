"""Work units for the executor tests: known-good and known-bad kernels of CPU-checkable tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

KERNELS = Path(__file__).parent.parent / "kernels"


def make_units() -> list:
    """Seven units with distinct expected outcomes: pass, mismatch, runtime, syntax, guard."""
    from upskills.executor import WorkUnit
    from upskills.tasks import load_task
    from upskills.verify import CheckOptions

    # one fixed check seed: both executors must then judge every unit identically
    options = CheckOptions(seeds=1, timing=False, baselines=False, seed=20261130)
    files = {
        "softmax_rows": ["good/softmax_rows.py", "bad/softmax_rows__no_load_mask.py"],
        "row_sum_fp16": ["good/row_sum_fp16.py", "bad/row_sum_fp16__drops_tail.py"],
        "transpose_2d": ["good/transpose_2d.py"],
    }
    units = []
    for task_name, paths in files.items():
        task = load_task(task_name)
        for rel in paths:
            source = (KERNELS / rel).read_text()
            units.append(WorkUnit(key=Path(rel).stem, task=task, candidate=source, options=options))
    task = load_task("transpose_2d")
    units.append(WorkUnit(key="syntax", task=task, candidate="def (:\n", options=options))
    cheat = (
        "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.transpose(x, 0, 1).contiguous()\n"
    )
    units.append(WorkUnit(key="no-own-kernel", task=task, candidate=cheat, options=options))
    return units


@pytest.fixture(scope="session")
def units() -> list:
    """The shared units."""
    return make_units()


@pytest.fixture(scope="session")
def local_results(units) -> dict:
    """Verdicts of the local executor (one warm in-process worker) on ``units``, by key."""
    from upskills.executor.local import LocalExecutor

    with LocalExecutor("cpu") as ex:
        return {r.key: r for r in ex.run(units)}
