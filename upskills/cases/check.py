"""Prove a case solvable: a known-good kernel passes the verifier on the case's variants.

A case with a ``known_good`` kernel (or a kernel file supplied for its task) is checked with
``upskills.verify.check`` on the case's variants (on CPU, only the CPU-checkable ones). A case
without one falls back to running the reference itself on every variant through
``upskills.tasks.runtime`` and checking that it is deterministic and finite: that proves the
task runs, not that a kernel exists, and the result says so (``method='reference'``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def plan_case(case: TestCase, device: str, kernel: str | Path | None = None) -> CaseCheck | Any:
    """What checking ``case`` takes: a settled CaseCheck, or a verifier WorkUnit keyed by its id.

    Args:
        case: the case.
        device: ``cpu`` or ``cuda`` (resolved).
        kernel: a known-good kernel (source or path) overriding ``case.known_good``.

    Returns:
        A CaseCheck when no kernel needs judging (a bad case, or the reference fallback, which
        runs here), else the ``upskills.executor.WorkUnit`` for the known-good kernel.
    """
    task = case.to_task()
    if task.hash != case.task_hash:
        return CaseCheck(case.id, False, "task", "task source/variants do not match task_hash")
    variants = _variants(case, device)
    if not variants:
        return CaseCheck(case.id, False, "task", f"no variant of this case runs on {device}")
    source = kernel if kernel is not None else case.known_good
    if source is None:
        return _check_reference(case, device, variants)
    from upskills.executor import WorkUnit
    from upskills.verify import CheckOptions
    from upskills.verify.verifier import resolve_candidate

    options = CheckOptions(variants=variants, timing=False, baselines=False, seeds=1)
    text = resolve_candidate(source)[0]
    return WorkUnit(key=case.id, task=task, candidate=text, options=options)


def _from_verdict(case_id: str, verdict: Any, variants: list[str] | None) -> CaseCheck:
    message = verdict.message if not verdict.passed else f"known-good kernel passes {variants}"
    return CaseCheck(case_id, verdict.passed, "kernel", message)


def check_cases(
    cases: list[TestCase],
    executor: Any,
    kernels: dict[str, str | Path] | None = None,
) -> Iterator[CaseCheck]:
    """Check many cases; their known-good kernels are judged on ``executor`` in parallel.

    Args:
        cases: the cases (unique ids).
        executor: an ``upskills.executor.Executor`` (its device is used throughout).
        kernels: per case id, a known-good kernel overriding the case's own.

    Yields:
        One CaseCheck per case: settled ones first, then kernel checks as they complete.
    """
    units = []
    for case in cases:
        plan = plan_case(case, executor.device, (kernels or {}).get(case.id))
        if isinstance(plan, CaseCheck):
            yield plan
        else:
            units.append(plan)
    by_key = {u.key: u for u in units}
    for result in executor.run(units):
        yield _from_verdict(result.key, result.verdict, by_key[result.key].options.variants)


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
    device = resolve_device(device)
    plan = plan_case(case, device, kernel)
    if isinstance(plan, CaseCheck):
        return plan
    from upskills.verify import check

    verdict = check(plan.task, plan.candidate, device=device, options=plan.options)
    return _from_verdict(case.id, verdict, plan.options.variants)
