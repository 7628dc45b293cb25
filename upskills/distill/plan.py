"""What an ablation still has to judge, found without judging anything.

``upskills distill TRACES --ablate --plan`` answers, before any GPU time is spent, how many
kernels ``upskills distill --ablate --device cuda`` would build and time on a given GPU, and
which. It runs the distiller's own episode walk (the same split into changes, the same
"one episode, one GPU" rule over the same caches) with a judge that records what it is asked
and judges nothing. The caches are only read: nothing is appended to them, and the packs the
walk writes go to a temporary folder.

The recorder loads each task as the verifier would (``load_task``), so an episode whose task
does not load here (a KernelBench file not checked out, a session that recorded no origin) is
left out of the plan as the ablation would leave it out, and named with the reason.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from upskills.distill.ablate import PRESCREEN_GPU, AblationCache, Measurement, kernel_hash

NOT_JUDGED = "not-judged"
"""The error class of what the recording judge hands back (kept in memory only)."""


@dataclass(frozen=True)
class PendingKernel:
    """One kernel the ablation still has to judge."""

    task: str
    """What the judge loads: a built-in task's name or the file a task came from."""
    task_hash: str
    source: str

    @property
    def task_name(self) -> str:
        """The task's name: a file's stem for a task loaded from a file."""
        return Path(self.task).stem if self.task.endswith(".py") else self.task

    @property
    def kernel_hash(self) -> str:
        """sha256 (16 hex) of the source, the cache's key for it."""
        return kernel_hash(self.source)

    @property
    def backend(self) -> str:
        """``cuda`` for a ``load_inline`` extension (built for tens of seconds), else Triton."""
        return "cuda" if "load_inline" in self.source else "triton"


class PlanRecorder:
    """A judge that judges nothing: it records each kernel the distiller asks about."""

    name = "plan-recorder"
    device = "cuda"

    def __init__(self, gpu: str | None = None) -> None:
        self.gpu = gpu
        """The GPU the ablation will run on (None: a kernel any GPU judged counts as judged)."""
        self.asked: list[PendingKernel] = []
        self.unloadable: dict[str, str] = {}
        """Tasks that do not load, with the loader's error: their episodes are not judged."""
        self._loaded: set[str] = set()

    def __call__(self, task: str, task_hash: str, source: str) -> Measurement:
        """Record the kernel; hand back a failure marked not judged (in memory only).

        Raises:
            TaskError: the task does not load, as the verifier's check would raise it.
        """
        if task not in self._loaded:
            from upskills.tasks import TaskError, load_task

            try:
                load_task(task)
            except TaskError as exc:
                self.unloadable[task] = str(exc)
                raise
            self._loaded.add(task)
        self.asked.append(PendingKernel(task, task_hash, source))
        return Measurement(
            key="",
            task=task,
            task_hash=task_hash,
            kernel_hash=kernel_hash(source),
            judge=self.name,
            device=self.device,
            gpu=self.gpu,
            passed=False,
            error_class=NOT_JUDGED,
        )


def ablation_plan(
    traces: Iterable[str | Path],
    caches: Sequence[str | Path],
    gpu: str | None = None,
    unloadable: dict[str, str] | None = None,
) -> list[PendingKernel]:
    """Each kernel (once, in the order the ablation would judge it) still to judge on ``gpu``.

    ``caches``: every ablation cache the run would read (its own and the others'), all only
    read here. An episode another GPU finished is not judged again; any other is judged whole
    on ``gpu``. ``unloadable``, when given, receives each task that does not load here and
    why (its episodes are in no plan: the ablation cannot judge them either).
    """
    from upskills.distill.pipeline import DistillConfig, distill

    recorder = PlanRecorder(gpu)
    config = DistillConfig(ablate=True, device="cuda", ablation_read=[str(c) for c in caches])
    with tempfile.TemporaryDirectory(prefix="upskills-plan-") as tmp:
        distill(list(traces), Path(tmp) / "skills", None, config, judge=recorder)
    if unloadable is not None:
        unloadable.update(recorder.unloadable)
    seen: set[str] = set()
    out = []
    for k in recorder.asked:
        if k.kernel_hash not in seen:
            seen.add(k.kernel_hash)
            out.append(k)
    return out


def cache_gpus(caches: Sequence[str | Path]) -> list[str]:
    """The GPUs whose CUDA measurements the caches hold (not the nvcc prescreen's), sorted."""
    rows = AblationCache(None, [Path(c) for c in caches if Path(c).exists()]).rows.values()
    return sorted({m.gpu for m in rows if m.device == "cuda" and m.gpu and m.gpu != PRESCREEN_GPU})
