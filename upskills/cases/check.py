"""Prove a case solvable: a known-good kernel passes the verifier on the case's variants.

A case with a ``known_good`` kernel (or a kernel file supplied for its task) is checked with
``upskills.verify.check`` on the case's variants (on CPU, only the CPU-checkable ones). A case
without one falls back to running the reference itself on every variant through
``upskills.tasks.runtime`` and checking that it is deterministic and finite: that proves the
task runs, not that a kernel exists, and the result says so (``method='reference'``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from upskills.cases.model import TestCase
from upskills.core.device import resolve_device


@dataclass
class CaseCheck:
    """Outcome of checking one case."""

    case: str
    passed: bool
    method: str
    message: str


def _variants(case: TestCase, device: str) -> list[str]:
    task = case.to_task()
    by_name = {v.name: v for v in task.all_variants()}
    names = [n for n in case.variants if n in by_name]
    if device == "cpu":
        names = [n for n in names if by_name[n].cpu]
    return names


def _check_reference(case: TestCase, device: str, variants: list[str]) -> CaseCheck:
    import torch

    from upskills.tasks.runtime import build

    task = case.to_task()
    for name in variants:
        outs = []
        for _ in range(2):
            model, inputs, _ = build(task, name, device, seed=0)
            with torch.no_grad():
                out = model(*inputs)
            outs.append(out)
        a, b = outs
        if not isinstance(a, torch.Tensor) or not torch.equal(a, b):
            return CaseCheck(case.id, False, "reference", f"{name}: reference is not deterministic")
        if a.is_floating_point() and not torch.isfinite(a).all():
            return CaseCheck(case.id, False, "reference", f"{name}: reference output is not finite")
    return CaseCheck(case.id, True, "reference", f"reference runs on {', '.join(variants)}")


def check_case(
    case: TestCase, *, device: str = "auto", kernel: str | Path | None = None
) -> CaseCheck:
    """Check that ``case`` is solvable.

    Args:
        case: the case.
        device: ``auto``, ``cpu`` or ``cuda``.
        kernel: a known-good kernel (source or path) overriding ``case.known_good``.

    Returns:
        Whether it passed, how it was checked (``kernel`` or ``reference``) and a message.
    """
    task = case.to_task()
    if task.hash != case.task_hash:
        return CaseCheck(case.id, False, "task", "task source/variants do not match task_hash")
    device = resolve_device(device)
    variants = _variants(case, device)
    if not variants:
        return CaseCheck(case.id, False, "task", f"no variant of this case runs on {device}")
    source = kernel if kernel is not None else case.known_good
    if source is None:
        return _check_reference(case, device, variants)
    from upskills.verify import CheckOptions, check

    options = CheckOptions(variants=variants, timing=False, baselines=False, seeds=1)
    verdict = check(task, source, device=device, options=options)
    message = verdict.message if not verdict.passed else f"known-good kernel passes {variants}"
    return CaseCheck(case.id, verdict.passed, "kernel", message)
