"""GPU memory given back to the driver, and the wait until the driver is done with it.

Measured in the forty-first session (``benchmarks/verifier_v2/first_call_probe.py``, its
``window`` cases; ``benchmarks/results/first_call_probe_h200_session41.json``): after a process
gives GPU memory back (``torch.cuda.empty_cache``), a memory-bound kernel on memory the
process already held runs slower for a while, timed or watched alike. On an H200,
``torch.clamp`` over 19_ReLU's 12.9 GB took 3.38-3.46 ms instead of 3.05-3.10 ms (10-13%
slower) for 41 ms after 16 GiB were given back and for 121 ms after 48 GiB, about 400 GiB/s.
On an H100, ``torch.relu`` watched took 4.93-4.94 ms instead of 4.23 ms (14% slower), and
event-timed calls were 12-26% slower, for about 20 ms after 6.4 GB (300 GB/s or more; the
``*_h100_session41_*`` files). Allocating memory did not do it, and after a rest of 50-200 ms
nothing did. The likeliest cause is the driver clearing the memory it got back, sharing the
DRAM with the kernel (inferred: the window grows with the bytes, the slowdown does not; no
document of the driver's was found).

The judge gives memory back right before its late trial (``release_memory(force=True)``), and
the late trial's one call is what the watched-speed rule compares with the timed median
(:mod:`~upskills.verify.watched_speed`). A late trial inside the window reads as 0.86-0.90x
of an honest kernel's timed median, the shortfall the thirty-eighth session's H200 re-check
of 19_ReLU showed (0.896x) and the reason the rule's share went from 0.9 to 0.8. So the judge
counts what it gives back (:func:`given_back`: its allocator's cache, its VMM buffers) and the
late trial waits until that much could have been cleared at :data:`CLEARING_BYTES_PER_S`
(:func:`wait_until_cleared`) before the candidate is called.
"""

from __future__ import annotations

import time
from collections.abc import Callable

CLEARING_BYTES_PER_S = 200e9
"""The rate the wait assumes: half of the slowest measured (~400 GiB/s on an H200, 300 GB/s
or more on an H100), so the wait outlasts the window."""

MAX_WAIT_S = 2.0
"""The longest wait, whatever was given back (400 GB at the assumed rate)."""


class Clearing:
    """When the memory given back so far will have been cleared (``until``, on ``clock``)."""

    def __init__(
        self,
        rate: float = CLEARING_BYTES_PER_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rate, self.clock, self.sleep = rate, clock, sleep
        self.until = 0.0

    def given_back(self, nbytes: int) -> None:
        """``nbytes`` given back now: cleared after whatever was given back before it."""
        if nbytes > 0:
            self.until = max(self.until, self.clock()) + nbytes / self.rate

    def wait(self, max_s: float = MAX_WAIT_S) -> float:
        """Sleep until it is all cleared (at most ``max_s``); the seconds slept."""
        left = min(max_s, self.until - self.clock())
        if left <= 0:
            return 0.0
        self.sleep(left)
        return left


CLEARING = Clearing()
"""The process's account (the judge's: its late trial reads it)."""


def given_back(nbytes: int) -> None:
    """Count ``nbytes`` of GPU memory given back to the driver now."""
    CLEARING.given_back(nbytes)


def wait_until_cleared(max_s: float = MAX_WAIT_S) -> float:
    """Wait until the memory given back could have been cleared; the seconds waited."""
    return CLEARING.wait(max_s)
