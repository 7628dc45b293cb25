"""Build the ``load_inline`` CUDA extensions of session kernels in parallel, before they are judged.

A verdict compiles its candidate's extension itself, one check at a time; built here first, all
at once (one process per kernel, as many as there are CPU cores), the checks find them in the
compile cache (``load_inline`` caches by name and source) and spend their time judging. A build
that fails here fails again in the check that follows, which reports it: this script only
prints one line per kernel and never stops on a failure.

    python benchmarks/corpus_live/build_extensions.py FOLDER...  # the sessions' current kernels
    python benchmarks/corpus_live/build_extensions.py --finals traces/corpus-live [--tasks a,b]
    python benchmarks/corpus_live/build_extensions.py --ablation CACHE [--traces traces/corpus-live]
        [--ablation-read OTHER_GPU_CACHE ...] [--gpu NAME] [--limit N]

``--ablation``: the CUDA kernels ``upskills distill --ablate`` still has to judge against that
ablation cache (the distiller's own episode walk, ``ablation_prescreen.pending``), so the
ablation that follows times kernels instead of building them one at a time. With ``--gpu``,
the kernels that GPU still has to judge (an episode is judged whole on one GPU).

Each source builds where its check will look. As root with a sandbox user (the GPU machine),
that is the source's private folder under the sandbox's cache root
(``build_locks.private_build_root``), handed to the sandbox user after the build; otherwise a
folder of its own under ``TORCH_EXTENSIONS_DIR`` (``sandbox.check_build_folder`` says which).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recheck import finals, task_name  # noqa: E402  # pyright: ignore[reportMissingImports]

from upskills.trace import read_trace  # noqa: E402
from upskills.verify.build_locks import clear_stale_locks, hand_over  # noqa: E402
from upskills.verify.sandbox import check_build_folder  # noqa: E402


def sources(folders: list[Path], final: bool) -> list[tuple[str, str]]:
    """(folder name, kernel source) of each folder whose kernel builds a CUDA extension."""
    out = []
    for folder in folders:
        if final:
            end = read_trace(folder / "trace.jsonl").end
            src = end.best_kernel_source if end else None
        else:
            state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
            src = state.get("current_source")
        if src and "load_inline" in src:
            out.append((folder.name, src))
    return out


def ablation_sources(
    traces: Path, cache: Path, gpu: str | None = None, also: tuple[Path, ...] = ()
) -> list[tuple[str, str]]:
    """(name, kernel source) of each CUDA kernel the ablation still has to judge on ``gpu``."""
    from ablation_prescreen import pending  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    from upskills.distill.ablate import kernel_hash  # noqa: PLC0415

    return [
        (f"{Path(task).stem}-{kernel_hash(src)[:12]}", src)
        for task, _, src in pending(traces, cache, gpu, also)
        if "load_inline" in src
    ]


_RUNNING: dict[subprocess.Popen[str], Path] = {}
"""Builds in flight and their source's build folder: killed with this script, their folders
removed."""


def build(name: str, src: str, timeout: float) -> str:
    """Run one kernel module from a file of its own (Triton's ``jit`` needs a real file)."""
    t0 = time.monotonic()
    folder, ids = check_build_folder(src)  # where a check of this source looks for its build
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name.replace('/', '_')}.py"
        path.write_text(src, encoding="utf-8")
        proc = subprocess.Popen(
            [sys.executable, str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its compiler processes are killed with it
            env={**os.environ, "TORCH_EXTENSIONS_DIR": str(folder)},
        )
        _RUNNING[proc] = folder
        try:
            _, err = proc.communicate(timeout=timeout)
            ok = proc.returncode == 0
            status = "built" if ok else f"failed: {err.strip()[-200:]!r}"
        except subprocess.TimeoutExpired:
            _stop(proc, folder)
            status = f"timed out after {timeout:.0f} s"
        finally:
            _RUNNING.pop(proc, None)
    if ids is not None and folder.exists():
        hand_over(folder.parent, *ids)  # the source's private folder, for its checks' builds
    return f"{name}: {status} ({time.monotonic() - t0:.0f} s)"


def _stop(proc: subprocess.Popen[str], folder: Path) -> None:
    """Kill a build and its compilers, then remove its source's build folder: the lock it
    leaves (the checks run as another user, who would wait on this user's lock for ever) and
    what it had half written (a linker killed mid-way can leave a library newer than its
    sources, which ninja would then take as built)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    shutil.rmtree(folder, ignore_errors=True)
    clear_stale_locks()


def _on_term(signum: int, _frame: object) -> None:
    """Stopped by a budget's ``timeout``: no build may go on writing the cache after this
    script."""
    running = list(_RUNNING.items())
    for proc, folder in running:
        _stop(proc, folder)
    print(f"stopped by signal {signum}: {len(running)} builds killed, not built", flush=True)
    os._exit(124)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help="session folders (their current kernel)")
    ap.add_argument("--finals", type=Path, help="a corpus root: each task's final kernel instead")
    ap.add_argument("--tasks", default=None, help="with --finals: only these tasks")
    ap.add_argument("--ablation", type=Path, help="an ablation cache: the kernels still to judge")
    ap.add_argument(
        "--ablation-read", type=Path, action="append", default=[], help="another GPU's cache"
    )
    ap.add_argument("--gpu", default=None, help="with --ablation: the GPU it runs on")
    ap.add_argument(
        "--limit",
        type=int,
        default=None,
        help="with --ablation: only the first N (the order "
        "the ablation judges them in), when the call has time to judge no more",
    )
    ap.add_argument("--traces", type=Path, default=Path("traces/corpus-live"))
    ap.add_argument("--timeout", type=float, default=240)
    args = ap.parse_args()
    if args.ablation:
        jobs = ablation_sources(args.traces, args.ablation, args.gpu, tuple(args.ablation_read))
        jobs = jobs[: args.limit] if args.limit is not None else jobs
    elif args.finals:
        folders = finals(sorted(p.parent for p in args.finals.glob("*/state.json")))
        if args.tasks:
            wanted = set(args.tasks.split(","))
            folders = [f for f in folders if task_name(f) in wanted]
        jobs = sources(folders, final=True)
    else:
        jobs = sources(args.folders, final=False)
    signal.signal(signal.SIGTERM, _on_term)
    for lock in clear_stale_locks():
        print(f"removed a stale build lock no process held: {lock}", flush=True)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        for line in pool.map(lambda j: build(j[0], j[1], args.timeout), jobs):
            print(line, flush=True)
    print(f"{len(jobs)} extensions in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
