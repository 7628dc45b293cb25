"""Why the late trial's kernels ran slower than the timed calls on an H200 (thirty-eighth session).

    python benchmarks/verifier_v2/late_trial_probe.py --out late_trial_probe.json

The H200 re-check of the corpus's finals (``recheck_h200_run32.jsonl``) put honest timed
medians of five of KernelBench's eight largest tasks (3-4 ms a call) at 0.896x-0.952x of the
busy time the late trial's CUPTI records gave (19_ReLU: 3.0111 ms timed, 3.3607 ms watched),
where the other three sat at 0.98x-1.00x and the launch-bound and mid-sized finals at
0.99x-1.06x. The watched-speed rule's share went from 0.9 to 0.8
on that (``upskills/verify/watched_speed.py``). This probe separates the candidate causes, in
one process, with ``torch.relu`` over 19_ReLU's [4096, 393216] fp32 (6.4 GB in, 6.4 GB out):

- ``timed_local`` / ``timed_vmm``: the verifier's timer (``time_cuda``, write flush) on an
  input from PyTorch's allocator, and on the same values in memory made the way the judge
  shares a trial's inputs (``cuda_vmm.Mapping``: ``cuMemCreate`` + ``cuMemMap``). Timed first,
  before any profile, as the verifier times before its late trial (CUPTI stays attached);
- ``busy_local``: three watched calls on the allocator's input (``shadow_profile`` with the
  write flush, as the late trial; the first is the process's first CUPTI session);
- ``busy_vmm``: three on the mapped input (a trial's input is mapped so);
- ``busy_fresh_output``: two after the allocator's cache was emptied, so the first call's
  output is new memory (a trial's forward allocates its output);
- ``timed_fresh_output``: the timer again, on that new output memory. Beside
  ``busy_fresh_output`` it says whether the memory's placement slows the kernel timed and
  watched alike (then the watching costs nothing) or the watched call alone;
- ``busy_new_mappings``: one watched call on each of three new mappings of the input, made
  after the cache was emptied, as the late trial's fresh inputs are (``release_memory``,
  then a trial's inputs mapped anew);
- ``busy_out``: two writing into a preallocated output (``torch.clamp(x, min=0, out=y)``;
  ``torch.relu`` takes no ``out``; the thirty-ninth session's first run failed on that).

Run on an H100 (thirty-ninth session, ``benchmarks/results/late_trial_probe_h100_session39.json``):
timed 4.242 ms; watched 1.0015x-1.0023x of it on either input, the first CUPTI session no
different from the later ones; after the cache was emptied both watched calls 0.859x
(4.94 ms). The two cases added since ask whether that is placement or watching.

Each busy time is divided into its timed median (``timed_over_busy``, the rule's ratio: 0.8
refuses). A case that raises is written with its error; the others still run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

ROWS, COLS = 4096, 393216


def busy_ms(fn: Callable[[], Any]) -> float | None:
    """The GPU's busy time in one call of ``fn``, watched as the late trial watches."""
    from upskills.verify.shadow_ops import shadow_profile

    with shadow_profile(flush="write") as shadow:
        fn()
    return shadow.gpu_busy_ms


def timed_ms(fn: Callable[[], Any]) -> float:
    from upskills.verify.timing import time_cuda

    timing, _ = time_cuda(fn, target_s=1.0)
    return timing.median_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--cols", type=int, default=COLS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("late_trial_probe: needs a CUDA GPU", file=sys.stderr)
        return 2
    from upskills.verify.cuda_vmm import Mapping

    torch.manual_seed(0)
    x = torch.rand(args.rows, args.cols, device="cuda") - 0.5
    mapping = Mapping.create(x.numel() * 4, 0)
    xv = mapping.tensor()[: x.numel() * 4].view(torch.float32).view(x.shape)
    xv.copy_(x)
    for given in (x, xv):  # nothing of a first call left for the timer
        torch.relu(given)
    torch.cuda.synchronize()
    out: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "shape": [args.rows, args.cols],
        "bytes": 2 * x.numel() * 4,
    }
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("timed_local", lambda: timed_ms(lambda: torch.relu(x))),
        ("timed_vmm", lambda: timed_ms(lambda: torch.relu(xv))),
        ("busy_local", lambda: [busy_ms(lambda: torch.relu(x)) for _ in range(3)]),
        ("busy_vmm", lambda: [busy_ms(lambda: torch.relu(xv)) for _ in range(3)]),
        ("busy_fresh_output", lambda: fresh_output(lambda: torch.relu(x))),
        ("timed_fresh_output", lambda: timed_ms(lambda: torch.relu(x))),
        ("busy_new_mappings", lambda: new_mappings(x)),
        ("busy_out", lambda: out_given(x)),
    ]
    for name, case in cases:
        try:
            out[name] = case()
        except Exception as exc:  # one case's failure loses none of the others
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(name, out[name], flush=True)
    ratios: dict[str, list[float]] = {}
    for name, timed in (("local", "timed_local"), ("vmm", "timed_vmm")):
        median = out.get(timed)
        shared = ("busy_fresh_output", "busy_new_mappings", "busy_out")
        for case in ("busy_" + name, *shared):
            if case in shared and name != "local":
                continue
            values = out.get(case)
            if isinstance(median, float) and isinstance(values, list):
                ratios[case] = [round(median / v, 4) for v in values if v]
    out["timed_over_busy"] = ratios
    print("timed over busy:", json.dumps(ratios))
    text = json.dumps(out, indent=1)
    if args.out is not None:
        args.out.write_text(text + "\n")
    mapping.close()
    return 0


def fresh_output(fn: Callable[[], Any]) -> list[float | None]:
    """Two watched calls after the allocator gave its cached blocks back: new output memory."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return [busy_ms(fn) for _ in range(2)]


def new_mappings(x: Any, count: int = 3) -> list[float | None]:
    """One watched call on each of ``count`` new mappings of ``x``, made after a release."""
    return [on_new_mapping(x) for _ in range(count)]


def on_new_mapping(x: Any) -> float | None:
    import torch

    from upskills.verify.cuda_vmm import Mapping

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    mapping = Mapping.create(x.numel() * 4, 0)
    try:
        given = mapping.tensor()[: x.numel() * 4].view(torch.float32).view(x.shape)
        given.copy_(x)
        return busy_ms(lambda: torch.relu(given))
    finally:
        torch.cuda.synchronize()
        mapping.close()


def out_given(x: Any) -> list[float | None]:
    import torch

    y = torch.empty_like(x)
    torch.clamp(x, min=0, out=y)
    return [busy_ms(lambda: torch.clamp(x, min=0, out=y)) for _ in range(2)]


if __name__ == "__main__":
    raise SystemExit(main())
