"""Run one round of the live teacher corpus on the GPU machine (issue 10).

A round is a list of session folders, each with the tools to run on the kernel the teacher
(an external coding agent) stored in it with ``upskills session call write_kernel`` after
reading the previous round's verdicts. Nothing here writes a kernel or a note: this script
only runs the verifier's tools in the sessions, so every verdict in a trace comes from the GPU
that the trace names. The teacher reads ``$OUT/round.txt``, writes its notes and next
attempts on its own machine, and starts the next round.

Round file, one session per line: ``FOLDER TOOL[,TOOL...]`` with tools among check,
benchmark, profile, submit, end (``#`` starts a comment). ``check`` runs first for every
session, in parallel (compiles and correctness: no timing), ``WORKERS`` per GPU; the timed
tools then run one session at a time per GPU. After a failing verdict (or a tool error) the
session's remaining tools are skipped, except ``end``.

    python benchmarks/corpus_live/round.py ROUND_FILE --out $OUT [--workers 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMED = ("benchmark", "profile", "submit")
KNOWN = ("check", *TIMED, "end")


@dataclass
class Item:
    """One session's work in the round."""

    folder: str
    tools: list[str]
    results: list[dict[str, Any]] = field(default_factory=list)


def parse_round(path: Path) -> list[Item]:
    """The round file's items; a clear error for an unknown tool or a missing session."""
    items: list[Item] = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        folder, _, tools = line.partition(" ")
        names = [t for t in tools.replace(" ", "").split(",") if t]
        bad = [t for t in names if t not in KNOWN]
        if bad or not names:
            sys.exit(f"{path}:{n}: tools must be among {', '.join(KNOWN)}: {raw!r}")
        if not (Path(folder) / "state.json").is_file():
            sys.exit(f"{path}:{n}: {folder} is not a session folder (no state.json)")
        items.append(Item(folder, names))
    return items


def scratch_copies(items: list[Item]) -> list[Item]:
    """The items on copies of their sessions in a temporary folder.

    A round off the GPU only tries the script: its CPU verdicts must never enter the corpus's
    traces (a dry run once wrote CPU checks and an ``end`` into three prepared sessions).
    """
    root = Path(tempfile.mkdtemp(prefix="round-dry-"))
    print(f"not on cuda: the round runs on copies of its sessions in {root}", flush=True)
    out = []
    for n, it in enumerate(items):
        copy = root / f"{n:02d}_{Path(it.folder).name}"
        shutil.copytree(it.folder, copy)
        out.append(Item(str(copy), list(it.tools)))
    return out


_VERIFIER: Any = None


def _init(gpus: Sequence[str], slot: Any) -> None:
    with slot.get_lock():
        index = slot.value
        slot.value += 1
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]


def _run(folder: str, tools: Sequence[str]) -> list[dict[str, Any]]:
    """Run ``tools`` in the session at ``folder``; after a failing verdict only ``end`` runs."""
    global _VERIFIER
    from upskills.agent.session import Session
    from upskills.verify import Verifier

    device = os.environ.get("ROUND_DEVICE", "cuda")
    if _VERIFIER is None:
        _VERIFIER = Verifier(device=device)
    out: list[dict[str, Any]] = []
    failed = False
    for tool in tools:
        if failed and tool != "end":
            continue
        t0 = time.perf_counter()
        try:
            session = Session.open(folder, device=device)
            if tool == "end":
                end = session.end()
                out.append({"tool": tool, "text": f"ended: {end.outcome}", "passed": None})
                continue
            outcome = session.call(tool, verifier=_VERIFIER)
        except Exception:  # recorded, and the round goes on with the other sessions
            out.append({"tool": tool, "text": traceback.format_exc(limit=6), "passed": False})
            failed = True
            continue
        verdict = outcome.verdict
        passed = verdict.passed if verdict is not None else outcome.error is None
        text = outcome.output if outcome.error is None else f"tool error: {outcome.error}"
        out.append(
            {
                "tool": tool,
                "passed": passed,
                "text": text,
                "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        failed = failed or not passed
    return out


def _label(passed: bool | None) -> str:
    return "done" if passed is None else "ok" if passed else "FAILED"


def _pool(n: int, gpus: Sequence[str]) -> ProcessPoolExecutor:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    slot = ctx.Value("i", 0)
    return ProcessPoolExecutor(n, mp_context=ctx, initializer=_init, initargs=(list(gpus), slot))


def write_results(items: list[Item], path: Path) -> None:
    """Every tool output so far, per session (rewritten after each step: a timeout loses none)."""
    with open(path, "w", encoding="utf-8") as fh:
        for it in items:
            fh.write(f"\n===== {it.folder}\n")
            for r in it.results:
                fh.write(f"--- {r['tool']} (gpu {r.get('gpu', '?')}, {r.get('seconds', '?')} s)\n")
                fh.write(r["text"].rstrip() + "\n")


def run_round(items: list[Item], gpus: Sequence[str], workers: int, log: Any, out: Path) -> None:
    """Checks in parallel, then the timed tools one session at a time per GPU."""

    def say(msg: str) -> None:
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    first = [it for it in items if it.tools[0] == "check"]
    t0 = time.perf_counter()
    with _pool(max(1, min(len(first), workers * len(gpus))), gpus) as pool:
        futures = {pool.submit(_run, it.folder, ["check"]): it for it in first}
        for done, fut in enumerate(as_completed(futures), 1):
            it = futures[fut]
            it.results.extend(fut.result())
            ok = it.results[-1]["passed"]
            say(
                f"[check {done}/{len(first)} {time.perf_counter() - t0:6.0f}s] {it.folder}: "
                f"{'passed' if ok else 'FAILED'}"
            )
            write_results(items, out / "round.txt")
    rest = []
    for it in items:
        tools = it.tools[1:] if it.tools[0] == "check" else it.tools
        if it.results and not it.results[-1]["passed"]:
            tools = [t for t in tools if t == "end"]  # a failed check: only the end runs
        if tools:
            rest.append((it, tools))
    with _pool(len(gpus), gpus) as pool:  # one session at a time per GPU: timings undisturbed
        futures2 = {pool.submit(_run, it.folder, tools): it for it, tools in rest}
        for done, fut in enumerate(as_completed(futures2), 1):
            it = futures2[fut]
            it.results.extend(fut.result())
            say(
                f"[timed {done}/{len(rest)} {time.perf_counter() - t0:6.0f}s] {it.folder}: "
                + ", ".join(f"{r['tool']} {_label(r['passed'])}" for r in it.results)
            )
            write_results(items, out / "round.txt")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("round_file", type=Path)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "round-out")))
    ap.add_argument("--workers", type=int, default=3, help="parallel checks per GPU")
    ap.add_argument("--gpus", default=None, help="comma-separated GPU indices (default: all)")
    ap.add_argument(
        "--device",
        default="cuda",
        help="cuda; cpu only to try the script itself (on copies of the sessions)",
    )
    args = ap.parse_args(argv)
    os.environ["ROUND_DEVICE"] = args.device
    items = parse_round(args.round_file)
    if args.device != "cuda":
        items = scratch_copies(items)
    if args.gpus or args.device == "cpu":
        gpus = (args.gpus or "").split(",")
    else:
        import torch

        gpus = [str(i) for i in range(torch.cuda.device_count())]
    if not gpus:
        sys.exit("no GPU: the live corpus is judged on the GPU")
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "round.log", "a", encoding="utf-8") as log:
        run_round(items, gpus, args.workers, log, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
