"""What every worker runs: a warm Verifier turning work units into verdicts.

Shared by the local executor's worker processes and the Ray executor's actors, so both judge a
unit the same way. The verifier starts lazily (its warm worker process imports torch once) and
stays warm across units; each candidate still runs in its own child process.
"""

from __future__ import annotations

import os
from typing import Any

from upskills.executor.base import UnitResult, WorkUnit


class UnitJudge:
    """A warm verifier for one device; ``judge(unit)`` is one verdict."""

    def __init__(self, device: str, worker: str) -> None:
        """Args: device: ``cpu`` or ``cuda``; worker: a label recorded on each result."""
        self.device = device
        self.worker = worker
        self._verifier: Any = None

    def judge(self, unit: WorkUnit) -> UnitResult:
        """The verdict on ``unit``."""
        if self._verifier is None:
            from upskills.verify import Verifier

            self._verifier = Verifier(device=self.device)
        verdict = self._verifier.check(unit.task, unit.candidate, unit.options)
        return UnitResult(key=unit.key, verdict=verdict, worker=self.worker)

    def close(self) -> None:
        """Stop the verifier's warm worker."""
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None


def pin_gpu(index: int | None) -> None:
    """Make only GPU ``index`` visible to this process and its children (before torch loads)."""
    if index is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
