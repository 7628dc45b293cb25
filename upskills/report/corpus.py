"""The teacher-corpus report: what a set of traces shows, task by task, against hardware ceilings.

Every number comes from the traces (verdict timings and speedups, run_start environment) and
from the tasks' main variants built on torch's ``meta`` device (sizes only, no data). The only
constants are the two ceilings, both measured on this workplace's H200 and overridable: the
device-to-device copy bandwidth (read + write bytes) and the dense bf16/fp16 ``torch.matmul``
peak. It does not re-run or re-time anything.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from upskills.trace import iter_trace_files, read_trace
from upskills.trace.attempts import attempts_of
from upskills.trace.events import ToolResult
from upskills.trace.reader import TraceFile
from upskills.verify.verdict import Verdict

COPY_BANDWIDTH_GBS = 4300.0
"""H200 device-to-device copy, read + write bytes, measured on this workplace's GPU."""
PEAK_TFLOPS = 790.0
"""H200 dense bf16/fp16 torch.matmul peak, measured on this workplace's GPU."""
MEMORY_BOUND = {
    "elementwise", "softmax", "norm", "transpose", "copy", "reduction", "scan", "gather",
    "loss", "atomics", "fusion", "conv",
}  # fmt: skip
"""Tags whose kernels are judged by achieved bandwidth."""
COMPUTE_BOUND = {"gemm", "attention"}
"""Tags whose kernels are judged by achieved TFLOP/s (these win over MEMORY_BOUND)."""
GEMM_TOLERANCE = 1.2
"""A GEMM is "within 1.2x of torch.matmul" when eager median / kernel median >= 1 / 1.2."""
BANDWIDTH_TARGET = 0.8
"""Memory-bound kernels are counted when they reach this fraction of the copy bandwidth."""


class TaskRow(BaseModel):
    """One trace: one task's attempts and its final kernel against the ceilings."""

    model_config = ConfigDict(extra="forbid")

    task: str
    """Task name (from run_start)."""
    trace: str
    """Trace file."""
    tags: list[str] = Field(default_factory=list)
    """Task tags."""
    bound: str | None = None
    """``memory`` or ``compute`` (by tag), None when neither applies."""
    outcome: str | None = None
    """run_end outcome; None when the trace has no run_end."""
    attempts: int = 0
    """Distinct kernels written (re-writing an earlier kernel is not a new attempt)."""
    history: list[str] = Field(default_factory=list)
    """One entry per attempt, in order: ``FAIL <class>``, ``PASS <speedup>x``, ``PASS``."""
    repaired_failures: int = 0
    """Failing attempts followed by a later attempt that passed."""
    final_kernel: str | None = None
    """Hash of the submitted kernel (the last passing submit), else the fastest passing one."""
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
    tflops: float | None = None
    """Achieved TFLOP/s (compute-bound tasks)."""
    pct_peak: float | None = None
    """Achieved TFLOP/s as a percentage of the matmul peak."""
    notes: list[str] = Field(default_factory=list)
    """Anything that makes a number missing or suspect (task changed since the trace...)."""


class CorpusReport(BaseModel):
    """The whole report, as written to ``--json``."""

    model_config = ConfigDict(extra="forbid")

    command: str
    """Command that produced the report."""
    gpus: list[str] = Field(default_factory=list)
    """GPUs named by the verdicts."""
    versions: dict[str, list[str]] = Field(default_factory=dict)
    """torch and triton versions from the run_start environments."""
    agents: list[str] = Field(default_factory=list)
    """``role/name`` of the agents that produced the traces (from run_start)."""
    copy_bandwidth_gbs: float
    """Copy ceiling used, GB/s (read + write bytes)."""
    peak_tflops: float
    """Matmul peak used, TFLOP/s."""
    rows: list[TaskRow] = Field(default_factory=list)
    """One row per trace."""
    totals: dict[str, int] = Field(default_factory=dict)
    """Counts: tasks, solved, repaired, as fast as eager, memory-bound at 80%, GEMMs within 1.2x."""
    shortfalls: list[str] = Field(default_factory=list)
    """Tasks that miss a target, with the attempts the trace shows."""


def _flat_tensors(obj: Any) -> list[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, list | tuple):
        return [t for x in obj for t in _flat_tensors(x)]
    return []


def _run(task: Any, device: str) -> tuple[list[Any], list[Any], list[Any]]:
    import torch

    from upskills.tasks import runtime

    model, inputs, _ = runtime.build(task, None, device, 0)
    with torch.no_grad(), torch.device(device):
        out = model(*inputs)
    params = list(model.parameters()) + list(model.buffers()) if hasattr(model, "buffers") else []
    return _flat_tensors(inputs), params, _flat_tensors(out)


def task_work(task: Any) -> tuple[int, float | None]:
    """Minimum bytes moved and FLOPs of a task's main variant, from a meta-device build.

    Bytes: every input tensor and parameter read once plus every output written once. FLOPs
    (None unless tagged gemm or attention): gemm ``2 * numel(out) * K`` with ``K`` the last
    dimension of the first input (``2*M*N*K``, times the batch for bmm); attention with q
    ``[B, H, S, D]`` and k ``[B, H, Sk, D]``: ``2 * 2*B*H*S*Sk*D`` (QK^T and PV), halved when
    the task is causal (``causal`` in its name or statement). An op with no meta kernel
    (``bincount``) is run on the CPU instead. A gather (tag ``gather``) reads only the rows it
    gathers, not its whole table: bytes are the indices plus the output, twice (rows read and
    written), so a random gather is not credited with bandwidth it never used.
    """
    try:
        inputs, params, outs = _run(task, "meta")
    except (NotImplementedError, RuntimeError):
        inputs, params, outs = _run(task, "cpu")
    nbytes = sum(t.numel() * t.element_size() for t in inputs + params + outs)
    if "gather" in task.tags:
        index_bytes = sum(t.numel() * t.element_size() for t in inputs if not t.is_floating_point())
        nbytes = index_bytes + 2 * sum(t.numel() * t.element_size() for t in outs)
    flops: float | None = None
    if "gemm" in task.tags:
        flops = 2.0 * outs[0].numel() * inputs[0].shape[-1]
    elif "attention" in task.tags:
        b, h, s, d = inputs[0].shape
        causal = "causal" in task.name or "causal" in task.statement.lower()
        flops = 4.0 * b * h * s * inputs[1].shape[-2] * d / (2 if causal else 1)
    return nbytes, flops


def _attempts(trace: TraceFile) -> tuple[list[str], dict[str, list[Verdict]], list[Verdict]]:
    """Kernel hashes in order of first writing, their verdicts, and the submit verdicts."""
    verdicts: dict[str, list[Verdict]] = {}
    submits: list[Verdict] = []
    for a in attempts_of(trace.events):
        verdicts.setdefault(a.kernel_hash, []).extend(a.verdicts)
        submits += a.submitted
    return list(verdicts), verdicts, submits


def _entry(vs: list[Verdict]) -> str:
    if not vs:
        return "UNCHECKED"
    failed = next((v for v in vs if not v.passed), None)
    if failed is not None:
        return f"FAIL {failed.error_class or 'unknown'}"
    timed = [v for v in vs if v.speedup_eager is not None]
    return f"PASS {timed[-1].speedup_eager:.2f}x" if timed else "PASS"


def _timed(vs: Iterable[Verdict]) -> Verdict | None:
    timed = [v for v in vs if v.passed and v.timing is not None]
    return timed[-1] if timed else None


def trace_row(
    trace: TraceFile,
    copy_bandwidth_gbs: float = COPY_BANDWIDTH_GBS,
    peak_tflops: float = PEAK_TFLOPS,
) -> TaskRow:
    """One row of the report for one trace.

    Args:
        trace: a read trace with a run_start.
        copy_bandwidth_gbs: copy ceiling, GB/s.
        peak_tflops: matmul peak, TFLOP/s.

    Returns:
        The row; ``notes`` says why any number is missing.

    Raises:
        ValueError: the trace has no run_start (names the file).
    """
    from upskills.tasks import load_task

    start = trace.start
    if start is None:
        raise ValueError(f"{trace.path}: no run_start event; cannot tell which task it solves")
    row = TaskRow(task=start.task, trace=str(trace.path))
    row.outcome = trace.end.outcome if trace.end else None
    order, verdicts, submits = _attempts(trace)
    row.attempts, row.history = len(order), [_entry(verdicts[h]) for h in order]
    row.repaired_failures = sum(
        1
        for i, h in enumerate(row.history)
        if h.startswith("FAIL") and any(x.startswith("PASS") for x in row.history[i + 1 :])
    )
    final = _timed(submits)
    row.final_from = "submit" if final else None
    if final is None:
        best = [v for vs in verdicts.values() if (v := _timed(vs)) and v.speedup_eager is not None]
        final = max(best, key=lambda v: v.speedup_eager or 0.0, default=None)
        row.final_from = "best" if final else None
    try:
        task = load_task(start.task)
    except Exception as exc:  # noqa: BLE001 - a task that no longer loads is reported, not fatal
        row.notes.append(f"task not loadable: {exc}")
        task = None
    if task is not None:
        row.tags = list(task.tags)
        if task.hash != start.task_hash:
            row.notes.append(f"task changed since the trace ({start.task_hash} -> {task.hash})")
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
    row.speedup_eager, row.speedup_compile = final.speedup_eager, final.speedup_compile
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
        misses.append(f"not solved ({row.outcome or 'no run_end'})")
    if row.speedup_eager is not None and row.speedup_eager < 1.0:
        misses.append(f"slower than eager ({row.speedup_eager:.3f}x)")
    if row.pct_copy is not None and row.pct_copy < 100 * BANDWIDTH_TARGET:
        misses.append(f"{row.pct_copy:.1f}% of copy bandwidth")
    if "gemm" in row.tags and (row.speedup_eager or 0.0) < 1 / GEMM_TOLERANCE:
        misses.append(f"GEMM more than {GEMM_TOLERANCE}x slower than torch.matmul")
    return misses


def build_corpus_report(
    paths: Iterable[str | Path],
    command: str,
    copy_bandwidth_gbs: float = COPY_BANDWIDTH_GBS,
    peak_tflops: float = PEAK_TFLOPS,
) -> CorpusReport:
    """Read traces and compute the report.

    Args:
        paths: trace files or folders (searched recursively for ``*.jsonl``).
        command: the command line to record in the report.
        copy_bandwidth_gbs: copy ceiling, GB/s (read + write bytes).
        peak_tflops: matmul peak, TFLOP/s.

    Returns:
        The report.
    """
    rep = CorpusReport(
        command=command, copy_bandwidth_gbs=copy_bandwidth_gbs, peak_tflops=peak_tflops
    )
    gpus: set[str] = set()
    versions: dict[str, set[str]] = {"torch": set(), "triton": set()}
    agents: set[str] = set()
    for path in iter_trace_files(paths):
        trace = read_trace(path)
        rep.rows.append(trace_row(trace, copy_bandwidth_gbs, peak_tflops))
        start = trace.start
        assert start is not None  # trace_row raised otherwise
        agents.add(f"{start.agent_role}/{start.agent_name}")
        for key, found in versions.items():
            if start.environment.get(key):
                found.add(str(start.environment[key]))
        for e in trace.events:
            if isinstance(e, ToolResult) and e.verdict is not None and e.verdict.gpu:
                gpus.add(e.verdict.gpu)
    rep.gpus, rep.agents = sorted(gpus), sorted(agents)
    rep.versions = {k: sorted(v) for k, v in versions.items()}
    rows = rep.rows
    memory = [r for r in rows if r.bound == "memory"]
    gemms = [r for r in rows if "gemm" in r.tags]
    rep.totals = {
        "tasks": len(rows),
        "solved": sum(r.outcome == "solved" for r in rows),
        "with_repaired_failure": sum(r.repaired_failures > 0 for r in rows),
        "at_least_eager": sum((r.speedup_eager or 0.0) >= 1.0 for r in rows),
        "memory_bound": len(memory),
        "memory_bound_at_80pct_copy": sum((r.pct_copy or 0.0) >= 80.0 for r in memory),
        "gemm": len(gemms),
        "gemm_within_1.2x_matmul": sum(
            (r.speedup_eager or 0.0) >= 1 / GEMM_TOLERANCE for r in gemms
        ),
    }
    for r in rows:
        if misses := _shortfalls(r):
            tries = " -> ".join(r.history) or "no attempts"
            rep.shortfalls.append(f"{r.task}: {'; '.join(misses)} (attempts: {tries})")
    return rep


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def render_corpus_markdown(rep: CorpusReport) -> str:
    """The report as Markdown."""
    t = rep.totals
    lines = [
        "# Teacher corpus report",
        "",
        f"- Command: `{rep.command}`",
        f"- GPU: {', '.join(rep.gpus) or 'none (no measured verdicts)'}",
        f"- torch {', '.join(rep.versions.get('torch', [])) or '?'}, "
        f"triton {', '.join(rep.versions.get('triton', [])) or '?'} (run_start environment)",
        f"- Produced by: {', '.join(rep.agents)} (run_start agent role/name)",
        f"- Ceilings: copy bandwidth {rep.copy_bandwidth_gbs:g} GB/s (device-to-device copy, "
        f"read + write bytes), dense bf16/fp16 peak {rep.peak_tflops:g} TFLOP/s (torch.matmul); "
        "defaults measured on this workplace's H200, overridable with --copy-bandwidth-gbs and "
        "--peak-tflops.",
        "- Bytes = every input and parameter read once + every output written once (main variant,"
        " meta-device build); above 100% means faster than the measured copy (the datasheet peak"
        " is higher). FLOPs: gemm 2*M*N*K (x batch); attention 4*B*H*S*Sk*D, /2 causal.",
        "",
        "| task | tags | attempts | verdict history | repaired | final | median ms | vs eager "
        "| vs compile | achieved | % ceiling |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rep.rows:
        achieved, pct = "-", "-"
        if r.gbs is not None:
            achieved, pct = f"{r.gbs:.0f} GB/s", f"{r.pct_copy:.0f}% copy"
        elif r.tflops is not None:
            achieved, pct = f"{r.tflops:.0f} TFLOP/s", f"{r.pct_peak:.0f}% peak"
        final = f"{r.final_kernel} ({r.final_from})" if r.final_kernel else "-"
        lines.append(
            f"| {r.task} | {', '.join(r.tags)} | {r.attempts} | {' -> '.join(r.history) or '-'} "
            f"| {r.repaired_failures} | {final} | {_num(r.median_ms, '.4f')} "
            f"| {_num(r.speedup_eager, '.2f')}x | {_num(r.speedup_compile, '.2f')}x "
            f"| {achieved} | {pct} |"
        )
    lines += [
        "",
        "## Totals",
        "",
        f"- Tasks solved: {t['solved']}/{t['tasks']}",
        f"- Tasks with a repaired failure: {t['with_repaired_failure']}/{t['tasks']}",
        f"- At least as fast as eager: {t['at_least_eager']}/{t['tasks']}",
        f"- Memory-bound at >= 80% of copy bandwidth: "
        f"{t['memory_bound_at_80pct_copy']}/{t['memory_bound']}",
        f"- GEMMs within 1.2x of torch.matmul (eager): {t['gemm_within_1.2x_matmul']}/{t['gemm']}",
        "",
        "## Shortfalls",
        "",
        *([f"- {s}" for s in rep.shortfalls] or ["- none"]),
    ]
    notes = [f"- {r.task}: {n}" for r in rep.rows for n in r.notes]
    if notes:
        lines += ["", "## Notes", "", *notes]
    return "\n".join(lines) + "\n"


def write_corpus_report(
    paths: Iterable[str | Path],
    out: str | Path,
    json_out: str | Path | None = None,
    command: str | None = None,
    copy_bandwidth_gbs: float = COPY_BANDWIDTH_GBS,
    peak_tflops: float = PEAK_TFLOPS,
) -> CorpusReport:
    """Compute the report and write it as Markdown (and JSON when ``json_out`` is given).

    Args:
        paths: trace files or folders.
        out: Markdown file to write.
        json_out: JSON file to write, or None.
        command: command line to record (default: the equivalent ``upskills traces report``).
        copy_bandwidth_gbs: copy ceiling, GB/s.
        peak_tflops: matmul peak, TFLOP/s.

    Returns:
        The report.
    """
    paths = [str(p) for p in paths]
    if command is None:
        command = shlex.join(["upskills", "traces", "report", *paths, "--out", str(out)])
    rep = build_corpus_report(paths, command, copy_bandwidth_gbs, peak_tflops)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(render_corpus_markdown(rep), encoding="utf-8")
    if json_out is not None:
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(rep.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return rep
