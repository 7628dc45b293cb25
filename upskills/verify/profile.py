"""Profiler feedback: a timed candidate against the machine's ceilings, and Nsight Compute.

The analysis is a roofline of the task's main variant. Bytes are the minimum any kernel must
move (every input and parameter read once, every output written once) and FLOPs are what
``torch.utils.flop_counter.FlopCounterMode`` counts for the reference (matmul, conv, attention;
elementwise work counts zero). Both come from a build on torch's ``meta`` device: sizes only,
no memory. The ceilings are two measured numbers, the device-to-device copy bandwidth and the
dense ``torch.matmul`` rate, read from a JSON file (``UPSKILLS_CEILINGS``) or measured once on
this GPU in a child process and cached.

Where ``ncu`` is on PATH, a small driver (:mod:`upskills.verify.ncu_driver`) runs one forward
of the candidate under Nsight Compute and the report adds its memory/compute throughput,
achieved occupancy and top stall reasons. That driver runs only after the candidate passed
the verifier, in a child process with a time limit, but without the verifier's guards: it is a
measurement, not a judgement. Nothing here decides pass or fail.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from upskills.tasks.model import Task
from upskills.verify.build_locks import source_extensions_root
from upskills.verify.verdict import ProfileReport, Timing, Verdict

__all__ = [
    "CEILINGS_ENV",
    "Ceilings",
    "ProfileReport",
    "TaskWork",
    "analyze",
    "format_profile",
    "load_ceilings",
    "measure_ceilings",
    "parse_ncu_csv",
    "profile_verdict",
    "resolve_ceilings",
    "run_ncu",
    "task_work",
]

CEILINGS_ENV = "UPSKILLS_CEILINGS"
"""Environment variable naming a ceilings JSON file."""
COMPUTE_TAGS = frozenset({"gemm", "attention", "conv"})
"""Task tags whose achieved FLOP/s is reported against the matmul ceiling."""
NCU_TIMEOUT_S = 300.0
"""Time limit of one Nsight Compute run (compilation and autotuning included)."""
STALL_REASONS = (
    "long_scoreboard", "short_scoreboard", "wait", "barrier", "mio_throttle", "lg_throttle",
    "math_pipe_throttle", "not_selected", "membar", "branch_resolving", "dispatch_stall",
    "drain", "imc_miss", "no_instruction", "sleeping", "tex_throttle", "selected",
)  # fmt: skip
"""Warp stall reasons read from ncu (cycles per issued instruction)."""
_STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
NCU_METRICS = (
    "gpu__time_duration.sum",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sector_hit_rate.pct",
    *(_STALL.format(r) for r in STALL_REASONS),
)
"""Metrics asked of ``ncu --metrics``."""
_SHORT = {
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "compute_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
}
_DRAM_BYTES = {"dram__bytes_read.sum": "dram_read_mb", "dram__bytes_write.sum": "dram_write_mb"}
"""Byte counters summed over the kernels (not averaged), reported in MB."""
_BYTE_UNITS = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12}


class Ceilings(BaseModel):
    """The two measured ceilings of one GPU."""

    model_config = ConfigDict(extra="ignore")

    gpu: str = ""
    """GPU they were measured on."""
    copy_gb_per_s: float
    """Device-to-device copy bandwidth, GB/s, read + write bytes."""
    matmul_float16_tflops: float | None = None
    """Dense fp16 ``torch.matmul`` rate, TFLOP/s."""
    matmul_bfloat16_tflops: float | None = None
    """Dense bf16 ``torch.matmul`` rate, TFLOP/s."""
    matmul_float32_tflops: float | None = None
    """Dense fp32 ``torch.matmul`` rate (TF32 off), TFLOP/s."""
    source: str = Field(default="", exclude=True)
    """Where they came from (a path or ``measured``); not part of the file."""

    def matmul_for(self, dtype: str) -> tuple[float | None, str | None]:
        """The matmul ceiling for ``dtype`` (``float16``...), and a note when it is a stand-in."""
        own = getattr(self, f"matmul_{dtype}_tflops", None)
        if own is not None:
            return own, None
        rates = [r for r in (self.matmul_float16_tflops, self.matmul_bfloat16_tflops) if r]
        if not rates:
            return None, "no matmul ceiling in the ceilings file"
        return max(rates), f"no {dtype} matmul ceiling: used the fp16/bf16 one (optimistic floor)"


def load_ceilings(path: str | Path) -> Ceilings:
    """Read a ceilings JSON file (``benchmarks/device/ceilings.py`` writes one).

    Raises:
        ValueError: the file is missing or lacks ``copy_gb_per_s``.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        ceilings = Ceilings.model_validate(data)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a ceilings file ({exc}); see {CEILINGS_ENV}") from exc
    ceilings.source = str(path)
    return ceilings


def measure_ceilings(copy_bytes: int = 1 << 32, matmul_size: int = 8192) -> Ceilings:
    """Measure the copy and matmul ceilings on the current CUDA GPU (in this process).

    Copy: ``copy_bytes`` of fp32 copied into another tensor, read + write counted. Matmul:
    ``matmul_size``-cubed products in fp16, bf16 and fp32 (TF32 off). Medians of 20 timed
    calls after warm-up, with CUDA events.
    """
    import statistics

    import torch

    def median_ms(fn: Any) -> float:
        for _ in range(3):
            fn()
        times: list[float] = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(float(a.elapsed_time(b)))
        return statistics.median(times)

    n = copy_bytes // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda dst=dst, src=src: dst.copy_(src))
    values: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(),
        "copy_gb_per_s": round(2 * n * 4 / (ms * 1e-3) / 1e9, 1),
    }
    del src, dst
    s = matmul_size
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        a = torch.randn(s, s, device="cuda", dtype=dtype)
        b = torch.randn(s, s, device="cuda", dtype=dtype)
        ms = median_ms(lambda a=a, b=b: a @ b)
        key = f"matmul_{str(dtype).removeprefix('torch.')}_tflops"
        values[key] = round(2 * s**3 / (ms * 1e-3) / 1e12, 1)
    return Ceilings.model_validate(values)


def _cache_path() -> Path:
    root = os.environ.get("UPSKILLS_CACHE_DIR")
    if root:
        return Path(root) / "ceilings.json"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "upskills" / "ceilings.json"


def resolve_ceilings(
    path: str | Path | None, device: str, gpu: str | None = None
) -> tuple[Ceilings | None, list[str]]:
    """The ceilings to use, and notes on where they came from.

    Args:
        path: a ceilings file; None reads ``UPSKILLS_CEILINGS``.
        device: ``cpu`` or ``cuda``.
        gpu: the GPU the candidate was timed on (a file for another GPU is noted).

    Returns:
        ``(ceilings, notes)``. With no file on CUDA, the ceilings are measured in a child
        process and cached per GPU in the user cache; with no file on CPU, None.
    """
    notes: list[str] = []
    path = path or os.environ.get(CEILINGS_ENV) or None
    if path is not None:
        ceilings = load_ceilings(path)
        if gpu and ceilings.gpu and ceilings.gpu != gpu:
            notes.append(f"ceilings file is for {ceilings.gpu}, the kernel ran on {gpu}")
        return ceilings, notes
    if device != "cuda":
        return None, [f"no ceilings: pass --ceilings or set {CEILINGS_ENV} for floor times"]
    cache = _cache_path()
    cached: dict[str, Any] = {}
    if cache.is_file():
        try:
            cached = json.loads(cache.read_text(encoding="utf-8"))
        except ValueError:
            cached = {}
    if gpu and gpu in cached:
        ceilings = Ceilings.model_validate(cached[gpu])
        ceilings.source = f"measured (cached in {cache})"
        return ceilings, notes
    code = "from upskills.verify.profile import measure_ceilings as m; print(m().model_dump_json())"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return None, [f"measuring the ceilings failed: {tail[0]}"]
    ceilings = Ceilings.model_validate_json(proc.stdout.strip().splitlines()[-1])
    cached[ceilings.gpu] = ceilings.model_dump(mode="json")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(cached, indent=2) + "\n", encoding="utf-8")
    ceilings.source = "measured"
    return ceilings, notes


class TaskWork(BaseModel):
    """Minimum bytes and counted FLOPs of a task's main variant."""

    model_config = ConfigDict(extra="forbid")

    variant: str
    """The main variant's name."""
    bytes: int
    """Inputs and parameters read once plus outputs written once."""
    flops: float
    """FLOPs counted by ``FlopCounterMode`` (halved for causal attention)."""
    dtype: str
    """Floating dtype of the first floating input (``float16``...), for the matmul ceiling."""
    notes: list[str] = Field(default_factory=list)
    """How the numbers were obtained, where it matters."""


def _tensors(obj: Any) -> list[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, list | tuple):
        items = cast("list[Any] | tuple[Any, ...]", obj)
        return [t for x in items for t in _tensors(x)]
    if isinstance(obj, dict):
        values = cast("dict[Any, Any]", obj).values()
        return [t for x in values for t in _tensors(x)]
    return []


def _count(task: Task, device: str) -> tuple[list[Any], list[Any], list[Any], float]:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from upskills.tasks import runtime

    model, inputs, _ = runtime.build(task, None, device, 0)
    params = [*model.parameters(), *model.buffers()] if isinstance(model, torch.nn.Module) else []
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), torch.device(device), counter:
        out = model(*inputs)
    return _tensors(inputs), params, _tensors(out), float(counter.get_total_flops())


def task_work(task: Task) -> TaskWork:
    """Bytes and FLOPs of ``task``'s main variant, from a build on the ``meta`` device.

    An op with no meta kernel (``bincount``) makes the build fall back to the CPU, noted.
    Causal attention (``causal`` in the name or statement) counts half the FLOPs
    ``FlopCounterMode`` reports, which counts the masked half too.
    """
    notes: list[str] = []
    try:
        inputs, params, outs, flops = _count(task, "meta")
    except (NotImplementedError, RuntimeError) as exc:
        notes.append(f"no meta kernel for an op ({type(exc).__name__}): sizes built on the CPU")
        inputs, params, outs, flops = _count(task, "cpu")
    nbytes = sum(t.numel() * t.element_size() for t in inputs + params + outs)
    if flops and "attention" in task.tags and "causal" in f"{task.name} {task.statement}".lower():
        flops /= 2
        notes.append("causal attention: half the FLOPs FlopCounterMode counts")
    floats = [t for t in inputs + params if t.is_floating_point()]
    dtype = str(floats[0].dtype).removeprefix("torch.") if floats else "float32"
    return TaskWork(
        variant=task.main_variant().name, bytes=nbytes, flops=flops, dtype=dtype, notes=notes
    )


def analyze(
    task: Task,
    work: TaskWork,
    timing: Timing | None,
    ceilings: Ceilings | None,
    *,
    device: str,
    gpu: str | None = None,
) -> ProfileReport:
    """The roofline report of one timed candidate (pure arithmetic).

    Args:
        task: the task (its tags decide whether FLOP/s are reported).
        work: its bytes and FLOPs (:func:`task_work`).
        timing: the candidate's timing at the main variant; None when untimed (CPU).
        ceilings: the ceilings; None leaves floors and shares out.
        device: ``cpu`` or ``cuda``.
        gpu: GPU name.
    """
    compute_task = bool(COMPUTE_TAGS & set(task.tags))
    rep = ProfileReport(
        task=task.name,
        variant=work.variant,
        device=device,
        gpu=gpu,
        bytes=work.bytes,
        flops=work.flops,
        median_ms=timing.median_ms if timing else None,
        notes=list(work.notes),
    )
    if ceilings is not None:
        rep.ceilings_source = ceilings.source or "given"
        rep.copy_gbs = ceilings.copy_gb_per_s
        rep.memory_floor_ms = work.bytes / (ceilings.copy_gb_per_s * 1e9) * 1e3
        rep.floor_ms, rep.bound = rep.memory_floor_ms, "memory"
        if work.flops > 0:
            rep.matmul_tflops, note = ceilings.matmul_for(work.dtype)
            rep.notes += [note] if note else []
        if rep.matmul_tflops:
            rep.compute_floor_ms = work.flops / (rep.matmul_tflops * 1e12) * 1e3
            if rep.compute_floor_ms > rep.memory_floor_ms:
                rep.floor_ms, rep.bound = rep.compute_floor_ms, "compute"
    if timing is None or timing.median_ms <= 0:
        return rep
    seconds = timing.median_ms * 1e-3
    rep.achieved_gbs = work.bytes / seconds / 1e9
    if rep.copy_gbs:
        rep.bandwidth_share = rep.achieved_gbs / rep.copy_gbs
    if compute_task and work.flops > 0:
        rep.achieved_tflops = work.flops / seconds / 1e12
        if rep.matmul_tflops:
            rep.flops_share = rep.achieved_tflops / rep.matmul_tflops
    return rep


def _number(text: str) -> float | str:
    cleaned = text.replace(",", "").strip()
    try:
        return float(cleaned)
    except ValueError:
        return text.strip()


def parse_ncu_csv(text: str) -> dict[str, Any]:
    """Metrics from ``ncu --csv --metrics ...`` output, summarised over the profiled kernels.

    Lines before the CSV header (``==PROF==`` messages, the program's own output) are skipped.
    Throughputs and occupancy are averaged over kernels weighted by ``gpu__time_duration``;
    stall reasons are weighted the same way and the top three kept.

    Returns:
        ``kernels`` (name, duration_us per kernel), ``duration_us`` (sum), the short-named
        throughputs (``memory_throughput_pct``, ``compute_throughput_pct``,
        ``dram_throughput_pct``, ``achieved_occupancy_pct``, ``registers_per_thread``,
        ``l2_hit_rate_pct``), the DRAM traffic summed over the kernels (``dram_read_mb``,
        ``dram_write_mb``) and ``top_stalls`` (``[{"reason", "cycles_per_issue"}]``); empty
        when no kernel row.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID","Process ID"')), None)
    if start is None:
        return {}
    per_kernel: dict[str, dict[str, Any]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if not row.get("Metric Name"):
            continue
        entry = per_kernel.setdefault(row["ID"], {"name": row.get("Kernel Name", "")})
        value = _number(row.get("Metric Value", ""))
        if row["Metric Name"] == "gpu__time_duration.sum" and isinstance(value, float):
            unit = (row.get("Metric Unit") or "").lower()
            scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
            value *= scale.get(unit, 1e-3)
        elif row["Metric Name"] in _DRAM_BYTES and isinstance(value, float):
            value *= _BYTE_UNITS.get((row.get("Metric Unit") or "byte").lower(), 1.0)
        entry[row["Metric Name"]] = value
    if not per_kernel:
        return {}
    kernels = list(per_kernel.values())
    weights = [k.get("gpu__time_duration.sum", 1.0) for k in kernels]
    weights = [w if isinstance(w, float) and w > 0 else 1.0 for w in weights]
    total = sum(weights)

    def weighted(metric: str) -> float | None:
        pairs = [(k[metric], w) for k, w in zip(kernels, weights, strict=True) if metric in k]
        pairs = [(v, w) for v, w in pairs if isinstance(v, float)]
        if not pairs:
            return None
        return round(sum(v * w for v, w in pairs) / sum(w for _, w in pairs), 2)

    out: dict[str, Any] = {
        "kernels": [
            {"name": k["name"], "duration_us": k.get("gpu__time_duration.sum")} for k in kernels
        ],
        "duration_us": round(total, 3),
    }
    for metric, short in _SHORT.items():
        value = weighted(metric)
        if value is not None:
            out[short] = value
    for metric, short in _DRAM_BYTES.items():
        values = [k[metric] for k in kernels if isinstance(k.get(metric), float)]
        if values:
            out[short] = round(sum(values) / 1e6, 3)
    stalls = [(r, weighted(_STALL.format(r))) for r in STALL_REASONS if r != "selected"]
    ranked = sorted(((r, v) for r, v in stalls if v), key=lambda rv: -rv[1])
    out["top_stalls"] = [{"reason": r, "cycles_per_issue": v} for r, v in ranked[:3]]
    return out


def run_ncu(
    task: Task, source: str, *, timeout_s: float = NCU_TIMEOUT_S
) -> tuple[dict[str, Any] | None, list[str]]:
    """Run one forward of the candidate under Nsight Compute; ``(metrics, notes)``.

    Only the launches between ``cudaProfilerStart`` and ``cudaProfilerStop`` are profiled (the
    driver's single timed forward, after warm-up), with ``--clock-control none`` so clocks are
    those the timing saw. Returns None with a note when ``ncu`` is absent, cannot read the
    performance counters, times out, or reports no kernel.
    """
    ncu = shutil.which("ncu")
    if ncu is None:
        return None, ["Nsight Compute (ncu) is not on PATH: no hardware counters"]
    with tempfile.TemporaryDirectory(prefix="upskills-ncu-") as tmp:
        task_file, kernel_file = Path(tmp) / "task.json", Path(tmp) / "candidate.py"
        task_file.write_text(task.model_dump_json(), encoding="utf-8")
        kernel_file.write_text(source, encoding="utf-8")
        cmd = [
            ncu, "--clock-control", "none", "--target-processes", "all", "--csv",
            "--print-units", "base",
            "--profile-from-start", "off", "--metrics", ",".join(NCU_METRICS),
            sys.executable, "-m", "upskills.verify.ncu_driver", str(task_file), str(kernel_file),
        ]  # fmt: skip
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout_s, cwd=tmp, check=False,
                env={**os.environ, "TORCH_EXTENSIONS_DIR": str(source_extensions_root(source))},
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return None, [f"ncu ran past its {timeout_s:.0f} s limit: no hardware counters"]
    text = proc.stdout + "\n" + proc.stderr
    if "ERR_NVGPUCTRPERM" in text:
        return None, [
            "ncu cannot read the GPU performance counters here (ERR_NVGPUCTRPERM: profiling "
            "is restricted to admin users)"
        ]
    metrics = parse_ncu_csv(proc.stdout)
    if not metrics:
        tail = [line for line in text.strip().splitlines() if line.strip()][-1:] or ["no output"]
        return None, [f"ncu reported no kernel (exit {proc.returncode}): {tail[0][:300]}"]
    return metrics, []


def profile_verdict(
    task: Task,
    source: str,
    verdict: Verdict,
    *,
    ceilings: str | Path | None = None,
    ncu: bool = True,
) -> ProfileReport:
    """The profile report of a candidate the verifier has judged (with timing).

    Args:
        task: the task.
        source: the candidate's source (for the ncu run).
        verdict: its verdict; the timing at the main variant comes from here.
        ceilings: a ceilings file; None reads ``UPSKILLS_CEILINGS``, else measures on CUDA.
        ncu: run Nsight Compute when it is on PATH (CUDA only).
    """
    work = task_work(task)
    ceiling_values, notes = resolve_ceilings(ceilings, verdict.device, verdict.gpu)
    timing = verdict.timing if verdict.timing_status == "measured" else None
    rep = analyze(task, work, timing, ceiling_values, device=verdict.device, gpu=verdict.gpu)
    if verdict.device != "cuda":
        rep.notes.insert(
            0,
            "profiling needs a GPU: on the CPU there is no timing and no hardware counters; "
            "bytes, FLOPs and floor times only",
        )
    elif timing is None:
        rep.notes.append(f"the candidate was not timed (timing {verdict.timing_status})")
    rep.notes += notes
    if verdict.device == "cuda" and ncu:
        rep.ncu, ncu_notes = run_ncu(task, source)
        rep.notes += ncu_notes
    return rep


def _traffic_line(n: dict[str, Any], min_bytes: int) -> list[str]:
    """What DRAM really moved, against the minimum bytes: re-reads that missed L2 show here.

    ncu flushes the caches before each replay, so reads start cold; output lines still dirty
    in L2 when the kernel ends are not counted as written (a few tens of MB at most).
    """
    read, write = n.get("dram_read_mb"), n.get("dram_write_mb")
    if not isinstance(read, float) or not isinstance(write, float):
        return []
    line = f"- DRAM traffic (ncu): {read:.3f} MB read, {write:.3f} MB written"
    if min_bytes > 0:
        line += f" ({(read + write) * 1e6 / min_bytes:.2f}x the minimum bytes)"
    hit = n.get("l2_hit_rate_pct")
    if isinstance(hit, float):
        line += f"; L2 hit rate {hit:g}%"
    return [line]


def format_profile(rep: ProfileReport) -> str:
    """A profile report as a few lines for a model."""
    lines = [
        f"profile of {rep.task} at variant {rep.variant} on {rep.gpu or rep.device}",
        f"- minimum bytes moved: {rep.bytes / 1e6:.3f} MB; FLOPs counted: {rep.flops:.4g}",
    ]
    if rep.floor_ms is not None:
        floor = f"- roofline: {rep.bound}-bound, floor {rep.floor_ms:.4f} ms"
        floor += f" (memory {rep.memory_floor_ms:.4f} ms at {rep.copy_gbs:g} GB/s"
        if rep.compute_floor_ms is not None:
            floor += f"; compute {rep.compute_floor_ms:.4f} ms at {rep.matmul_tflops:g} TFLOP/s"
        lines.append(floor + f"; ceilings: {rep.ceilings_source})")
    if rep.median_ms is not None:
        line = f"- your kernel: {rep.median_ms:.4f} ms median"
        if rep.achieved_gbs is not None:
            line += f", {rep.achieved_gbs:.1f} GB/s"
            if rep.bandwidth_share is not None:
                line += f" ({100 * rep.bandwidth_share:.1f}% of copy bandwidth)"
        if rep.achieved_tflops is not None:
            line += f", {rep.achieved_tflops:.1f} TFLOP/s"
            if rep.flops_share is not None:
                line += f" ({100 * rep.flops_share:.1f}% of matmul peak)"
        if rep.floor_ms:
            line += f"; {rep.median_ms / rep.floor_ms:.2f}x the floor"
        lines.append(line)
    if rep.ncu:
        n = rep.ncu
        parts = [
            f"{label} {n[key]:g}%"
            for key, label in (
                ("memory_throughput_pct", "memory throughput"),
                ("compute_throughput_pct", "compute (SM) throughput"),
                ("achieved_occupancy_pct", "achieved occupancy"),
            )
            if isinstance(n.get(key), float)
        ]
        lines.append(f"- ncu over {len(n.get('kernels', []))} kernel(s): " + ", ".join(parts))
        lines += _traffic_line(n, rep.bytes)
        stalls = ", ".join(f"{s['reason']} {s['cycles_per_issue']:g}" for s in n["top_stalls"])
        if stalls:
            lines.append(f"- top warp stalls (cycles per issued instruction): {stalls}")
    lines += [f"- note: {note}" for note in rep.notes]
    return "\n".join(lines)
