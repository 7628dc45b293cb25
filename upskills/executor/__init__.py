"""Executors: run verifier work units locally or on a Ray cluster, streaming verdicts back.

Public API: ``WorkUnit``, ``UnitResult``, ``Executor``, ``ExecutorConfig``, ``ExecutorError``,
``make_executor``, ``run_units`` (resumable: appends results to a JSONL file as they arrive).
Nothing here imports torch or ray until an executor is started.
"""

from upskills.executor.base import (
    Executor,
    ExecutorConfig,
    ExecutorError,
    UnitResult,
    WorkUnit,
    make_executor,
    verdict_signature,
)
from upskills.executor.batch import run_units

__all__ = [
    "Executor",
    "ExecutorConfig",
    "ExecutorError",
    "UnitResult",
    "WorkUnit",
    "make_executor",
    "run_units",
    "verdict_signature",
]
