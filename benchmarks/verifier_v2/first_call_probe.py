"""Is the late trial's slow call the watching's, the memory's, or any first call's? (41st session)

    python benchmarks/verifier_v2/first_call_probe.py --out first_call_probe.json

``late_trial_probe.py`` (H100, thirty-ninth and forty-first sessions) watched ``torch.relu``
over 19_ReLU's bytes at 4.23 ms on warm memory and at 4.93-4.94 ms (0.859x of the timed
median) in every watched call after the allocator's cache was emptied: on new output memory,
twice in a row (``busy_fresh_output``), and on three new mappings of the input
(``busy_new_mappings``). The timer on that same memory afterwards was not slow (4.243 ms,
``timed_fresh_output``), but the timer's median hides a slow first call. And into an output
already written once unwatched, the first watched call was slow and the second not
(``busy_out``: 4.93, then 4.23 ms). This probe tells the candidate causes apart, each case
starting from a state it sets itself:

- ``event_warm``: single calls timed by CUDA events, one at a time after the write flush, on
  warm memory: the method's own baseline;
- ``event_idle``: the same after the GPU sat idle for a second (a clock that drops and ramps);
- ``busy_idle``: two watched calls after the same idle second;
- ``event_fresh``: four event-timed calls after the cache was emptied (is the first call on
  new memory slow when nothing watches it?), with each output's address;
- ``event_fresh_out``: three event-timed calls into one new preallocated output;
- ``busy_fresh``: three watched calls after the cache was emptied, with each output's address
  (``busy_fresh_output`` again, with addresses: is the second call's output the first one's
  block?);
- ``busy_after_unwatched``: the cache emptied, one unwatched call, then two watched calls;
- ``mixed_fresh``: the cache emptied, then event-timed, watched, event-timed, watched;
- ``fresh_out_rested_*``: a new output, then a rest of 0.2 s or 1 s before three calls;
- ``fresh_spaced_50ms``: the cache emptied, four calls 50 ms apart;
- ``fresh_input``: a new input (a clone after the cache was emptied) into a warm output;
- ``settled``: a new output filled eight times, then two calls into it;
- ``window_free<F>_alloc<A>``: a warm output; ``F`` GiB allocated, written and given back
  (the cache emptied), ``A`` GiB allocated, then the call timed back to back for 1.5 s, each
  time with its time since the release (``last_slow_at_ms``: the last over 1.03x warm).

Each single call's SM clock is read before it where ``torch.cuda.clock_rate`` can (pynvml).
A case that raises is written with its error; the others still run. ``--cases`` picks cases
by name or prefix (``single.sh``: ``FIRSTCALL_CASES``).

Run in the forty-first session on an H100 (``results/first_call_probe_h100_session41_call2.json``
and ``_call3.json``) and an H200 (``first_call_probe_h200_session41.json``, the window cases):
unwatched calls are as slow as watched ones after a release, a rest of 50-200 ms ends it, an
idle second or new memory alone does not slow anything, and on the H200 the slow window lasts
41 ms after 16 GiB given back and 121 ms after 48 GiB. Read in ``docs/design/verifier.md``
("The late trial's slow call"); the judge's mend is ``upskills/verify/clearing.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.verifier_v2.late_trial_probe import COLS, ROWS, busy_ms  # noqa: E402


def clock_mhz() -> int | None:
    """The SM clock now, where pynvml can read it."""
    import torch

    try:
        return int(torch.cuda.clock_rate())
    except Exception:  # no pynvml on the machine: the probe's timings still stand
        return None


class Calls:
    """Single calls of one forward, event-timed or watched, with each output's address."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        from upskills.verify.timing import make_flush

        self.fn = fn
        self.flush = make_flush("write")

    def event(self) -> dict[str, Any]:
        import torch

        clock = clock_mhz()
        self.flush()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = self.fn()
        end.record()
        end.synchronize()
        return {"ms": round(start.elapsed_time(end), 4), "out": address(out), "mhz": clock}

    def watched(self) -> dict[str, Any]:
        clock = clock_mhz()
        held: list[int | None] = []
        ms = busy_ms(lambda: held.append(address(self.fn())))
        return {"busy_ms": ms, "out": held[0] if held else None, "mhz": clock}


def address(tensor: Any) -> int | None:
    return tensor.data_ptr() if hasattr(tensor, "data_ptr") else None


def emptied() -> None:
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def idle(seconds: float = 1.0) -> None:
    import torch

    torch.cuda.synchronize()
    time.sleep(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--cols", type=int, default=COLS)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--cases", default="", help="comma-separated names or prefixes")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("first_call_probe: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    x = torch.rand(args.rows, args.cols, device="cuda") - 0.5
    relu = Calls(lambda: torch.relu(x))
    for _ in range(2):  # nothing of a first call left
        torch.relu(x)
    torch.cuda.synchronize()
    out: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "shape": [args.rows, args.cols],
        "input": address(x),
    }
    only = set(args.cases.split(",")) if args.cases else None
    for name, case in cases(x, relu):
        if only is not None and name not in only and not any(name.startswith(o) for o in only):
            continue
        try:
            out[name] = case()
        except Exception as exc:  # one case's failure loses none of the others
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(name, json.dumps(out[name]), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def cases(x: Any, relu: Calls) -> list[tuple[str, Callable[[], Any]]]:
    def after(setup: Callable[[], Any], *calls: Callable[[], Any]) -> list[Any]:
        setup()
        return [call() for call in calls]

    def fresh_out() -> list[Any]:
        import torch

        emptied()
        y = torch.empty_like(x)
        into = Calls(lambda: torch.clamp(x, min=0, out=y))
        return [into.event() for _ in range(3)]

    def after_unwatched() -> list[Any]:
        import torch

        emptied()
        torch.relu(x)
        torch.cuda.synchronize()
        return [relu.watched() for _ in range(2)]

    def fresh_out_rested(rest_s: float) -> list[Any]:
        import torch

        emptied()
        y = torch.empty_like(x)
        idle(rest_s)
        into = Calls(lambda: torch.clamp(x, min=0, out=y))
        return [into.event() for _ in range(3)]

    def fresh_spaced() -> list[Any]:
        emptied()
        calls = []
        for _ in range(4):
            calls.append(relu.event())
            idle(0.05)
        return calls

    def fresh_input() -> list[Any]:
        import torch

        y = torch.empty_like(x)
        torch.clamp(x, min=0, out=y)
        for _ in range(4):  # y warm
            torch.clamp(x, min=0, out=y)
        emptied()
        x2 = x.clone()
        into = Calls(lambda: torch.clamp(x2, min=0, out=y))
        return [into.event() for _ in range(4)]

    def settled() -> dict[str, Any]:
        """The judge's possible mend: fill a new output until one fill's time holds, then call."""
        import torch

        emptied()
        y = torch.empty_like(x)
        fill = Calls(lambda: y.fill_(0))
        fills = [fill.event() for _ in range(8)]
        into = Calls(lambda: torch.clamp(x, min=0, out=y))
        return {"fills": fills, "calls": [into.event() for _ in range(2)]}

    def window(free_gib: int, alloc_gib: int) -> dict[str, Any]:
        """Warm calls over time after ``free_gib`` given back and ``alloc_gib`` newly allocated."""
        import torch

        y = torch.empty_like(x)
        into = Calls(lambda: torch.clamp(x, min=0, out=y))
        warm = [into.event()["ms"] for _ in range(3)]
        if free_gib:
            big = torch.empty(free_gib * 2**30, dtype=torch.uint8, device="cuda")
            big.fill_(1)  # touched, then cached, then given back
            del big
        emptied()
        t0 = time.perf_counter()
        size = alloc_gib * 2**30
        held = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
        series = []
        while time.perf_counter() - t0 < 1.5 and len(series) < 300:
            ms = into.event()["ms"]
            series.append([round(1e3 * (time.perf_counter() - t0), 1), ms])
        del held
        slow = [t for t, ms in series if ms > 1.03 * min(warm)]
        return {"warm": warm, "last_slow_at_ms": max(slow) if slow else None, "series": series}

    return [
        ("window_free0_alloc0", lambda: window(0, 0)),
        ("window_free16_alloc0", lambda: window(16, 0)),
        ("window_free48_alloc0", lambda: window(48, 0)),
        ("window_free0_alloc16", lambda: window(0, 16)),
        ("window_free0_alloc48", lambda: window(0, 48)),
        ("window_free48_alloc48", lambda: window(48, 48)),
        ("fresh_out_rested_0.2s", lambda: fresh_out_rested(0.2)),
        ("fresh_out_rested_1s", lambda: fresh_out_rested(1.0)),
        ("fresh_spaced_50ms", fresh_spaced),
        ("fresh_input", fresh_input),
        ("settled", settled),
        ("event_warm", lambda: [relu.event() for _ in range(3)]),
        ("event_idle", lambda: after(idle, relu.event, relu.event, relu.event)),
        ("busy_idle", lambda: after(idle, relu.watched, relu.watched)),
        ("event_fresh", lambda: after(emptied, *[relu.event] * 4)),
        ("event_fresh_out", fresh_out),
        ("busy_fresh", lambda: after(emptied, *[relu.watched] * 3)),
        ("busy_after_unwatched", after_unwatched),
        ("mixed_fresh", lambda: after(emptied, relu.event, relu.watched, relu.event, relu.watched)),
        ("busy_warm_end", lambda: [relu.watched() for _ in range(2)]),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
