"""The ablation's CUDA kernels that do not compile, found here with nvcc before device time.

``upskills distill --ablate --device cuda`` judges every kernel an ablation needs (``before``,
``after``, and ``before`` with one change of the diff applied) that is not in the ablation cache
yet. On 2026-12-04 261 were left, 247 of them CUDA; of the 51 kernels the H200 ablation had
judged, 19 were ``load_inline`` builds that failed, each verdict a build (tens of seconds) of
device time spent to say so. This script finds the kernels still to judge without a GPU (the
distiller's own episode walk, with a recording judge and a copy of the cache), compiles each
CUDA kernel's ``cuda_sources`` here (``nvcc --cubin`` for sm_90a against this machine's torch
headers; identical sources once), and appends one line per kernel to ``--out``, so a killed run
resumes where it stopped.

With ``--record CACHE`` the kernels that did not compile, with nvcc's first error in the
kernel's own source (not in a header), are appended to the ablation cache as measurements of a
judge named :data:`JUDGE`: failed, error class ``compile``, the compiler's first error lines in
the message. The GPU run then finds them in the cache and spends no device time on them; the
distiller reads them as changes that fail alone, which is what they are. Kernels that compiled
here are left to the GPU run: ``cpp_sources``, linking and the run itself are not checked here.

Headers differ: torch here is not the device's (``torch_headers`` in each line says which), so
an API one of them lacks could fail here and build there. The error-location filter keeps out
failures inside torch's headers; a failure in the kernel's own lines is recorded as such.

Usage: python benchmarks/corpus_live/ablation_prescreen.py [--traces traces/corpus-live]
    [--cache benchmarks/results/ablations_h200.jsonl] [--out FILE.jsonl] [--jobs 2]
    [--limit N] [--record CACHE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "verifier_v2"))
sys.path.insert(0, str(ROOT / "benchmarks" / "corpus_live"))

from scan_extensions_local import (  # noqa: E402  # pyright: ignore[reportMissingImports]
    PRELUDE,
    cuda_sources,
    include_dirs,
)

from upskills.distill.ablate import PRESCREEN_GPU, Measurement, kernel_hash  # noqa: E402
from upskills.distill.plan import ablation_plan  # noqa: E402

JUDGE = "nvcc-prescreen"
"""The judge name of the measurements ``--record`` appends (not the verifier: no GPU ran)."""
GPU = PRESCREEN_GPU
"""What such a measurement says in place of a GPU name (part of its cache key): a compile
failure counts as judged on every GPU (``ablate.py``, "One episode, one GPU")."""


def pending(
    traces: Path, cache: Path, gpu: str | None = None, also: tuple[Path, ...] = ()
) -> list[tuple[str, str, str]]:
    """``(task, task_hash, source)`` of every kernel the ablation still has to judge.

    ``gpu``: on that GPU (an episode another GPU finished is not judged again; one it did not
    is judged whole on this one); None: on any. ``also``: caches only read, as
    ``--ablation-read``. The distiller's own plan (``upskills distill --ablate --plan``)."""
    return [(k.task, k.task_hash, k.source) for k in ablation_plan([traces], [cache, *also], gpu)]


def _nvcc_version() -> str:
    proc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if "release" in line]
    return lines[0].strip() if lines else "unknown"


def compile_unit(
    cu: str, work: Path, includes: list[str], prelude: str = PRELUDE
) -> dict[str, Any]:
    """``nvcc --cubin`` of one ``cuda_sources`` text: compiled or not, and where it failed.

    ``prelude`` is what ``load_inline`` puts before the source (torch's headers); a test of this
    script's own logic passes a lighter one."""
    unit = work / "k.cu"
    unit.write_text(prelude + cu, encoding="utf-8")
    cmd = ["nvcc", "--cubin", "-arch=sm_90a", "-std=c++17", "-O1", "-w"]
    cmd += [f"-I{i}" for i in includes] + ["-o", str(work / "k.cubin"), str(unit)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode == 0:
        return {"compiled": True}
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    first = errors[0] if errors else (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {
        "compiled": False,
        "in_kernel": first.startswith(str(unit)),
        "error": [e.replace(str(unit), "k.cu") for e in errors[:4]] or [first],
    }


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield json.loads(line)


def prescreen(
    kernels: list[tuple[str, str, str]], out: Path, jobs: int = 2, limit: int | None = None
) -> list[dict[str, Any]]:
    """Compile each CUDA kernel's sources not yet in ``out``; append a line per kernel."""
    done = {r["kernel_hash"] for r in _rows(out)}
    todo = [k for k in kernels if "load_inline" in k[2] and kernel_hash(k[2]) not in done]
    todo = todo[:limit] if limit is not None else todo
    base = Path(tempfile.mkdtemp(prefix="prescreen-nvcc-"))
    includes = include_dirs(base)
    nvcc = _nvcc_version()
    import torch

    by_text: dict[str, dict[str, Any]] = {}  # identical sources compiled once

    def one(item: tuple[int, tuple[str, str, str]]) -> dict[str, Any]:
        i, (task, task_hash, source) = item
        started = time.perf_counter()
        units = cuda_sources(source, f"k{i}.py")
        results = []
        for j, cu in enumerate(units):
            key = hashlib.sha256(cu.encode()).hexdigest()
            if key not in by_text:
                work = base / f"{i}-{j}"
                work.mkdir()
                by_text[key] = compile_unit(cu, work, includes)
            results.append(by_text[key])
        failed = [r for r in results if not r["compiled"]]
        return {
            "kernel_hash": kernel_hash(source),
            "task": task,
            "task_hash": task_hash,
            "units": len(units),
            "compiled": not failed if units else None,  # None: no cuda_sources were found
            "in_kernel": bool(failed) and failed[0]["in_kernel"],
            "error": failed[0]["error"] if failed else [],
            "nvcc": nvcc,
            "torch_headers": torch.__version__,
            "seconds": round(time.perf_counter() - started, 1),
        }

    written = []
    out.parent.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for n, row in enumerate(pool.map(one, enumerate(todo)), 1):
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
            written.append(row)
            state = {True: "compiled", None: "no cuda_sources found (left to the GPU)"}.get(
                row["compiled"], "FAILED: " + (row["error"] or ["?"])[0]
            )
            print(f"[{n}/{len(todo)}] {row['task']} {row['kernel_hash']} {state}", flush=True)
    return written


def record(out: Path, cache: Path, asked: set[str] | None = None) -> int:
    """Append the kernels that failed in their own lines to the ablation cache; how many.

    ``asked``: the kernel hashes the ablation still asks for (a line of ``out`` made for an
    older split of the diffs is left out); None records every failure in ``out``.
    """
    have = {json.loads(line)["key"] for line in cache.read_text().splitlines() if line.strip()}
    added = 0
    with cache.open("a", encoding="utf-8") as fh:
        for row in _rows(out):
            if row["compiled"] is not False or not row["in_kernel"]:
                continue
            if asked is not None and row["kernel_hash"] not in asked:
                continue
            key = f"cuda/{GPU}/{row['task_hash']}/{row['kernel_hash']}"
            if key in have:
                continue
            m = Measurement(
                key=key,
                task=Path(row["task"]).stem,
                task_hash=row["task_hash"],
                kernel_hash=row["kernel_hash"],
                judge=JUDGE,
                device="cuda",
                gpu=GPU,
                passed=False,
                error_class="compile",
                message=(
                    f"did not compile ({row['nvcc']}, --cubin for sm_90a, torch "
                    f"{row['torch_headers']} headers; no GPU ran): " + " | ".join(row["error"])
                )[:300],
            )
            fh.write(m.model_dump_json() + "\n")
            have.add(key)
            added += 1
    return added


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=ROOT / "traces" / "corpus-live")
    results = ROOT / "benchmarks" / "results"
    ap.add_argument("--cache", type=Path, default=results / "ablations_h200.jsonl")
    ap.add_argument("--out", type=Path, default=results / "ablation_prescreen.jsonl")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="compile at most this many kernels")
    ap.add_argument("--record", type=Path, default=None, help="ablation cache to append to")
    args = ap.parse_args(argv)
    if shutil.which("nvcc") is None:
        print("nvcc is not on PATH", file=sys.stderr)
        return 2
    kernels = pending(args.traces, args.cache)
    cuda = sum("load_inline" in k[2] for k in kernels)
    print(f"{len(kernels)} kernels still to judge, {cuda} of them CUDA", flush=True)
    prescreen(kernels, args.out, args.jobs, args.limit)
    asked = {kernel_hash(k[2]) for k in kernels}
    rows = [r for r in _rows(args.out) if r["kernel_hash"] in asked]  # still pending ones
    failed = [r for r in rows if r["compiled"] is False]
    unread = sum(r["compiled"] is None for r in rows)
    print(
        f"{args.out}: of the {cuda} CUDA kernels still to judge, {len(rows)} were compiled here: "
        f"{len(failed)} did not compile ({sum(r['in_kernel'] for r in failed)} with the first "
        f"error in the kernel's own lines); {unread} gave no cuda_sources (their module failed "
        "before load_inline here: left to the GPU)"
    )
    if args.record is not None:
        print(f"recorded {record(args.out, args.record, asked)} in {args.record}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
