"""``teach``: run a teacher model over tasks, one trace per task, resumable.

Each task's trace is ``<out_dir>/<task>.jsonl``. A task whose trace already ends with
``run_end`` is skipped, so re-running the same command resumes. A trace without ``run_end`` (a
killed run) or ending ``aborted`` (interrupted: Ctrl-C, SIGTERM) is kept beside it as
``<task>.jsonl.partial`` (not read as a trace) and the task runs again from the start. A failure
on one task (API error, crash) is recorded in its trace as ``run_end`` with outcome ``error`` and
the next task goes on; ``retry_errors`` runs such tasks again on the next invocation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from upskills.agent.config import AgentConfig
from upskills.agent.loop import check_options, run_agent
from upskills.tasks.model import Task


def finished_trace(path: Path, retry_errors: bool = False) -> bool:
    """Whether ``path`` ended for good: ``run_end``, not ``aborted``, not ``error`` if retrying."""
    if not path.is_file():
        return False
    from upskills.trace import read_trace

    end = read_trace(path).end
    if end is None or end.outcome == "aborted":
        return False
    return not (retry_errors and end.outcome == "error")


def _set_aside(path: Path) -> Path:
    """Move an unfinished trace to ``<name>.partial`` (``.partial.N`` if taken)."""
    target = path.with_name(path.name + ".partial")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.partial.{n}")
        n += 1
    path.rename(target)
    return target


def teach(
    task_refs: Sequence[str | Path | Task],
    teacher_spec: str,
    out_dir: str | Path,
    config: AgentConfig | None = None,
    *,
    provider_options: dict[str, Any] | None = None,
    provider: Any = None,
    verifier: Any = None,
    skills: Sequence[Any] = (),
    progress: bool = True,
    on_task: Callable[[str, Path, str], None] | None = None,
    retry_errors: bool = False,
) -> list[Path]:
    """Run a teacher on each task, writing ``<out_dir>/<task>.jsonl``.

    Args:
        task_refs: Tasks, built-in names or KernelBench-format files (all loaded first, so a bad
            reference fails before any model call).
        teacher_spec: provider spec, e.g. ``anthropic/claude-sonnet-4-5`` or ``mock/script.json``.
        out_dir: folder for the traces.
        config: budgets, device, sampling parameters (defaults when None).
        provider_options: options for ``get_provider`` (``base_url``, ...).
        provider: an already built provider (then ``teacher_spec`` is only a label).
        verifier: a warm ``Verifier`` to use (one is created and closed otherwise).
        skills: SkillPacks to attach (``config.skills_mode`` says how).
        progress: show a progress bar on stderr.
        on_task: called after each task with (task name, trace path, outcome or ``skipped``).
        retry_errors: run again the tasks whose trace ended with outcome ``error`` (the old
            trace is kept as ``.partial``).

    Returns:
        The trace paths, one per task, in order (skipped tasks included).
    """
    from upskills.tasks import load_task

    config = config or AgentConfig(role="teacher")
    tasks = [t if isinstance(t, Task) else load_task(t) for t in task_refs]
    names = [t.name for t in tasks]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"tasks given twice: {', '.join(dupes)} (one trace per task name)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{t.name}.jsonl" for t in tasks]
    todo = [
        (t, p) for t, p in zip(tasks, paths, strict=True) if not finished_trace(p, retry_errors)
    ]
    for t, p in zip(tasks, paths, strict=True):
        if on_task is not None and not any(p == q for _, q in todo):
            on_task(t.name, p, "skipped")
    if not todo:
        return paths
    if provider is None:
        from upskills.llm import get_provider

        provider = get_provider(teacher_spec, **(provider_options or {}))
    from tqdm import tqdm

    from upskills.verify import Verifier

    own = verifier is None
    if own:
        verifier = Verifier(device=config.device, options=check_options(config))
    bar = tqdm(total=len(todo), desc="teach", unit="task", disable=not progress)
    try:
        for task, path in todo:
            bar.set_postfix_str(task.name)
            if path.exists():
                _set_aside(path)
            end = run_agent(task, provider, config, path, skills, verifier=verifier)
            bar.update(1)
            if on_task is not None:
                on_task(task.name, path, end.outcome)
    finally:
        bar.close()
        if own:
            verifier.close()
    return paths
