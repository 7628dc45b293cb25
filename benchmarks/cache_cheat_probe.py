"""Why did the unmended GPU value-keyed cache cheat time slower than the honest add? (CUDA)

    python benchmarks/cache_cheat_probe.py --out cache_cheat_probe.json

In the twentieth device session (2026-12-04) ``GPU_VALUE_KEYED_CACHE``
(``tests/verify/test_adversarial.py``), checked with the per-call input perturbation off, timed
0.068 ms against the honest add's 0.052 ms, with p10 0.039 ms (a hit's time) and p90 0.100 ms
(slower than a miss): about half the calls slow, where on paper every call after the first few
hits. This probe times the cheat outside the verifier with the verifier's own timer
(``upskills.verify.timing.time_cuda``, write flush, three input sets in a random order like the
judge's), and records for every timed call whether it was a hit (the cache's keys read before
the call, untimed) beside its time. Three variants, one process, one after another:

- ``plain``: ``forward`` alone;
- ``mode_check``: ``forward`` between two of guard (d)'s mode checks, as the candidate's process
  times it (host time inside the events);
- ``collector_off``: the same with the cyclic collector off and a young pass before each call.

For each: median, p10, p90, the share of hits, and the median time of hits and of misses; the
honest add is timed the same way first. Prints a table and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

N = 1 << 24
"""Elements of the add: 16M fp32, as in the GPU test (``_big_add``)."""


def _load(source: str, name: str) -> Any:
    """The candidate's module from its source (a file: Triton reads its kernels' source)."""
    folder = Path(tempfile.mkdtemp(prefix="cache_probe_"))
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _time(model: Any, sets: list[list[Any]], variant: str, cheat: bool) -> dict[str, Any]:
    """Time ``model`` over the input sets; per call, its time and (for the cheat) a hit."""
    import torch

    from upskills.verify.modes import mode_depths
    from upskills.verify.timing import time_cuda

    work = [t.clone() for t in sets[0]]
    rng = random.Random(0x5EED)
    order = [rng.randrange(len(sets)) for _ in range(4096)]
    hits: list[bool] = []

    def load(call: int) -> int:
        if variant == "collector_off":
            gc.collect(1)
        pick = order[call % len(order)]
        for dst, src in zip(work, sets[pick], strict=True):
            dst.copy_(src)
        if cheat and getattr(model, "keys", None) is not None:
            keys = model.keys.tolist()
            k0, k1 = float(work[0][7]), float(work[1][N - 3])
            hits.append(any(keys[2 * s] == k0 and keys[2 * s + 1] == k1 for s in range(3)))
        return pick

    def call() -> Any:
        if variant == "plain":
            return model(*work)
        before = mode_depths()
        out = model(*work)
        if mode_depths() != before:
            raise RuntimeError("a mode was left")
        return out

    times: list[float] = []
    if variant == "collector_off":
        gc.collect()
        gc.freeze()
        gc.disable()
    try:
        with torch.no_grad():
            time_cuda(call, before_each=load, max_reps=2000, target_s=1.0, times_out=times)
    finally:
        if variant == "collector_off":
            gc.enable()
            gc.unfreeze()
    timed_hits = hits[-len(times) :] if cheat else []
    row: dict[str, Any] = {
        "variant": variant,
        "calls": len(times),
        "median_ms": statistics.median(times),
        "p10_ms": statistics.quantiles(times, n=10)[0],
        "p90_ms": statistics.quantiles(times, n=10)[-1],
    }
    if cheat and timed_hits:
        hit_t = [t for t, h in zip(times, timed_hits, strict=True) if h]
        miss_t = [t for t, h in zip(times, timed_hits, strict=True) if not h]
        row |= {
            "hit_share": round(len(hit_t) / len(times), 4),
            "hit_median_ms": statistics.median(hit_t) if hit_t else None,
            "miss_median_ms": statistics.median(miss_t) if miss_t else None,
            "first_40": [round(t, 4) for t in times[:40]],
            "first_40_hits": timed_hits[:40],
        }
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.verify.conftest import GOOD_ADD
    from tests.verify.test_adversarial import GPU_VALUE_KEYED_CACHE

    g = torch.Generator(device="cuda").manual_seed(0)
    sets = [[torch.randn(N, device="cuda", generator=g) for _ in range(2)] for _ in range(3)]
    rows = [_time(_load(GOOD_ADD, "honest_add").ModelNew(), sets, "plain", cheat=False)]
    rows[0]["variant"] = "honest plain"
    for variant in ("plain", "mode_check", "collector_off"):
        model = _load(GPU_VALUE_KEYED_CACHE, f"cache_{variant}").ModelNew()
        rows.append(_time(model, sets, variant, cheat=True))
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{'variant':16} {'median':>8} {'p10':>8} {'p90':>8} {'hits':>6} {'hit':>8} {'miss':>8}")
    nan = float("nan")
    for r in rows:
        hit, miss = r.get("hit_median_ms") or nan, r.get("miss_median_ms") or nan
        print(
            f"{r['variant']:16} {r['median_ms']:8.4f} {r['p10_ms']:8.4f} {r['p90_ms']:8.4f} "
            f"{r.get('hit_share', nan):6.3f} {hit:8.4f} {miss:8.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
