"""Test helper: execute a task's reference the way the verifier's runtime does.

The module is executed from its source, its globals re-bound to the variant's values, and
``get_init_inputs()``, ``Model(...)`` and ``get_inputs()`` run after ``torch.manual_seed(seed)``
with ``torch.device(device)`` as the default device.
"""

from __future__ import annotations

import torch

from upskills.tasks import ShapeVariant, Task


def build(task: Task, variant: ShapeVariant, seed: int, device: str = "cpu"):
    namespace: dict = {"__name__": f"task_{task.name}"}
    exec(compile(task.source, f"<task {task.name}>", "exec"), namespace)
    namespace.update(variant.globals)
    torch.manual_seed(seed)
    with torch.device(device):
        init_inputs = namespace["get_init_inputs"]()
        model = namespace["Model"](*init_inputs)
        inputs = namespace["get_inputs"]()
    return model, inputs


def run(task: Task, variant: ShapeVariant, seed: int, device: str = "cpu"):
    model, inputs = build(task, variant, seed, device)
    with torch.no_grad():
        return model(*inputs), inputs, model
