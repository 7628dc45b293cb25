"""The teacher-corpus report: what a set of traces shows, task by task, against hardware ceilings.

Traces are grouped by task: a task worked in several sessions (a second session after a verifier
bug rejected the first one's submission) is one row, its verdict history kept session by session.
Every number comes from the traces (verdict timings, speedups and environments) and from the
tasks' main variants built on torch's ``meta`` device (sizes only, no data). A trace in a session
folder is sized with the task embedded in the folder's ``state.json`` (so a KernelBench task whose
file is absent still has bytes and FLOPs); any other trace with ``load_task(name)``. The only
constants are the two ceilings: copy bandwidth (read + write bytes) and the dense fp16
``torch.matmul`` peak, read from a ceilings file or built-in values measured on this workplace's
H200, either overridable. It does not re-run or re-time anything.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from upskills.report.corpus_ceilings import (
    COPY_BANDWIDTH_GBS,
    PEAK_TFLOPS,
    CorpusCeilings,
)
from upskills.report.corpus_markdown import history_text, render_corpus_markdown
from upskills.report.corpus_plot import plot_corpus
from upskills.report.corpus_recheck import RECHECK_TOLERANCE, Recheck, load_rechecks, use_recheck
from upskills.report.corpus_tasks import origin_kind, resolve_task, task_work
from upskills.report.render import PLOTS_SKIPPED, plots_available
from upskills.trace import iter_trace_files, read_trace
from upskills.trace.attempts import attempts_of
from upskills.trace.events import ToolResult
from upskills.trace.reader import TraceFile
from upskills.trace.stats import kernel_language
from upskills.verify.verdict import Verdict

MEMORY_BOUND = {
    "elementwise", "softmax", "norm", "transpose", "copy", "reduction", "scan", "gather",
    "loss", "atomics", "fusion", "conv",
}  # fmt: skip
"""Tags whose kernels are judged by achieved bandwidth."""
COMPUTE_BOUND = {"gemm", "attention"}
"""Tags whose kernels are judged by achieved TFLOP/s (these win over MEMORY_BOUND)."""
GEMM_TARGET = 0.9
"""A GEMM is counted when its speedup over torch.matmul (the task's eager reference) is at
least this (issue 10's bar for the fp16 GEMM)."""
BANDWIDTH_TARGET = 0.85
"""Memory-bound kernels are counted when they reach this fraction of the copy bandwidth (issue
10's bar); below it they are shortfalls."""
STAGES = {"check": 0, "benchmark": 1, "profile": 1, "submit": 2}
"""How far along the verifier a tool's verdict goes; a failure is cleared by a pass as far."""
UNCHANGED_NOTE = "failed then passed unchanged: not the kernel's fault"
"""Label of a failure whose very kernel (same hash) passed later, e.g. a verifier bug."""


class TaskRow(BaseModel):
    """One task: its attempts over every session and its final kernel against the ceilings."""

    model_config = ConfigDict(extra="forbid")

    task: str
    """Task name (from run_start)."""
    task_hash: str = ""
    """Task hash from the last session's run_start."""
    traces: list[str] = Field(default_factory=list)
    """Trace files, one per session, in the order the sessions started."""
    sessions: int = 0
    """Number of sessions (traces) on this task."""
    origin: str | None = None
    """``builtin``, ``kernelbench``, or the task's origin string; None when the task is unknown."""
    language: str | None = None
    """Final kernel's language: ``cuda`` (``load_inline``), ``triton``, else None."""
    tags: list[str] = Field(default_factory=list)
    """Task tags."""
    bound: str | None = None
    """``memory`` or ``compute`` (by tag), None when neither applies."""
    outcome: str | None = None
    """``solved`` when any session solved it, else the last session's run_end outcome (or None)."""
    session_outcomes: list[str | None] = Field(default_factory=list)
    """Each session's run_end outcome, in order; None for a session with no run_end."""
    attempts: int = 0
    """Distinct kernels written over all sessions (re-writing a kernel is not a new attempt)."""
    history: list[list[str]] = Field(default_factory=list)
    """Per session, one entry per kernel in order: ``FAIL <class>``, ``PASS <speedup>x``, ...."""
    repaired_failures: int = 0
    """Failing attempts followed by a later attempt, of another kernel, that passed."""
    unchanged_failures: int = 0
    """Failing attempts whose same kernel (same hash) passed later: not the kernel's fault."""
    final_kernel: str | None = None
    """Hash of the best passing submitted kernel over all sessions, else the best passing one."""
    final_from: str | None = None
    """``submit`` or ``best``: how the final kernel was chosen."""
    median_ms: float | None = None
    """Final kernel's median time at the main variant."""
    speedup_eager: float | None = None
    """Eager median / final kernel median."""
    speedup_compile: float | None = None
    """torch.compile median / final kernel median."""
    bytes: int | None = None
    """Minimum traffic: every input and parameter read once, every output written once."""
    flops: float | None = None
    """Floating-point operations of the main variant (gemm and attention only)."""
    gbs: float | None = None
    """Achieved bandwidth, bytes / median, in GB/s (memory-bound tasks)."""
    pct_copy: float | None = None
    """Achieved bandwidth as a percentage of the copy ceiling."""
    pct_copy_at_size: float | None = None
    """The same against a copy of the kernel's own bytes under the same timer (the ceilings'
    ``copy_by_size``; :mod:`~upskills.report.corpus_ceilings`), when there is one."""
    tflops: float | None = None
    """Achieved TFLOP/s (compute-bound tasks)."""
    pct_peak: float | None = None
    """Achieved TFLOP/s as a percentage of the matmul peak."""
    times_from: str | None = None
    """``trace`` (the final kernel's verdict) or ``recheck`` (a later re-check of that kernel)."""
    recheck_ratio: float | None = None
    """The re-check's speedup vs eager over the trace's recorded one, when its file gives it."""
    notes: list[str] = Field(default_factory=list)
    """Anything that makes a number missing or suspect, and failures passed unchanged later."""


class JudgeEnvironment(BaseModel):
    """One distinct machine and software combination that judged verdicts (a verdict's ``env``)."""

    model_config = ConfigDict(extra="forbid")

    gpu: str = ""
    """GPU name."""
    torch: str = ""
    """torch version."""
    triton: str = ""
    """triton version."""
    cuda: str = ""
    """CUDA version torch was built with."""
    verdicts: int = 0
    """Verdicts judged in this environment."""


class Geomean(BaseModel):
    """Geometric-mean speedups of the final kernels of one group of solved tasks."""

    model_config = ConfigDict(extra="forbid")

    by: str
    """``all``, ``language`` or ``origin``."""
    group: str
    """``all``; ``cuda``/``triton``/``other``; ``builtin``/``kernelbench``/... ."""
    tasks: int
    """Solved tasks in the group with a timed final kernel."""
    vs_eager: float | None = None
    """Geomean of eager median / kernel median over those tasks."""
    tasks_with_compile: int = 0
    """Of those, tasks with a torch.compile baseline."""
    vs_compile: float | None = None
    """Geomean of torch.compile median / kernel median over those."""


class CorpusReport(BaseModel):
    """The whole report, as written to ``--json``."""

    model_config = ConfigDict(extra="forbid")

    command: str
    """Command that produced the report."""
    environments: list[JudgeEnvironment] = Field(default_factory=list)
    """Distinct GPU/torch/triton/CUDA combinations of the verdicts (the machines that judged)."""
    agents: list[str] = Field(default_factory=list)
    """``role/name`` of the agents that produced the traces (from run_start)."""
    ceilings: CorpusCeilings = Field(default_factory=CorpusCeilings)
    """Ceilings used."""
    recheck_files: list[str] = Field(default_factory=list)
    """Re-check files whose times replace the traces' for the final kernels they re-checked."""
    rows: list[TaskRow] = Field(default_factory=list)
    """One row per task."""
    totals: dict[str, int] = Field(default_factory=dict)
    """Counts per task: tasks, sessions, solved, repaired, as fast as eager, at 85%, GEMMs."""
    geomeans: list[Geomean] = Field(default_factory=list)
    """Geomean speedups over solved tasks: all, by kernel language, by task origin."""
    shortfalls: list[str] = Field(default_factory=list)
    """Tasks that miss a target, with the attempts their sessions show."""
    plot: str | None = None
    """The plot's file name, beside the Markdown; None when none was written (no matplotlib)."""


@dataclass
class _Kernel:
    """One kernel in one session, with its verdicts numbered in order over all sessions."""

    session: int
    hash: str
    verdicts: list[tuple[int, str, Verdict]] = field(default_factory=list)
    """``(position over all sessions, tool, verdict)``."""

    def first_failure(self) -> tuple[int, str, Verdict] | None:
        """The first failing verdict, with its position and tool."""
        return next((x for x in self.verdicts if not x[2].passed), None)

    def passes_after(self, position: int, tool: str) -> bool:
        """A verdict after ``position``, at ``tool``'s stage or a later one, passed."""
        stage = STAGES.get(tool, 0)
        return any(
            v.passed and at > position and STAGES.get(t, 0) >= stage for at, t, v in self.verdicts
        )

    def ok(self) -> bool:
        """Judged, and any failure was passed later in this session by this same kernel."""
        failed = self.first_failure()
        return bool(self.verdicts) and (failed is None or self.passes_after(*failed[:2]))

    def entry(self) -> str:
        """History entry: ``FAIL <class>``, ``PASS <speedup>x``, ``PASS`` or ``UNCHECKED``.

        A failure that this very kernel passed later in the session reads ``FAIL <class>, then
        PASS ...``.
        """
        if not self.verdicts:
            return "UNCHECKED"
        failed = self.first_failure()
        fail = f"FAIL {failed[2].error_class or 'unknown'}" if failed else ""
        if not self.ok():
            return fail
        timed = [v for _, _, v in self.verdicts if v.passed and v.speedup_eager is not None]
        passed = f"PASS {timed[-1].speedup_eager:.2f}x" if timed else "PASS"
        return f"{fail}, then {passed}" if fail else passed


def _kernels(traces: Sequence[TraceFile]) -> tuple[list[_Kernel], dict[str, str]]:
    """Kernels per session in order of first writing, and the kernel sources the traces carry."""
    kernels: list[_Kernel] = []
    sources: dict[str, str] = {}
    position = 0
    for session, trace in enumerate(traces):
        mine: dict[str, _Kernel] = {}
        for a in attempts_of(trace.events):
            if a.kernel_source:
                sources.setdefault(a.kernel_hash, a.kernel_source)
            if a.kernel_hash not in mine:
                mine[a.kernel_hash] = _Kernel(session, a.kernel_hash)
                kernels.append(mine[a.kernel_hash])
            for tool, v in zip(a.verdict_tools, a.verdicts, strict=True):
                mine[a.kernel_hash].verdicts.append((position, tool, v))
                position += 1
    return kernels, sources


def _timed(vs: Iterable[Verdict]) -> Verdict | None:
    timed = [v for v in vs if v.passed and v.timing is not None]
    return timed[-1] if timed else None


def _final(kernels: list[_Kernel]) -> tuple[Verdict | None, str | None]:
    """The best kernel's latest timed passing submit verdict, else its latest timed passing one."""
    by_hash: dict[str, list[tuple[str, Verdict]]] = {}
    for k in kernels:
        by_hash.setdefault(k.hash, []).extend((tool, v) for _, tool, v in k.verdicts)
    for how in ("submit", "best"):
        latest = [
            v
            for vs in by_hash.values()
            if (v := _timed(v for tool, v in vs if how == "best" or tool == "submit"))
        ]
        if latest:
            return max(latest, key=lambda v: v.speedup_eager or 0.0), how
    return None, None


def _classify_failures(row: TaskRow, kernels: list[_Kernel]) -> None:
    """Count failures passed later by the same kernel (noted) and failures repaired by another.

    "Passed later" needs a passing verdict at the failing tool's stage or a later one: a guard
    failure at ``submit`` is not cleared by a later ``check``.
    """
    for i, k in enumerate(kernels):
        failed = k.first_failure()
        if failed is None:
            continue
        at, tool, verdict = failed
        if any(j.passes_after(at, tool) for j in kernels if j.hash == k.hash):
            row.unchanged_failures += 1
            row.notes.append(
                f"session {k.session + 1}, {tool}: FAIL {verdict.error_class or 'unknown'} of "
                f"{k.hash}, {UNCHANGED_NOTE}"
            )
        elif any(j.ok() and j.hash != k.hash for j in kernels[i + 1 :]):
            row.repaired_failures += 1


def task_row(
    traces: Sequence[TraceFile],
    copy_bandwidth_gbs: float = COPY_BANDWIDTH_GBS,
    peak_tflops: float = PEAK_TFLOPS,
    rechecks: Mapping[str, Recheck] | None = None,
    ceilings_gpu: str | None = None,
) -> TaskRow:
    """One row of the report for one task's sessions.

    Args:
        traces: the task's traces, one per session, in the order the sessions started.
        copy_bandwidth_gbs: copy ceiling, GB/s.
        peak_tflops: matmul peak, TFLOP/s.
        rechecks: re-checks by kernel hash; the final kernel's, if there, gives its times.
        ceilings_gpu: the GPU the ceilings were measured on (a re-check on another is noted).

    Returns:
        The row; ``notes`` says why any number is missing.

    Raises:
        ValueError: a trace has no run_start (names the file), or no traces are given.
    """
    starts = [t.start for t in traces]
    for trace, start in zip(traces, starts, strict=True):
        if start is None:
            raise ValueError(f"{trace.path}: no run_start event; cannot tell which task it solves")
    if not traces or starts[-1] is None:
        raise ValueError("task_row needs at least one trace")
    last = starts[-1]
    row = TaskRow(task=last.task, task_hash=last.task_hash, sessions=len(traces))
    row.traces = [str(t.path) for t in traces]
    row.session_outcomes = [t.end.outcome if t.end else None for t in traces]
    solved = "solved" in row.session_outcomes
    row.outcome = "solved" if solved else row.session_outcomes[-1]
    if len({s.task_hash for s in starts if s is not None}) > 1:
        row.notes.append("sessions started on different task hashes")
    kernels, sources = _kernels(traces)
    row.attempts = len({k.hash for k in kernels})
    row.history = [[k.entry() for k in kernels if k.session == s] for s in range(len(traces))]
    _classify_failures(row, kernels)
    final, row.final_from = _final(kernels)
    task = resolve_task(traces, row.notes)
    if task is not None:
        row.tags, row.origin = list(task.tags), origin_kind(task.origin)
        if task.hash != last.task_hash:
            row.notes.append(f"task changed since the trace ({last.task_hash} -> {task.hash})")
        if COMPUTE_BOUND & set(task.tags):
            row.bound = "compute"
        elif MEMORY_BOUND & set(task.tags):
            row.bound = "memory"
        try:
            row.bytes, row.flops = task_work(task)
        except Exception as exc:  # noqa: BLE001 - a reference that cannot be sized loses its GB/s
            row.notes.append(f"sizes unavailable: {type(exc).__name__}: {exc}")
    if final is None or final.timing is None:
        row.notes.append("no passing timed kernel")
        return row
    row.final_kernel, row.median_ms = final.candidate_hash, final.timing.median_ms
    row.language = kernel_language(sources.get(final.candidate_hash))
    row.speedup_eager, row.speedup_compile = final.speedup_eager, final.speedup_compile
    row.times_from = "trace"
    benchmarks = [
        v
        for k in kernels
        if k.hash == final.candidate_hash
        for _, tool, v in k.verdicts
        if tool == "benchmark" and v.passed and v.speedup_eager is not None
    ]
    recheck = (rechecks or {}).get(final.candidate_hash)
    use_recheck(row, recheck, ceilings_gpu, benchmarks)
    seconds = row.median_ms * 1e-3
    if row.bound == "memory" and row.bytes is not None:
        row.gbs = row.bytes / seconds / 1e9
        row.pct_copy = 100.0 * row.gbs / copy_bandwidth_gbs
    if row.bound == "compute" and row.flops is not None:
        row.tflops = row.flops / seconds / 1e12
        row.pct_peak = 100.0 * row.tflops / peak_tflops
    return row


def _shortfalls(row: TaskRow) -> list[str]:
    misses = []
    if row.outcome != "solved":
        ends = " | ".join(o or "no run_end" for o in row.session_outcomes) or "no run_end"
        misses.append(f"not solved ({ends})")
    if row.speedup_eager is not None and row.speedup_eager < 1.0:
        misses.append(f"slower than eager ({row.speedup_eager:.3f}x)")
    if row.pct_copy is not None and row.pct_copy < 100 * BANDWIDTH_TARGET:
        at_size = (
            f" ({row.pct_copy_at_size:.1f}% of a copy of its own {row.bytes / 1e6:.0f} MB)"
            if row.pct_copy_at_size is not None and row.bytes
            else ""
        )
        misses.append(f"{row.pct_copy:.1f}% of copy bandwidth{at_size}")
    if "gemm" in row.tags and (row.speedup_eager or 0.0) < GEMM_TARGET:
        misses.append(f"GEMM below {GEMM_TARGET}x torch.matmul")
    return misses


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def geomeans(rows: Iterable[TaskRow]) -> list[Geomean]:
    """Geomean speedups of solved tasks' final kernels: all, then by language, then by origin."""
    solved = [r for r in rows if r.outcome == "solved" and r.speedup_eager is not None]
    groups: list[tuple[str, str, list[TaskRow]]] = [("all", "all", solved)]
    for by in ("language", "origin"):
        keys = sorted({getattr(r, by) or "other" for r in solved})
        groups += [(by, k, [r for r in solved if (getattr(r, by) or "other") == k]) for k in keys]
    out = []
    for by, group, rs in groups:
        compiled = [r.speedup_compile for r in rs if r.speedup_compile is not None]
        out.append(
            Geomean(
                by=by,
                group=group,
                tasks=len(rs),
                vs_eager=_geomean([r.speedup_eager for r in rs if r.speedup_eager is not None]),
                tasks_with_compile=len(compiled),
                vs_compile=_geomean(compiled),
            )
        )
    return out


def _environments(traces: Iterable[TraceFile]) -> list[JudgeEnvironment]:
    seen: dict[tuple[str, str, str, str], int] = {}
    for trace in traces:
        for e in trace.events:
            if not isinstance(e, ToolResult) or e.verdict is None:
                continue
            env = e.verdict.env
            gpu = env.get("gpu") or e.verdict.gpu or ""
            key = (gpu, env.get("torch", ""), env.get("triton", ""), env.get("cuda", ""))
            if any(key):
                seen[key] = seen.get(key, 0) + 1
    return [
        JudgeEnvironment(gpu=g, torch=t, triton=tr, cuda=c, verdicts=n)
        for (g, t, tr, c), n in sorted(seen.items())
    ]


def build_corpus_report(
    paths: Iterable[str | Path],
    command: str,
    ceilings: CorpusCeilings | None = None,
    recheck_files: Sequence[str | Path] = (),
) -> CorpusReport:
    """Read traces, group them by task and compute the report.

    Args:
        paths: trace files or folders (searched recursively for ``*.jsonl``).
        command: the command line to record in the report.
        ceilings: ceilings to divide by (default: the built-in ones).
        recheck_files: re-check rows (JSON lines) whose times replace the final kernels'; a
            kernel in several files takes the last file's row.

    Returns:
        The report.

    Raises:
        ValueError: a trace has no run_start (names the file).
    """
    ceilings = ceilings or CorpusCeilings()
    rechecks = {h: r for f in recheck_files for h, r in load_rechecks(f).items()}
    rep = CorpusReport(command=command, ceilings=ceilings)
    rep.recheck_files = [str(f) for f in recheck_files]
    by_task: dict[str, list[TraceFile]] = {}
    for path in iter_trace_files(paths):
        trace = read_trace(path)
        if trace.start is None:
            raise ValueError(f"{path}: no run_start event; cannot tell which task it solves")
        by_task.setdefault(trace.start.task, []).append(trace)
    traces = [t for ts in by_task.values() for t in ts]
    rep.agents = sorted({f"{t.start.agent_role}/{t.start.agent_name}" for t in traces if t.start})
    rep.environments = _environments(traces)
    for sessions in by_task.values():
        sessions.sort(key=lambda t: t.start.ts if t.start else "")
        rep.rows.append(
            task_row(
                sessions, ceilings.copy_bandwidth_gbs, ceilings.peak_tflops, rechecks, ceilings.gpu
            )
        )
    rows = rep.rows
    solved = [r for r in rows if r.outcome == "solved"]
    memory = [r for r in rows if r.bound == "memory"]
    by_size = ceilings.copy_by_size
    for r in memory:
        share = by_size.share_at(r.bytes) if by_size and r.bytes else None
        if share and r.pct_copy is not None:
            r.pct_copy_at_size = r.pct_copy / share
    gemms = [r for r in rows if "gemm" in r.tags]
    rep.totals = {
        "tasks": len(rows),
        "sessions": len(traces),
        "solved": len(solved),
        "with_repaired_failure": sum(r.repaired_failures > 0 for r in rows),
        "with_unchanged_failure": sum(r.unchanged_failures > 0 for r in rows),
        "solved_at_least_eager": sum((r.speedup_eager or 0.0) >= 1.0 for r in solved),
        "solved_at_least_compile": sum((r.speedup_compile or 0.0) >= 1.0 for r in solved),
        "memory_bound": len(memory),
        "memory_bound_at_85pct_copy": sum(
            (r.pct_copy or 0.0) >= 100 * BANDWIDTH_TARGET for r in memory
        ),
        **(
            {
                "memory_bound_sized": sum(r.pct_copy_at_size is not None for r in memory),
                "memory_bound_at_85pct_copy_at_size": sum(
                    (r.pct_copy_at_size or 0.0) >= 100 * BANDWIDTH_TARGET for r in memory
                ),
            }
            if by_size
            else {}
        ),
        "final_times_from_recheck": sum(r.times_from == "recheck" for r in rows),
        "recheck_with_ratio": sum(r.recheck_ratio is not None for r in rows),
        "recheck_within_tolerance": sum(
            r.recheck_ratio is not None and abs(r.recheck_ratio - 1) <= RECHECK_TOLERANCE
            for r in rows
        ),
        "gemm": len(gemms),
        "gemm_at_0.9x_matmul": sum((r.speedup_eager or 0.0) >= GEMM_TARGET for r in gemms),
    }
    rep.geomeans = geomeans(rows)
    for r in rows:
        if misses := _shortfalls(r):
            rep.shortfalls.append(f"{r.task}: {'; '.join(misses)} (attempts: {history_text(r)})")
    return rep


def write_corpus_report(
    paths: Iterable[str | Path],
    out: str | Path,
    json_out: str | Path | None = None,
    command: str | None = None,
    ceilings: CorpusCeilings | None = None,
    recheck_files: Sequence[str | Path] = (),
) -> CorpusReport:
    """Compute the report and write it as Markdown (and JSON when ``json_out`` is given).

    With matplotlib installed (the ``plots`` extra), the plot (``corpus_plot``) is written
    beside the Markdown with the same name and ``.png``, and the Markdown shows it.

    Args:
        paths: trace files or folders.
        out: Markdown file to write.
        json_out: JSON file to write, or None.
        command: command line to record (default: the equivalent ``upskills traces report``).
        ceilings: ceilings to divide by (default: the built-in ones).
        recheck_files: re-check files whose rows replace the final kernels' times (see
            :func:`load_rechecks`).

    Returns:
        The report.
    """
    paths = [str(p) for p in paths]
    if command is None:
        command = shlex.join(["upskills", "traces", "report", *paths, "--out", str(out)])
    rep = build_corpus_report(paths, command, ceilings, recheck_files)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    plot_note = None
    if plots_available():
        png = Path(out).with_suffix(".png")
        plot_corpus(rep, png, BANDWIDTH_TARGET)
        rep.plot = png.name
    else:
        plot_note = PLOTS_SKIPPED
    Path(out).write_text(render_corpus_markdown(rep, plot_note), encoding="utf-8")
    if json_out is not None:
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(rep.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return rep
