"""Build test cases from tasks: the traces' tasks (train) and every other task (held-out).

For each task there is a case on all of its CPU-checkable and main variants, and a ``-ragged``
case on its ragged variants only. The split is decided by content hash: a task whose hash fed
any skill in this distillation is ``train``; every other task is ``heldout``, so lift is never
measured on a skill's own examples. Dtype coverage comes from the suite itself, which holds the
same computation in several dtypes as separate tasks (``row_sum``/``row_sum_fp16``); each case
carries ``dtype:<name>`` tags so a run can select by dtype.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from upskills.cases.model import TestCase
from upskills.prompts import load_prompt
from upskills.tasks.model import ShapeVariant, Task

CASE_PROMPT = "distill_case"
"""Package prompt the student's prompt is rendered from."""


def _describe(variants: Sequence[ShapeVariant]) -> str:
    parts = []
    for v in variants:
        sizes = ", ".join(f"{k}={val}" for k, val in sorted(v.globals.items()))
        parts.append(f"`{v.name}`" + (f" ({sizes})" if sizes else ""))
    return "; ".join(parts)


def case_prompt(task: Task, variants: Sequence[ShapeVariant]) -> tuple[str, str]:
    """The prompt a student sees for ``task`` on ``variants``, and the template's hash."""
    prompt = load_prompt(CASE_PROMPT)
    text = prompt.render(
        task_name=task.name,
        statement=task.statement,
        source=task.source.rstrip(),
        variants=_describe(variants),
    )
    return text, prompt.sha256


def cases_for_task(
    task: Task,
    split: str,
    *,
    origin: Iterable[str] = ("builtin",),
    techniques: Iterable[str] = (),
    known_good: str | None = None,
) -> list[TestCase]:
    """The cases of one task: all judged variants, and ragged variants alone when it has any."""
    variants = task.all_variants()
    judged = [v for v in variants if v.cpu or v.main]
    ragged = [v for v in variants if v.ragged]
    tags = sorted(
        {*task.tags, *(f"dtype:{d}" for d in task.dtypes), *(f"technique:{t}" for t in techniques)}
    )
    groups: list[tuple[str, list[ShapeVariant], bool]] = [(task.name, judged, False)]
    if ragged:
        groups.append((f"{task.name}-ragged", ragged, True))
    cases = []
    for case_id, vs, is_ragged in groups:
        prompt, prompt_hash = case_prompt(task, vs)
        cases.append(
            TestCase(
                id=case_id,
                task=task.name,
                task_hash=task.hash,
                task_source=task.source,
                statement=task.statement,
                prompt=prompt,
                prompt_sha256=prompt_hash,
                variants=[v.name for v in vs],
                task_variants=list(task.variants),
                task_tags=list(task.tags),
                ragged=is_ragged,
                dtypes=list(task.dtypes),
                atol=task.atol,
                rtol=task.rtol,
                tags=tags + (["shape:ragged"] if is_ragged else []),
                origin=sorted(origin),
                split="train" if split == "train" else "heldout",
                known_good=known_good,
            )
        )
    return cases


def build_cases(
    tasks: Sequence[Task],
    fed: Mapping[str, Sequence[str]],
    *,
    techniques: Mapping[str, Sequence[str]] | None = None,
    known_good: Mapping[str, str] | None = None,
) -> list[TestCase]:
    """Cases for ``tasks``, split by whether their hash fed a skill.

    Args:
        tasks: every task to build cases for (the built-in suite plus traced external tasks).
        fed: task hash -> trace ids of the selected traces that fed the skills.
        techniques: task hash -> techniques the traces' final kernels used (for tags).
        known_good: task hash -> a kernel that passed (a trace's final kernel).

    Returns:
        Cases sorted by (split, id).
    """
    techniques = techniques or {}
    known_good = known_good or {}
    cases: list[TestCase] = []
    for task in sorted(tasks, key=lambda t: (t.name, t.hash)):
        traces = fed.get(task.hash)
        cases += cases_for_task(
            task,
            "train" if traces else "heldout",
            origin=[f"trace:{t}" for t in traces] if traces else ["builtin"],
            techniques=techniques.get(task.hash, ()),
            known_good=known_good.get(task.hash),
        )
    return sorted(cases, key=lambda c: (c.split, c.id))
