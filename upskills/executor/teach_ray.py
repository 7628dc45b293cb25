"""Teacher sessions on Ray: one task per Ray task, in parallel, one GPU each.

Each remote task runs the ordinary ``teach`` for one task into a scratch folder on its node and
returns the finished trace's text; the driver writes ``<out>/<task>.jsonl`` as each arrives (a
trace is written whole, atomically), so a killed driver keeps every trace already returned and a
rerun skips them. What is lost with a node is only the session it was running, which Ray runs
again (system failures are retried). Nodes need the providers' API keys in their environment:
keys are never shipped, so they never reach a trace or Ray's logs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from upskills.executor.ray_executor import connect, import_ray


def _teach_one(
    task: Any,
    teacher_spec: str,
    config: Any,
    provider_options: dict[str, Any],
    skills: Sequence[Any],
    retry_errors: bool,
) -> str:
    """Run ``teach`` for one task on this node; the trace's text."""
    from upskills.agent.teach import teach

    with tempfile.TemporaryDirectory(prefix="upskills-teach-") as tmp:
        (path,) = teach(
            [task],
            teacher_spec,
            tmp,
            config,
            provider_options=provider_options,
            skills=skills,
            progress=False,
            retry_errors=retry_errors,
        )
        return path.read_text(encoding="utf-8")


def _cluster_device(ray: Any, device: str) -> str:
    if device != "auto":
        return "cuda" if device.startswith("cuda") else device
    return "cuda" if ray.cluster_resources().get("GPU", 0) >= 1 else "cpu"


def teach_on_ray(
    task_refs: Sequence[str | Path | Any],
    teacher_spec: str,
    out_dir: str | Path,
    config: Any,
    *,
    provider_options: dict[str, Any] | None = None,
    skills: Sequence[Any] = (),
    retry_errors: bool = False,
    address: str | None = None,
    on_task: Callable[[str, Path, str], None] | None = None,
) -> list[Path]:
    """Like ``upskills.agent.teach.teach``, with the tasks spread over a Ray cluster.

    Args:
        task_refs: tasks, built-in names or KernelBench-format files.
        teacher_spec: provider spec (``anthropic/...``, ``mock/script.json``).
        out_dir: folder for the traces (``<task>.jsonl``); finished ones are skipped.
        config: the AgentConfig; ``device: auto`` means cuda when the cluster has GPUs.
        provider_options: options for ``get_provider``.
        skills: SkillPacks to attach.
        retry_errors: run again the tasks whose trace ended with outcome ``error``.
        address: Ray cluster address (None: a local instance).
        on_task: called with (task name, trace path, outcome or ``skipped``) as each ends.

    Returns:
        The trace paths, one per task, in order.
    """
    from upskills.agent.teach import finished_trace
    from upskills.tasks import Task, load_task
    from upskills.trace import read_trace

    ray = import_ray()
    owns = connect(address)
    try:
        tasks = [t if isinstance(t, Task) else load_task(t) for t in task_refs]
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {t.name: out / f"{t.name}.jsonl" for t in tasks}
        todo = [t for t in tasks if not finished_trace(paths[t.name], retry_errors)]
        for t in tasks:
            if on_task is not None and t not in todo:
                on_task(t.name, paths[t.name], "skipped")
        device = _cluster_device(ray, config.device)
        remote = ray.remote(_teach_one).options(
            num_gpus=1 if device == "cuda" else 0, num_cpus=0 if device == "cuda" else 1
        )
        config = config.model_copy(update={"device": device})
        refs = {
            remote.remote(t, teacher_spec, config, provider_options or {}, skills, retry_errors): t
            for t in todo
        }
        while refs:
            (ref,), _ = ray.wait(list(refs), num_returns=1)
            task = refs.pop(ref)
            path = paths[task.name]
            if path.exists():  # an unfinished trace from an earlier run, set aside
                path.rename(path.with_name(path.name + ".partial"))
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(ray.get(ref), encoding="utf-8")
            tmp.replace(path)
            if on_task is not None:
                end = read_trace(path).end
                on_task(task.name, path, end.outcome if end else "missing")
        return [paths[t.name] for t in tasks]
    finally:
        if owns:
            ray.shutdown()
