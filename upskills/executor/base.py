"""The executor interface: typed units of verifier work in, verdicts streamed back out.

An executor judges :class:`WorkUnit` s (one candidate on one task with its check options) and
yields a :class:`UnitResult` for each as soon as it is known, in completion order. It does not
write files: the caller appends each result as it arrives (so a killed driver loses nothing it
was handed) and skips, on resume, the keys it already holds. Two implementations:
``local`` (warm worker processes on this host, one per GPU) and ``ray`` (one verifier actor per
GPU of a Ray cluster). Importing this module imports neither torch nor ray.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.tasks.model import Task
from upskills.verify import CheckOptions, ErrorClass, Verdict

ExecutorName = Literal["local", "ray"]


class ExecutorError(RuntimeError):
    """An executor cannot start or cannot go on (missing extra, cluster without capacity)."""


class WorkUnit(BaseModel):
    """One verdict to produce: a candidate's source on a task, with its check options."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    key: str
    """Caller's key; results come back under it, and resume skips keys already written."""
    task: Task
    """The task itself (the Ray executor ships each distinct task once per node)."""
    candidate: str
    """The candidate module's source text."""
    options: CheckOptions = Field(default_factory=CheckOptions)
    """How thoroughly to check it."""


class UnitResult(BaseModel):
    """The verdict on one work unit and where it was produced."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    key: str
    """The unit's key."""
    verdict: Verdict
    """The verifier's verdict (a ``crash`` verdict when the unit killed its worker twice)."""
    worker: str = ""
    """Which worker judged it (``local:0``, ``ray:<node>/<actor>``)."""
    attempts: int = 1
    """Workers tried: more than one after a worker died under it."""


def crash_verdict(unit: WorkUnit, device: str, message: str) -> Verdict:
    """The verdict recorded for a unit whose worker died under it every time it was tried."""
    from upskills.core.hashing import kernel_hash as source_hash
    from upskills.verify.verdict import VerdictStage

    return Verdict(
        task=unit.task.name,
        task_hash=unit.task.hash,
        candidate_hash=source_hash(unit.candidate),
        device=device,
        passed=False,
        error_class=ErrorClass.CRASH,
        stage=VerdictStage.CORRECTNESS,
        message=message,
        timing_status="unavailable" if device == "cpu" else "skipped",
    )


def verdict_signature(verdict: Verdict) -> tuple[object, ...]:
    """The fields of a verdict that two executors must agree on for the same unit.

    Outcome, error class, stage and each trial's (variant, seed, passed, error class). Left out:
    messages (they name temporary paths), timings and durations (they vary run to run).
    """
    trials = tuple((v.variant, v.seed, v.passed, v.error_class) for v in verdict.variants)
    return (
        verdict.task_hash,
        verdict.candidate_hash,
        verdict.passed,
        verdict.error_class,
        verdict.stage,
        trials,
    )


class Executor(ABC):
    """Runs work units and streams their results back; use as a context manager."""

    name: str = ""
    """``local`` or ``ray``."""

    def __init__(self, device: str) -> None:
        """Args: device: ``cpu`` or ``cuda`` (already resolved)."""
        self.device = device

    @abstractmethod
    def run(self, units: Iterable[WorkUnit]) -> Iterator[UnitResult]:
        """Judge ``units``; yield one result per unit as it completes (any order).

        Keys must be unique. Stopping the iteration early leaves the executor usable.
        """

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release workers (warm verifiers, actors)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ExecutorConfig(BaseModel):
    """Which executor to start, and where."""

    model_config = ConfigDict(extra="forbid")

    name: ExecutorName = "local"
    """``local`` (this host) or ``ray`` (a Ray cluster)."""
    workers: int | None = Field(default=None, ge=1)
    """Workers (local) or actors (ray); default one per GPU, one on CPU (local) / per CPU (ray)."""
    ray_address: str | None = None
    """``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; None starts a private local cluster."""


def make_executor(config: ExecutorConfig, device: str) -> Executor:
    """Build the executor ``config`` names for ``device`` (``cpu`` or ``cuda``).

    Raises:
        ExecutorError: ``ray`` without Ray installed (names the extra to install).
    """
    if config.name == "ray":
        from upskills.executor.ray_executor import RayExecutor

        return RayExecutor(device, address=config.ray_address, actors=config.workers)
    from upskills.executor.local import LocalExecutor

    return LocalExecutor(device, workers=config.workers)
