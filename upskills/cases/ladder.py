"""The case ladder: choose, fill, repair and write cases built from verified kernels.

For each task with a kernel that passes the verifier, single-line mutants of that kernel
(``upskills.cases.mutate``: a dropped mask, an off-by-one bound, a floor instead of ``cdiv``,
a wrong reduction axis, no max-subtraction, fp16 accumulation...) are judged by the verifier,
and only the ones that *fail* are kept. Every label is the verifier's:

- ``choose``: at one line, the verified line and the failing mutants' lines; the student's
  log-likelihood of each line, after the prompt and the shared kernel prefix, picks one.
  Chance is 1/k.
- ``fill``: the kernel with that line removed; the student's line is spliced back and judged.
- ``repair``: a failing mutant and the verifier's message; the student's module is judged.
- ``write``: the whole kernel from the task alone (the plain case).

It does not invent kernels: a task with no verified kernel gets only its ``write`` case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from upskills.cases.family import family_hash
from upskills.cases.model import FILL_MARKER, Choice, TestCase
from upskills.cases.mutate import Mutant, mutants
from upskills.prompts import load_prompt
from upskills.tasks.model import Task

Judge = Callable[[Task, str, list[str]], Any]
"""(task, kernel source, variant names) -> Verdict."""


@dataclass
class LadderConfig:
    """How many cases of each rung a task yields."""

    choose_per_task: int = 1
    """``choose`` cases per task (at distinct lines; lines with more failing mutants first)."""
    max_choices: int = 4
    """Most candidate lines of one ``choose`` case (k, correct line included)."""
    rungs: Sequence[str] = field(default_factory=lambda: ("choose", "fill", "repair", "write"))
    """Rungs to build."""


def cpu_variants(task: Task) -> list[str]:
    """Variants the CPU verifier judges a ladder label on."""
    return [v.name for v in task.all_variants() if v.cpu]


def _message(verdict: Any) -> str:
    err = verdict.error_class
    text = f"{getattr(err, 'value', err)}: {verdict.message}" if err else verdict.message
    return text[:600]


def _base(task: Task, case_id: str, rung: str, prompt: str, prompt_hash: str) -> dict[str, Any]:
    return {
        "id": case_id,
        "task": task.name,
        "task_hash": task.hash,
        "task_source": task.source,
        "statement": task.statement,
        "prompt": prompt,
        "prompt_sha256": prompt_hash,
        "variants": cpu_variants(task),
        "task_variants": list(task.variants),
        "task_tags": list(task.tags),
        "dtypes": list(task.dtypes),
        "atol": task.atol,
        "rtol": task.rtol,
        "tags": sorted({*task.tags, *(f"dtype:{d}" for d in task.dtypes), f"rung:{rung}"}),
        "rung": rung,
        "family": family_hash(task.source),
    }


def _render(name: str, task: Task, **extra: str) -> tuple[str, str]:
    prompt = load_prompt(name)
    text = prompt.render(
        task_name=task.name, statement=task.statement, source=task.source.rstrip(), **extra
    )
    return text, prompt.sha256


def ladder_for_task(
    task: Task,
    kernel: str,
    judge: Judge,
    split: str,
    config: LadderConfig | None = None,
    origin: Sequence[str] = ("builtin",),
) -> list[TestCase]:
    """The ladder cases of one task from one kernel (none when the kernel fails).

    Args:
        task: the task.
        kernel: a kernel believed correct; the verifier must pass it.
        judge: the verifier call (CPU: the Triton interpreter).
        split: ``train`` or ``heldout`` for every case built.
        config: rungs and sizes.
        origin: where the kernel came from (``trace:<id>``, ``file:<path>``).

    Returns:
        Cases of the requested rungs; the ``write`` case is built by ``cases_for_task``.
    """
    config = config or LadderConfig()
    variants = cpu_variants(task)
    kernel = strip_module_docstring(kernel).rstrip("\n") + "\n"
    if not judge(task, kernel, variants).passed:
        return []
    by_line: dict[int, list[tuple[Mutant, str]]] = {}
    for m in mutants(kernel):
        verdict = judge(task, m.source, variants)
        if not verdict.passed:
            by_line.setdefault(m.line, []).append((m, _message(verdict)))
    lines = kernel.split("\n")
    ranked = sorted(by_line, key=lambda i: (-len({w.wrong_line for w, _ in by_line[i]}), i))
    cases: list[TestCase] = []
    common = {"split": split, "origin": sorted(origin), "known_good": kernel}
    for n, i in enumerate(ranked[: config.choose_per_task]):
        prefix = "\n".join(lines[:i]) + "\n"
        suffix = "\n".join(lines[i + 1 :])
        wrong: dict[str, Choice] = {}
        for m, msg in by_line[i]:
            wrong.setdefault(
                m.wrong_line, Choice(line=m.wrong_line, correct=False, bug=m.bug, message=msg)
            )
        choices = [Choice(line=lines[i], correct=True)] + list(wrong.values())
        choices = choices[: config.max_choices]
        first, _ = by_line[i][0]
        if "choose" in config.rungs:
            text, h = _render("case_choose", task)
            cases.append(
                TestCase(
                    **_base(task, f"{task.name}-choose{n}", "choose", text, h),
                    **common,
                    choices=choices,
                    kernel_prefix=prefix,
                    kernel_suffix=suffix,
                )
            )
        if n > 0:
            continue
        if "fill" in config.rungs:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            template = prefix + indent + FILL_MARKER + "\n" + suffix
            text, h = _render("case_fill", task, marker=FILL_MARKER, template=template.rstrip())
            cases.append(
                TestCase(
                    **_base(task, f"{task.name}-fill", "fill", text, h),
                    **common,
                    choices=[Choice(line=lines[i], correct=True)],
                    kernel_prefix=prefix,
                    kernel_suffix=suffix,
                    bug=first.bug,
                )
            )
        if "repair" in config.rungs:
            m, msg = by_line[i][0]
            text, h = _render("case_repair", task, kernel=m.source.rstrip(), message=msg)
            cases.append(
                TestCase(
                    **_base(task, f"{task.name}-repair", "repair", text, h), **common, bug=m.bug
                )
            )
    return cases


def strip_module_docstring(source: str) -> str:
    """``source`` without its module docstring (it often names the very technique probed)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    first = tree.body[0] if tree.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.end_lineno is not None
    ):
        lines = source.split("\n")
        return "\n".join(lines[first.end_lineno :]).lstrip("\n")
    return source


def kernel_sources(paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Candidate verified kernels by task name: ``<task>.py`` files and traces' best kernels.

    Args:
        paths: folders or files; ``*.py`` files are named after their task, ``*.jsonl`` traces
            contribute the ``best_kernel_source`` of their ``run_end`` event.

    Returns:
        task name -> (kernel source, origin). The first source found for a task wins.
    """
    import json
    from pathlib import Path

    found: dict[str, tuple[str, str]] = {}
    files: list[Path] = []
    for ref in paths:
        p = Path(ref)
        files += sorted(p.rglob("*.py")) + sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
    for f in files:
        if f.suffix == ".py" and f.stem not in found and not f.stem.startswith("_"):
            found[f.stem] = (f.read_text(encoding="utf-8"), f"file:{f}")
        elif f.suffix == ".jsonl":
            task, best, trace = None, None, None
            for line in f.read_text(encoding="utf-8").splitlines():
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if ev.get("event") == "run_start":
                    task, trace = ev.get("task"), ev.get("trace_id")
                elif ev.get("event") == "run_end" and ev.get("best_kernel_source"):
                    best = ev["best_kernel_source"]
            if task and best and task not in found:
                found[task] = (best, f"trace:{trace}")
    return found


def build_ladder(
    tasks: Sequence[Task],
    kernels: dict[str, tuple[str, str]],
    judge: Judge,
    fed_families: set[str],
    config: LadderConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[TestCase]:
    """Ladder cases for ``tasks``: held-out unless the task's family fed the skill.

    Args:
        tasks: tasks to build for.
        kernels: task name -> (kernel believed correct, origin), see :func:`kernel_sources`.
        judge: the verifier call.
        fed_families: family hashes of the tasks that fed the skill(s) under test.
        config: rungs and sizes.
        progress: called with each task name as it starts.

    Returns:
        Cases sorted by id; ``write`` cases for every task, other rungs where a kernel passed.
    """
    from upskills.cases.generate import cases_for_task

    config = config or LadderConfig()
    out: list[TestCase] = []
    for task in sorted(tasks, key=lambda t: t.name):
        if progress is not None:
            progress(task.name)
        fam = family_hash(task.source)
        split = "train" if fam in fed_families else "heldout"
        if "write" in config.rungs:
            write = cases_for_task(task, split)[0]
            out.append(
                write.model_copy(
                    update={"family": fam, "tags": sorted({*write.tags, "rung:write"})}
                )
            )
        if task.name in kernels:
            source, origin = kernels[task.name]
            out += ladder_for_task(task, source, judge, split, config, origin=[origin])
    return sorted(out, key=lambda c: c.id)


def cpu_judge() -> tuple[Judge, Callable[[], None]]:
    """A judge on the CPU verifier (Triton interpreter, one seed, no timing) and its closer."""
    from upskills.verify import CheckOptions, Verifier

    verifier = Verifier(device="cpu")

    def judge(task: Task, source: str, variants: list[str]) -> Any:
        options = CheckOptions(seeds=1, timing=False, baselines=False, variants=variants)
        return verifier.check(task, source, options)

    return judge, verifier.close
