"""Does one check's verdict change the timing of the checks after it? (CUDA)

    python benchmarks/verifier_stability_probe.py --out stability_probe.json

`tests/verify/test_gpu.py::test_timing_is_stable_across_checks` failed twice on the H200
(2026-12-02): three checks of a 1M-element add, the first ~6x slower than the other two, each
time right after `test_candidate_that_cheats_only_when_timed` in a verifier that had made ~10
checks; run alone, in a fresh verifier, it passed. This probe bisects that in one run: one warm
verifier, and for each kind of predecessor check (none, a passing add, a kernel that crashes, a
kernel that cheats only when timed, a passing add again) that check followed by three checks of
the 1M-element add, with each check's median, p10 and p90, how many of its timed calls the host
was still enqueuing when the GPU reached their start event (``Timing.late_calls``, added after
the twenty-third session's probe found the long tail back), and the wall time between checks.
Prints a table and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verifier_bench import KERNEL  # noqa: E402  # pyright: ignore[reportMissingImports]

ADD = KERNEL.replace("BLOCK_SIZE", "1024")

PREDECESSORS = {
    "none": None,
    "passing add": ADD,
    "crash (wild store)": ADD.replace(
        "tl.store(out_ptr + offs, x + y, mask=mask)",
        "tl.store(out_ptr + offs + (1 << 40), x + y, mask=mask)",
    ),
    "cheats only when timed": ADD.replace(
        "    def forward(self, x, y):\n",
        "    calls = 0\n\n    def forward(self, x, y):\n        ModelNew.calls += 1\n"
        "        if ModelNew.calls > 40:\n"
        "            out = torch.zeros_like(x)\n"
        "            add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n"
        "            return out\n",
    ),
    "passing add, again": ADD,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1 << 20, help="elements of the timed add")
    parser.add_argument("--after", type=int, default=3, help="checks after each predecessor")
    parser.add_argument("--device", default="cuda", help="cuda (cpu: the flow only, no timing)")
    parser.add_argument("--out", type=Path, default=Path("stability_probe.json"))
    args = parser.parse_args(argv)

    from upskills.tasks import load_task
    from upskills.tasks.model import ShapeVariant
    from upskills.verify import CheckOptions, Verifier

    base = load_task("vector_add")
    task = base.model_copy(
        update={"variants": [ShapeVariant(name="main", main=True, globals={"N": args.n})]}
    )
    rows: list[dict] = []
    with Verifier(args.device, CheckOptions(seeds=2, timeout_s=300)) as verifier:
        verifier.check(task, ADD)  # warm: zygotes, compile caches, baselines
        last = time.monotonic()
        for label, source in PREDECESSORS.items():
            if source is not None:
                v = verifier.check(task, source)
                rows.append(_row(label, "predecessor", v, time.monotonic() - last))
                last = time.monotonic()
            for k in range(args.after):
                v = verifier.check(task, ADD)
                rows.append(_row(label, f"add {k + 1}", v, time.monotonic() - last))
                last = time.monotonic()
    cols = f"{'median ms':>10s} {'p10':>8s} {'p90':>8s} {'late':>10s} {'head x':>6s}"
    print(f"{'after':24s} {'check':12s} {'verdict':14s} {cols}")
    for r in rows:
        t = [_ms(r[k]) for k in ("median_ms", "p10_ms", "p90_ms")]
        head = f"{r['after']:24s} {r['check']:12s} {r['verdict']:14s}"
        late = f"{r['late_calls']}/{r['reps']}" if r["late_calls"] is not None else "-"
        grown = str(r["head_start_x"]) if r["head_start_x"] is not None else "-"
        print(f"{head} {t[0]:>10s} {t[1]:>8s} {t[2]:>8s} {late:>10s} {grown:>6s}")
    args.out.write_text(json.dumps({"n": args.n, "rows": rows}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


def _ms(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def _row(after: str, check: str, v, seconds: float) -> dict:
    t = v.timing
    return {
        "after": after,
        "check": check,
        "verdict": "passed" if v.passed else f"{v.error_class}",
        "median_ms": t.median_ms if t else None,
        "p10_ms": t.p10_ms if t else None,
        "p90_ms": t.p90_ms if t else None,
        "reps": t.reps if t else None,
        "late_calls": t.late_calls if t else None,  # enqueued after the GPU's head start
        "head_start_x": t.head_start_x if t else None,  # how far late calls grew it
        "seconds": round(seconds, 2),
    }


if __name__ == "__main__":
    sys.exit(main())
