"""Which shapes a check runs: the task's variants, one drawn at random, CPU-sized problems.

- **A random shape per check.** Besides the named variants, every check draws one shape within
  the task's declared ``ranges`` (or, without them, within the span of its variants' sizes),
  nudged off multiples of 16 so masking is exercised; a memorised shape list cannot pass.
- **Real sizes on CPU.** KernelBench's level-1 problems take GiB-scale inputs. Sizes are
  measured on the ``meta`` device (no memory) and, on CPU, the problem's integer size constants
  are halved until its inputs fit :data:`CPU_INPUT_BUDGET`; a problem that cannot be shrunk is
  refused with a message, never run into an allocation error blamed on the candidate.
"""

from __future__ import annotations

import random
import types
from dataclasses import dataclass, field
from typing import Any, TypeGuard, cast

from upskills.tasks.model import ShapeVariant, Task
from upskills.tasks.runtime import load_reference

CPU_INPUT_BUDGET = 48 * 1024 * 1024
"""Bytes of inputs (and parameters) a CPU check builds at most per trial."""

MIN_SIZE = 16
"""Integer globals below this are not sizes (kernel sizes, strides, flags): never changed."""


class ShapeError(Exception):
    """The task cannot run at any size this device allows."""


@dataclass
class PlannedVariant:
    """One shape a check runs."""

    name: str
    """Variant name (``random`` for the drawn one, ``<name>~cpu`` for a shrunk one)."""
    globals: dict[str, Any] = field(default_factory=dict[str, Any])
    """Module globals re-bound before the reference's functions run."""
    drawn: bool = False
    """True for the shape drawn at random for this check."""


def _bytes(values: Any) -> int:
    import torch

    total = 0
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            total += item.numel() * item.element_size()
        elif isinstance(item, list | tuple):
            stack.extend(cast("list[Any] | tuple[Any, ...]", item))
        elif isinstance(item, dict):
            stack.extend(cast(dict[Any, Any], item).values())
        elif isinstance(item, torch.nn.Module):
            stack.extend(list(item.parameters()) + list(item.buffers()))
    return total


def probe(task: Task, base: ShapeVariant, overrides: dict[str, Any]) -> int:
    """Bytes of inputs, init tensors and parameters at these globals, measured on ``meta``.

    Raises:
        ShapeError: The reference rejects these sizes.
    """
    import torch

    module = _module(task, base, overrides)
    try:
        with torch.device("meta"):
            init = list(module.get_init_inputs())
            model = module.Model(*init)
            inputs = list(module.get_inputs())
    except Exception as exc:  # noqa: BLE001 - any failure means these sizes are not valid
        raise ShapeError(f"{type(exc).__name__}: {exc}") from exc
    try:
        with torch.device("meta"), torch.no_grad():
            model(*inputs)
    except NotImplementedError:
        pass  # an op without a meta kernel (data-dependent sizes): validity unknown here
    except Exception as exc:  # noqa: BLE001 - the reference rejects these sizes
        if "meta" not in str(exc).lower() and "data-dependent" not in str(exc).lower():
            raise ShapeError(f"{type(exc).__name__}: {exc}") from exc
    return _bytes(inputs) + _bytes(init) + _bytes(model)


def _module(task: Task, base: ShapeVariant, overrides: dict[str, Any]) -> types.ModuleType:
    module = load_reference(task, base)
    module.__dict__.update(overrides)
    return module


def size_globals(task: Task, base: ShapeVariant) -> dict[str, int]:
    """The integer module globals that look like sizes (>= ``MIN_SIZE``) at this variant."""
    module = load_reference(task, base)
    out: dict[str, int] = {}
    for name, value in module.__dict__.items():
        if name.startswith("_") or isinstance(value, bool) or not isinstance(value, int):
            continue
        if value >= MIN_SIZE:
            out[name] = value
    return out


def shrink_for_cpu(task: Task, base: ShapeVariant) -> PlannedVariant:
    """``base`` as is when it fits the CPU budget, else with its sizes halved until it does.

    Raises:
        ShapeError: Halving every size constant does not get under the budget.
    """
    sizes = dict(base.globals)
    nbytes = probe(task, base, {})
    if nbytes <= CPU_INPUT_BUDGET:
        return PlannedVariant(base.name, dict(base.globals))
    current = {**size_globals(task, base), **{k: v for k, v in sizes.items() if _is_size(v)}}
    start = nbytes
    frozen: set[str] = set()
    for _ in range(64):
        candidates = [k for k, v in current.items() if v >= 2 * MIN_SIZE and k not in frozen]
        if not candidates:
            break
        largest = max(candidates, key=lambda k: current[k])
        trial = {**current, largest: current[largest] // 2}
        try:
            nbytes = probe(task, base, trial)
        except ShapeError:
            frozen.add(largest)  # the reference needs this one as it is
            continue
        current = trial
        if nbytes <= CPU_INPUT_BUDGET:
            return PlannedVariant(f"{base.name}~cpu", {**base.globals, **current})
    raise ShapeError(
        f"task {task.name!r} needs {start / 2**30:.2f} GiB of inputs at variant {base.name!r} "
        f"and its size constants cannot be shrunk under the CPU budget "
        f"({CPU_INPUT_BUDGET // 2**20} MiB); check it with --device cuda"
    )


def _is_size(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= MIN_SIZE


def _ragged(rng: random.Random, lo: int, hi: int) -> int:
    value = rng.randint(lo, hi)
    if value % 16 == 0:
        value = value + 1 if value + 1 <= hi else max(lo, value - 1)
    return value


def ranges_for(task: Task, device: str) -> dict[str, tuple[int, int]]:
    """The ranges a random shape is drawn from: declared, else spanned by the variants."""
    if task.ranges:
        return {k: (int(v[0]), int(v[1])) for k, v in task.ranges.items()}
    eligible = [v for v in task.all_variants() if not v.main and (v.cpu or device != "cpu")]
    out: dict[str, tuple[int, int]] = {}
    variants = task.all_variants()
    names = {k for v in eligible for k, val in v.globals.items() if _is_size(val)}
    for name in names:
        everywhere = {repr(v.globals.get(name)) for v in variants}
        if len(everywhere) == 1:
            continue  # the same in every variant (a head dim, a vocabulary): part of the task
        values = [
            value
            for v in eligible
            if isinstance(value := v.globals.get(name), int) and _is_size(value)
        ]
        lo, hi = min(values), max(values)
        if lo == hi:
            lo = max(MIN_SIZE, lo // 2)
        out[name] = (lo, hi)
    return out


def draw_random(
    task: Task, device: str, rng: random.Random, fallback: PlannedVariant | None
) -> tuple[PlannedVariant | None, str]:
    """One shape drawn within the task's ranges, checked against the reference on ``meta``.

    Args:
        task: The task.
        device: ``cpu`` or ``cuda``.
        rng: The check's random generator (seeded from the check's seed).
        fallback: Without ranges, sizes are drawn between a quarter and half of this variant's.

    Returns:
        ``(variant or None, note)``: None when no valid shape was found in three draws.
    """
    ranges = ranges_for(task, device)
    base = next((v for v in task.all_variants() if not v.main), task.main_variant())
    if not ranges and fallback is not None:
        ranges = {
            k: (max(1, v // 4), max(1, v // 2)) for k, v in fallback.globals.items() if _is_size(v)
        }
        if not ranges:
            sizes = size_globals(task, task.main_variant())
            ranges = {k: (max(1, v // 4), max(1, v // 2)) for k, v in sizes.items()}
        base = task.main_variant()
        base_globals = dict(fallback.globals)
    else:
        base_globals = dict(base.globals)
    if not ranges:
        return None, "no size constants to draw a random shape from"
    note = ""
    for _ in range(3):
        drawn = {k: _ragged(rng, lo, hi) for k, (lo, hi) in sorted(ranges.items())}
        overrides = {**base_globals, **drawn}
        try:
            nbytes = probe(task, base, overrides)
        except ShapeError as exc:
            note = f"the reference rejected a drawn shape ({exc})"
            continue
        if device == "cpu" and nbytes > CPU_INPUT_BUDGET:
            note = "drawn shape over the CPU budget"
            continue
        return PlannedVariant("random", overrides, drawn=True), ""
    return None, note or "no valid shape drawn"
