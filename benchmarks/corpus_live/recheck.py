"""Re-check each live-corpus session's final kernel with ``upskills check``, in a new process.

For every session folder (``state.json`` + ``trace.jsonl``) that ended with a best kernel, it
writes that kernel to a file and judges it with the real command, ``python -m upskills check
--batch LIST --device cuda --json`` (each entry: the built-in task name or the KernelBench file
the session loaded, and the kernel's file; one process per GPU, whose verifier starts its worker
processes once), then compares the new speedup vs eager with the one the trace recorded. With
``--finals``, only each task's final kernel (the one ``upskills traces report`` shows). With
``--warm N``, first a correctness-only pass (N processes per GPU) builds every CUDA extension
into the verifier's compile cache; the timed checks then run one at a time per GPU, so no two
timings share a GPU. Rows are appended to ``--out`` (JSON lines) as they come; a summary
line at the end. A session that already has a row without an error in ``--out`` is skipped, so
a run cut by a call's time limit goes on where it stopped when given its file again. With
``--recorded EARLIER.jsonl``, each session's speedup and flush are read from an earlier
re-check's rows instead of the trace: a read-flush re-check is then compared with an earlier
read-flush re-check (the traces' verdicts were all timed after the write flush).

    python benchmarks/corpus_live/recheck.py traces/corpus-live --finals --out recheck.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from upskills.report.corpus import build_corpus_report
from upskills.trace import read_trace
from upskills.trace.attempts import attempts_of


def recorded_speedup(trace) -> float | None:  # noqa: ANN001 - a TraceFile
    """The speedup vs eager of the final kernel's latest benchmark verdict (not its submission)."""
    return recorded(trace)[0]


def recorded(trace) -> tuple[float | None, str]:  # noqa: ANN001 - a TraceFile
    """The final kernel's recorded speedup vs eager (:func:`recorded_speedup`), and the L2 flush
    its verdict was timed after (``write`` when no verdict says otherwise).

    A submission can run in the same GPU call as a re-check; the benchmark verdict came from
    an earlier call, so comparing with it tests reproducibility. The latest, as the report
    takes the kernel's latest submission: a verdict the timer has since been mended for is
    not the kernel's record once the kernel is timed again (gemm_fp16's s3 and s5).
    """
    end = trace.end
    if end is None:
        return None, "write"
    latest, flush = None, "write"
    for attempt in attempts_of(trace.events):
        if attempt.kernel_hash != end.best_kernel_hash:
            continue
        for tool, v in zip(attempt.verdict_tools, attempt.verdicts, strict=True):
            if tool == "benchmark" and v.passed and v.speedup_eager is not None:
                latest = v.speedup_eager
                flush = v.timing.flush if v.timing is not None else "write"
    return (latest, flush) if latest is not None else (end.best_speedup, "write")


def finals(folders: list[Path]) -> list[Path]:
    """Per task, the session holding the final kernel of ``upskills traces report``.

    The report's final kernel is the best passing submitted kernel over all sessions (else the
    best passing one); re-checking any other kernel would time one the report does not show.
    The session is one whose trace ended with that kernel as its best, preferring one whose
    benchmark verdict timed it, and of those the latest (the report takes the kernel's latest
    submission, so its latest benchmark is the record to reproduce).
    """
    traces = {str(f / "trace.jsonl"): f for f in folders}
    report = build_corpus_report(list(traces), command="recheck")
    out = []
    for row in report.rows:
        holding = []
        for order, path in enumerate(row.traces):
            trace = read_trace(Path(path))
            if row.final_kernel and trace.end and trace.end.best_kernel_hash == row.final_kernel:
                holding.append((recorded_speedup(trace) is None, -order, path))
        # several sessions can end with the same kernel (a benchmark run again after an
        # out-of-memory failure, or after a mend of the timer, in a new session): the latest
        # whose benchmark verdict timed it, so the re-check has a recorded speedup to compare with
        if holding:
            out.append(traces[min(holding)[2]])
    return sorted(out)


def task_name(folder: Path) -> str:
    """The task a session folder worked on."""
    return json.loads((folder / "state.json").read_text(encoding="utf-8"))["task"]["name"]


def by_tasks(folders: list[Path], names: list[str]) -> list[Path]:
    """The folders of these tasks, in the order given; an unknown name is an error, not a skip.

    A name is the task's (``40_LayerNorm``), not its folder's (``kb1_40_layernorm``): the ninth
    device session's re-check dropped a folder name without a word.
    """
    by_task = {task_name(f): f for f in folders}
    missing = [n for n in names if n not in by_task]
    if missing:
        raise ValueError(
            f"unknown task name(s) {', '.join(missing)}; the tasks here are "
            f"{', '.join(sorted(by_task))}"
        )
    return [by_task[n] for n in names]


def missing_task_files(folders: list[Path]) -> list[str]:
    """The task files (KernelBench problems) these sessions loaded that are not here.

    Checked before anything is built or timed: the twenty-first device session's re-check ran
    without ``.kb`` carried, and its 15 KernelBench rows each failed on the missing file.
    """
    missing = []
    for folder in folders:
        task = json.loads((folder / "state.json").read_text(encoding="utf-8"))["task"]
        origin = task.get("origin", "builtin")
        if origin != "builtin" and not Path(origin).is_file():
            missing.append(origin)
    return missing


def base_row(folder: Path, gpu: str) -> tuple[dict[str, Any], str, str | None]:
    """A session's result row so far, the task spec ``upskills check`` takes, its final kernel."""
    state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    task = state["task"]
    spec = task["name"] if task.get("origin", "builtin") == "builtin" else task["origin"]
    trace = read_trace(folder / "trace.jsonl")
    end = trace.end
    row: dict[str, Any] = {"session": folder.name, "task": task["name"], "gpu_index": gpu}
    if end is None or not end.best_kernel_source:
        return row | {"error": "no final kernel in the trace"}, spec, None
    row["recorded_speedup"], row["recorded_flush"] = recorded(trace)
    return row, spec, end.best_kernel_source


def _ends(text: str, head: int = 400, tail: int = 1600) -> str:
    """A failure's message, its middle cut: a traceback's last lines say what went wrong."""
    return text if len(text) <= head + tail else f"{text[:head]} [...] {text[-tail:]}"


def row_from(row: dict[str, Any], verdict: dict[str, Any]) -> dict[str, Any]:
    """The row of a re-check: the new verdict's numbers beside the recorded speedup."""
    new = verdict.get("speedup_eager")
    timing = verdict.get("timing") or {}
    row = row | {
        "passed": verdict.get("passed"),
        "guard": verdict.get("guard"),
        "message": None if verdict.get("passed") else _ends(str(verdict.get("message", ""))),
        "speedup": new,
        "speedup_compile": verdict.get("speedup_compile"),
        "gpu": verdict.get("gpu"),
        "median_ms": timing.get("median_ms"),
        "clock_ms": timing.get("clock_ms"),
        # the late trial's GPU busy time the median was judged against (watched_speed.py)
        "watched_busy_ms": timing.get("watched_busy_ms"),
        "eager_ms": ((verdict.get("baselines") or {}).get("eager") or {}).get("median_ms"),
        "candidate_hash": verdict.get("candidate_hash"),
        # where a re-check's time goes (the judge's stages, the baselines)
        "wall_s": verdict.get("duration_s"),
        "stage_seconds": verdict.get("stage_seconds"),
    }
    recorded = row.get("recorded_speedup")
    if timing.get("flush", "write") != row.get("recorded_flush", "write"):
        recorded = None  # timed after another flush than the record: not a reproduction
    if new and recorded:
        row["ratio"] = round(new / recorded, 4)
        row["within_5pct"] = abs(new / recorded - 1) <= 0.05
    return row


def batch_lines(cmd: list[str], env: dict[str, str]) -> Iterator[str]:
    """The lines ``upskills check --batch`` prints, as it prints them."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        yield from proc.stdout


def earlier_records(path: Path) -> dict[str, tuple[float, str]]:
    """Session -> (speedup, flush) of an earlier re-check's passing rows (``--recorded``)."""
    out: dict[str, tuple[float, str]] = {}
    for number, row in enumerate(_rows(path), 1):
        if not isinstance(row, dict) or "session" not in row:
            raise ValueError(f"{path}:{number}: not a re-check row")
        if row.get("passed") and row.get("speedup"):
            out[row["session"]] = (float(row["speedup"]), str(row.get("flush", "write")))
    return out


def recheck_batch(
    folders: list[Path],
    gpu: str,
    timeout: float,
    timing: bool = True,
    fresh: frozenset[str] = frozenset(),
    device: str = "cuda",
    flush: str = "write",
    records: tuple[str, dict[str, tuple[float, str]]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Re-check these sessions' final kernels on ``gpu``, one ``upskills check --batch`` process.

    One verifier judges them one after another (its worker processes start once, not once a
    kernel); each check still runs in fresh forked children. ``fresh``: task names (or
    ``all``) whose baselines are timed again beside the kernel (``--fresh-baselines``).
    ``flush``: the L2 flush before each timed call (``upskills check --flush``), kept in the
    rows. ``records``: (file name, :func:`earlier_records`) whose speedups and flushes replace
    the traces' as what each row is compared with; a session not in them is compared with its
    trace. Rows come as the verdicts do.
    """
    with tempfile.TemporaryDirectory() as tmp:
        rows: dict[str, dict[str, Any]] = {}
        entries = []
        for folder in folders:
            row, spec, source = base_row(folder, gpu)
            if source is None:
                yield row
                continue
            if records is not None and folder.name in records[1]:
                row["recorded_speedup"], row["recorded_flush"] = records[1][folder.name]
                row["recorded_from"] = records[0]
            kernel = Path(tmp) / f"{folder.name}_final.py"
            kernel.write_text(source, encoding="utf-8")
            again = timing and ("all" in fresh or row["task"] in fresh)
            if again:
                row["fresh_baselines"] = True
            if timing:
                row["flush"] = flush
            rows[folder.name] = row
            entries.append(
                {"key": folder.name, "task": spec, "candidate": str(kernel)}
                | {"timing": timing, "fresh_baselines": again}
            )
        if not entries:
            return
        batch = Path(tmp) / "batch.jsonl"
        batch.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
        cmd = [sys.executable, "-m", "upskills", "check", "--batch", str(batch)]
        cmd += ["--device", device, "--json", "--timeout", str(timeout), "--flush", flush]
        if not timing:
            cmd += ["--seeds", "1"]
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
        # said first: a run its budget stops leaves at least which checks were under way
        print(f"GPU {gpu}: re-checking {', '.join(rows)}", file=sys.stderr, flush=True)
        for line in batch_lines(cmd, env):
            try:
                result = json.loads(line)
                row = rows.pop(result["key"])
            except (ValueError, KeyError):
                print(f"not a batch result: {line[:200]}", file=sys.stderr, flush=True)
                continue
            if result.get("verdict") is None:
                yield row | {"error": result.get("error") or "no verdict"}
            else:
                yield row_from(row, result["verdict"])
        for row in rows.values():  # the batch process stopped before these
            yield row | {"error": "the batch ended before this check"}


def _rows(path: Path) -> list[dict[str, Any]]:
    """The rows already in a re-check file (none when it does not exist)."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="folder of session folders")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gpus", default=None, help="GPU indices (default: all)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--finals", action="store_true", help="only each task's final kernel")
    ap.add_argument("--warm", type=int, default=3, help="compile-pass processes per GPU (0: none)")
    ap.add_argument("--tasks", default=None, help="only these task names (comma-separated)")
    ap.add_argument(
        "--fresh-baselines",
        default="",
        help="tasks (comma-separated, or all) whose baselines are timed again in the check",
    )
    ap.add_argument(
        "--flush",
        choices=("write", "read"),
        default="write",
        help="how L2 is flushed before each timed call (upskills check --flush)",
    )
    ap.add_argument(
        "--recorded",
        type=Path,
        default=None,
        help="an earlier re-check file: compare with its speedups, not the traces'",
    )
    args = ap.parse_args(argv)
    fresh = frozenset(args.fresh_baselines.split(",")) - {""}
    records = None
    if args.recorded is not None:
        try:
            records = (args.recorded.name, earlier_records(args.recorded))
        except (OSError, ValueError) as err:
            ap.error(f"--recorded: {err}")
    if args.gpus:
        gpus = args.gpus.split(",")
    else:
        import torch

        gpus = [str(i) for i in range(torch.cuda.device_count())]
    folders = sorted(p.parent for p in args.root.glob("*/state.json"))
    if args.finals:
        folders = finals(folders)
    if args.tasks:
        try:
            folders = by_tasks(folders, args.tasks.split(","))
        except ValueError as err:
            ap.error(str(err))
    absent = missing_task_files(folders)
    if absent:
        ap.error(
            f"{len(absent)} session(s) load their task from a file that is not here "
            f"({absent[0]}{', ...' if len(absent) > 1 else ''}): run from the checkout the "
            "corpus was made in, with the KernelBench checkout beside it (on the device: carry .kb)"
        )
    done = {r["session"] for r in _rows(args.out) if "error" not in r}
    if done:
        print(f"resuming: {len(done)} sessions already in {args.out}", flush=True)
        folders = [f for f in folders if f.name not in done]
    if args.warm:  # correctness only, several processes per GPU: every extension built
        slots = [g for g in gpus for _ in range(args.warm)]
        parts = [(folders[i :: len(slots)], g) for i, g in enumerate(slots)]
        with ThreadPoolExecutor(len(slots)) as pool:
            warm = [
                r
                for rs in pool.map(
                    lambda p: list(recheck_batch(p[0], p[1], args.timeout, timing=False)), parts
                )
                for r in rs
            ]
        passed = sum(1 for r in warm if r.get("passed"))
        print(f"compile pass: {passed}/{len(warm)} passed", flush=True)
    lock = threading.Lock()
    rows: list[dict[str, Any]] = []

    def one_gpu(i: int) -> None:  # timed: one batch per GPU, so no two timings share a GPU
        for row in recheck_batch(
            folders[i :: len(gpus)],
            gpus[i],
            args.timeout,
            fresh=fresh,
            flush=args.flush,
            records=records,
        ):
            with lock:
                rows.append(row)
                with open(args.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)

    with ThreadPoolExecutor(len(gpus)) as pool:
        list(pool.map(one_gpu, range(len(gpus))))
    compared = [r for r in rows if "within_5pct" in r]
    ok = sum(1 for r in compared if r["within_5pct"])
    print(f"{ok}/{len(compared)} final kernels re-checked within 5% of the recorded speedup")
    errors = [r for r in rows if "error" in r]
    if errors:  # no verdict: nothing to compare
        print(f"{len(errors)} not checked (first: {errors[0]['session']}: {errors[0]['error']})")
    left = len(rows) - len(compared) - len(errors)
    if left:  # a failed check, or another flush than the record's
        print(f"{left} not compared (no time, or another flush)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
