"""The ``local`` executor: warm verifier workers on this host, one per GPU (the default).

One worker judges in this process (CPU, or a single GPU). More workers are spawned processes,
each pinned to one GPU through ``CUDA_VISIBLE_DEVICES`` before anything imports torch, each
keeping its verifier warm; units are handed out as workers free up (not pre-sharded), and
results come back in completion order. A worker process that dies ends the run with an error
(everything already yielded is kept by the caller; rerunning resumes). The verifier already runs
every candidate in a child process, so a crashing kernel costs a verdict, not a worker.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import util as mp_util
from typing import Any

from upskills.executor.base import Executor, ExecutorError, UnitResult, WorkUnit
from upskills.executor.judge import UnitJudge, pin_gpu

_JUDGE: UnitJudge | None = None
"""The warm judge of a worker process (set by its initializer)."""


def gpu_count() -> int:
    """GPUs torch sees (1 without torch or without GPUs)."""
    try:
        import torch

        return max(1, torch.cuda.device_count())
    except ImportError:
        return 1


def _visible_gpus(n: int) -> list[str]:
    """The GPU ids workers 0..n-1 pin to, honouring an existing ``CUDA_VISIBLE_DEVICES``."""
    listed = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    return [listed[i % len(listed)] if listed else str(i) for i in range(n)]


def _init_worker(slots: Any, device: str) -> None:
    """Worker initializer: take a GPU slot, pin to it, make the (lazy) judge."""
    global _JUDGE
    index, gpu = slots.get()
    if device == "cuda":
        pin_gpu(gpu)
    _JUDGE = UnitJudge(device, f"local:{index}")
    mp_util.Finalize(None, _JUDGE.close, exitpriority=10)  # stop the warm verifier on exit


def _judge_in_worker(unit: WorkUnit) -> UnitResult:
    assert _JUDGE is not None, "worker not initialized"
    return _JUDGE.judge(unit)


class LocalExecutor(Executor):
    """Warm workers on this host: in-process for one, one spawned process per GPU for more.

    Args:
        device: ``cpu`` or ``cuda``.
        workers: worker count; default one per visible GPU on CUDA, one on CPU.
    """

    name = "local"

    def __init__(self, device: str, workers: int | None = None) -> None:
        super().__init__(device)
        self.workers = workers or (gpu_count() if device == "cuda" else 1)
        self._judge: UnitJudge | None = None
        self._pool: ProcessPoolExecutor | None = None

    def _start_pool(self) -> ProcessPoolExecutor:
        ctx = mp.get_context("spawn")
        slots = ctx.Queue()
        for i, gpu in enumerate(_visible_gpus(self.workers)):
            slots.put((i, gpu))
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(slots, self.device),
        )

    def run(self, units: Iterable[WorkUnit]) -> Iterator[UnitResult]:
        """Judge ``units`` on this host; yield results as they complete."""
        if self.workers <= 1:
            if self._judge is None:
                self._judge = UnitJudge(self.device, "local:0")
            for unit in units:
                yield self._judge.judge(unit)
            return
        if self._pool is None:
            self._pool = self._start_pool()
        futures: list[Future[UnitResult]] = [
            self._pool.submit(_judge_in_worker, unit) for unit in units
        ]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BrokenProcessPool as exc:
            self._pool = None
            raise ExecutorError(
                "a local worker process died; results so far are kept, rerun to resume"
            ) from exc
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        """Stop the workers and their verifiers."""
        if self._judge is not None:
            self._judge.close()
            self._judge = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
