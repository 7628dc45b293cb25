"""Which task a corpus session worked on, and how much work its main variant is.

A session folder embeds its task in ``state.json``, so a task whose file is absent (a KernelBench
problem under the git-ignored ``.kb/``) can still be sized; other traces fall back to
``load_task(name)``. Sizes come from a ``meta``-device build: shapes only, no data, no GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from upskills.tasks.embedded import embedded_task
from upskills.tasks.model import Task
from upskills.trace.reader import TraceFile


def _flat_tensors(obj: Any) -> list[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, list | tuple):
        return [t for x in obj for t in _flat_tensors(x)]
    return []


def _run(task: Any, device: str) -> tuple[list[Any], list[Any], list[Any]]:
    import torch

    from upskills.tasks import runtime

    model, inputs, _ = runtime.build(task, None, device, 0)
    with torch.no_grad(), torch.device(device):
        out = model(*inputs)
    params = list(model.parameters()) + list(model.buffers()) if hasattr(model, "buffers") else []
    return _flat_tensors(inputs), params, _flat_tensors(out)


def task_work(task: Any) -> tuple[int, float | None]:
    """Minimum bytes moved and FLOPs of a task's main variant, from a meta-device build.

    Bytes: every input tensor and parameter read once plus every output written once. FLOPs
    (None unless tagged gemm or attention): gemm ``2 * numel(out) * K`` with ``K`` the last
    dimension of the first input (``2*M*N*K``, times the batch for bmm); attention with q
    ``[B, H, S, D]`` and k ``[B, H, Sk, D]``: ``2 * 2*B*H*S*Sk*D`` (QK^T and PV), halved when
    the task is causal (``causal`` in its name or statement). An op with no meta kernel
    (``bincount``) is run on the CPU instead. A gather (tag ``gather``) reads only the rows it
    gathers, not its whole table: bytes are the indices plus the output, twice (rows read and
    written), so a random gather is not credited with bandwidth it never used.
    """
    try:
        inputs, params, outs = _run(task, "meta")
    except (NotImplementedError, RuntimeError):
        inputs, params, outs = _run(task, "cpu")
    nbytes = sum(t.numel() * t.element_size() for t in inputs + params + outs)
    if "gather" in task.tags:
        index_bytes = sum(t.numel() * t.element_size() for t in inputs if not t.is_floating_point())
        nbytes = index_bytes + 2 * sum(t.numel() * t.element_size() for t in outs)
    flops: float | None = None
    if "gemm" in task.tags:
        flops = 2.0 * outs[0].numel() * inputs[0].shape[-1]
    elif "attention" in task.tags:
        b, h, s, d = inputs[0].shape
        causal = "causal" in task.name or "causal" in task.statement.lower()
        flops = 4.0 * b * h * s * inputs[1].shape[-2] * d / (2 if causal else 1)
    return nbytes, flops


def origin_kind(origin: str) -> str:
    """``kernelbench`` for a KernelBench path, else the origin as is (``builtin``)."""
    return "kernelbench" if "KernelBench" in origin else origin


def resolve_task(traces: Sequence[TraceFile], notes: list[str]) -> Task | None:
    """The last session's embedded task, else ``load_task`` by name; problems go to ``notes``."""
    from upskills.tasks import load_task

    for trace in reversed(traces):
        try:
            task = embedded_task(trace.path)
        except ValueError as exc:
            notes.append(str(exc))
            continue
        if task is not None:
            return task
    name = traces[-1].start.task if traces[-1].start else ""
    try:
        return load_task(name)
    except Exception as exc:  # noqa: BLE001 - a task that no longer loads is reported, not fatal
        notes.append(f"task not loadable: {exc}")
        return None
