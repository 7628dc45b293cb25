"""Executing a task's reference: the module, its variant's globals, models and inputs.

A reference is a KernelBench-format module. :func:`load_reference` executes its source into a
fresh module object (never registered in ``sys.modules``) and re-binds the variant's globals;
:func:`build` then creates the model and inputs *on the target device*: ``get_init_inputs()``,
``Model(...)`` and ``get_inputs()`` run with ``torch.device(device)`` as the default device, so
large inputs are never built on the CPU and copied.

Seeding: ``torch.manual_seed(seed)`` runs before ``get_init_inputs()`` and again before
``Model(...)``, so any module built the same way after the same seed (a candidate's
``ModelNew``) draws the same parameters; inputs are drawn after ``torch.manual_seed(
input_seed(seed))``, a different stream, so inputs are not copies of the weights.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from upskills.tasks.model import ShapeVariant, Task

_REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class ReferenceRunError(Exception):
    """The reference module could not be executed or lacks a KernelBench name."""


def input_seed(seed: int) -> int:
    """The seed inputs are drawn with for a trial seeded ``seed`` (distinct from the weights')."""
    return 1_000_003 + 7919 * seed


def find_variant(task: Task, variant: ShapeVariant | str | None) -> ShapeVariant:
    """The task's variant named ``variant`` (None: the main variant)."""
    if variant is None:
        return task.main_variant()
    if not isinstance(variant, str):
        return variant
    for v in task.all_variants():
        if v.name == variant:
            return v
    names = ", ".join(v.name for v in task.all_variants())
    raise KeyError(f"task {task.name!r} has no variant {variant!r} (variants: {names})")


def load_reference(task: Task, variant: ShapeVariant | str | None = None) -> types.ModuleType:
    """Execute the reference source into a fresh module with the variant's globals re-bound.

    Args:
        task: The task whose ``source`` is executed.
        variant: A variant, its name, or None for the main variant.

    Returns:
        The module (not registered in ``sys.modules``).

    Raises:
        ReferenceRunError: The source fails to execute or lacks ``Model``/``get_inputs``/
            ``get_init_inputs``; the message names the task's origin.
    """
    v = find_variant(task, variant)
    filename = f"<reference {task.name}>" if task.origin == "builtin" else str(task.origin)
    module = types.ModuleType(f"upskills_reference_{task.name}")
    module.__file__ = filename
    try:
        code = compile(task.source, filename, "exec")
        exec(code, module.__dict__)  # noqa: S102 - executing the task reference is the point
    except Exception as exc:  # noqa: BLE001 - any error in a reference is a task error
        raise ReferenceRunError(
            f"reference of task {task.name!r} ({filename}) failed to execute: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    missing = [name for name in _REQUIRED if name not in module.__dict__]
    if missing:
        raise ReferenceRunError(
            f"reference of task {task.name!r} ({filename}) does not define {', '.join(missing)}"
        )
    module.__dict__.update(v.globals)
    return module


def build_init_inputs(module: types.ModuleType, device: str, seed: int) -> list[Any]:
    """``get_init_inputs()`` under ``torch.device(device)`` after ``torch.manual_seed(seed)``."""
    import torch

    torch.manual_seed(seed)
    with torch.device(device):
        return list(module.get_init_inputs())


def build_module(cls: Any, init_inputs: list[Any], device: str, seed: int) -> Any:
    """Instantiate ``cls(*init_inputs)`` on ``device`` after ``torch.manual_seed(seed)``."""
    import torch

    torch.manual_seed(seed)
    with torch.device(device):
        model = cls(*init_inputs)
    return model.to(device) if isinstance(model, torch.nn.Module) else model


def build_inputs(module: types.ModuleType, device: str, seed: int) -> list[Any]:
    """``get_inputs()`` under ``torch.device(device)`` after seeding with ``input_seed(seed)``."""
    import torch

    torch.manual_seed(input_seed(seed))
    with torch.device(device):
        return list(module.get_inputs())


def build(
    task: Task, variant: ShapeVariant | str | None, device: str, seed: int
) -> tuple[Any, list[Any], list[Any]]:
    """Build the reference model and one set of inputs on ``device``.

    Args:
        task: The task.
        variant: A variant, its name, or None for the main variant.
        device: Torch device string (``cpu``, ``cuda``, ``cuda:1``).
        seed: Seed of this trial (parameters use it; inputs use ``input_seed(seed)``).

    Returns:
        ``(model, inputs, init_inputs)``.
    """
    module = load_reference(task, variant)
    init_inputs = build_init_inputs(module, device, seed)
    model = build_module(module.Model, init_inputs, device, seed)
    inputs = build_inputs(module, device, seed)
    return model, inputs, init_inputs
