"""GPU memory given back between large trials and around timed calls; noted when it runs out.

The judge's tensors die with each trial, but PyTorch keeps their blocks: the caching allocator
holds them for reuse and CUDA-IPC-shared storages wait in a limbo until the candidate's
reference is gone. Both count against the memory the candidate's process can allocate; at
KernelBench sizes (8 GiB per tensor) the judge held 112-128 GiB of an H200 after six trials and
the candidate's forward ran out of memory while being timed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from upskills.verify.clearing import given_back, wait_until_cleared
from upskills.verify.protocol import Bulk, BulkDone, TimeDone, TimeRun

if TYPE_CHECKING:
    from upskills.verify.judge import Judge

GIB = 2**30


def give_back_cache(device: str, force: bool = False) -> int:
    """Give the caching allocator's unused GPU memory back to the driver; the bytes given back.

    Done when more than 1 GiB sits cached (after large trials, the timing sets' building, the
    candidate's timed calls), and always with ``force``. A no-op off CUDA. Counts nothing: the
    candidate's process calls this one, and nothing it runs after its timed calls may go
    through state outside the library snapshot's watch (:mod:`~.library_snapshot`).
    """
    if not device.startswith("cuda"):
        return 0
    import torch

    reserved = torch.cuda.memory_reserved()
    if not force and reserved - torch.cuda.memory_allocated() < GIB:
        return 0
    torch.cuda.synchronize()
    torch.cuda.ipc_collect()
    torch.cuda.empty_cache()
    return reserved - torch.cuda.memory_reserved()


def release_memory(device: str, force: bool = False) -> int:
    """The judge's :func:`give_back_cache`, counted for the driver's wait.

    Its timed requests and late trial wait (:func:`settle`) until what was counted
    (:func:`~upskills.verify.clearing.given_back`) could have been cleared.
    """
    freed = give_back_cache(device, force)
    given_back(freed)  # the driver clears it meanwhile
    return freed


def memory_note() -> str:
    """What the judge itself held on the GPU when the candidate ran out of memory."""
    import torch

    try:
        held = torch.cuda.memory_reserved() / GIB
        free, total = torch.cuda.mem_get_info()
    except RuntimeError:
        return ""
    return (
        f" [the judge held {held:.1f} GiB of this GPU; {free / GIB:.1f} of "
        f"{total / GIB:.1f} GiB free after the failure]"
    )


def settle(judge: Judge, force: bool = False) -> None:
    """Give the judge's cache back and wait for the driver to clear what was given back.

    Before the candidate is timed or watched: the wait is the stage ``clearing_wait``.
    """
    release_memory(judge.device, force)
    judge.clock.add("clearing_wait", wait_until_cleared())


def ask_timed(judge: Judge, message: TimeRun | Bulk) -> tuple[Any, float]:
    """Ask for timed calls with room made for them and the driver done clearing memory.

    Returns ``(reply, ms)``: the milliseconds of the request alone, from sending it to its
    reply, never the wait before it (a wait inside the clock check's calibrated wall read as
    an overhead and left the judge's clock at 0 ms per call: an H100 run of the forty-second
    session, caught before it landed).

    At KernelBench's sizes (8 GiB a tensor) the judge's cached blocks (the sets' inputs, the
    references' copies) and the candidate's (its copy of the inputs, its outputs) did not fit an
    H100 together: 38_L1Norm_ ran out of memory while timed and again in the clock check. Each
    side gives its cache back around timed calls (the judge before asking, the candidate's
    process after answering, ``released_bytes``), and the judge waits for the driver to clear
    what was given back (:mod:`~upskills.verify.clearing`) before the calls are timed.
    """
    settle(judge)
    start = time.monotonic()
    reply = judge.ask(message)
    ms = (time.monotonic() - start) * 1000.0
    if isinstance(reply, TimeDone | BulkDone):
        given_back(max(0, reply.released_bytes))
        if reply.failure is None and reply.threads:
            from upskills.verify.judge_rules import timed_threads  # the judge's side alone

            raise timed_threads(judge.job.display, reply.threads)
    return reply, ms
