"""The Verdict: what the verifier says about one candidate kernel for one task.

Every number upskills reports comes from a Verdict, so the record keeps everything needed to
audit it: which stage failed and why, per-variant errors, timings with their spread, and the
machine they were measured on.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ErrorClass(StrEnum):
    """Why a candidate failed; ``None`` on a Verdict means it passed."""

    SYNTAX = "syntax"
    """The candidate does not parse."""
    IMPORT = "import"
    """Importing the candidate failed (missing module, error at import time)."""
    INTERFACE = "interface"
    """No ``ModelNew``, or its constructor/forward signature differs from the reference."""
    COMPILE = "compile"
    """A kernel failed to compile (Triton compilation error, nvcc error)."""
    RUNTIME = "runtime"
    """A Python exception while running the candidate."""
    CRASH = "crash"
    """The worker process died (segfault, illegal memory access, abort)."""
    TIMEOUT = "timeout"
    """The candidate did not finish within its time limit (hang, infinite loop)."""
    SHAPE = "shape"
    """The output has the wrong shape (or wrong structure)."""
    DTYPE = "dtype"
    """The output has the wrong dtype."""
    DEVICE = "device"
    """The output is on the wrong device."""
    MISMATCH = "mismatch"
    """Values differ from the reference beyond tolerance."""
    NAN = "nan"
    """NaN/Inf positions differ from the reference."""
    MUTATION = "mutation"
    """The candidate modified its inputs."""
    GUARD = "guard"
    """A guard against reward hacking fired (no own kernel, reference ops, caching, timing)."""
    TIMING = "timing"
    """The candidate's own timings disagree with the judge's clock (or timing failed)."""
    TASK = "task"
    """The task itself could not be loaded or run (a bad reference, not the candidate's fault)."""


class VerdictStage(StrEnum):
    """The stages of a check, in order; a Verdict names the last one reached."""

    PARSE = "parse"
    GUARDS = "guards"
    IMPORT = "import"
    INTERFACE = "interface"
    CORRECTNESS = "correctness"
    TIMING = "timing"
    DONE = "done"


class VariantResult(BaseModel):
    """Correctness of the candidate on one shape variant and seed."""

    model_config = ConfigDict(extra="forbid")

    variant: str
    """Shape variant name."""
    seed: int
    """Seed used to draw the inputs."""
    domain: str = "normal"
    """Input domain of this trial (``normal`` or an adversarial one, see ``verify.domains``)."""
    shape: dict[str, int | float | str | bool | list[int]] = Field(default_factory=dict)
    """Globals of the drawn shape (random variants only)."""
    passed: bool
    """Whether this trial matched the reference."""
    error_class: ErrorClass | None = None
    """Why it failed, if it did."""
    message: str = ""
    """Human-readable detail (first mismatching index, max error, ...)."""
    max_abs_err: float | None = None
    """Largest absolute error over the output."""
    max_rel_err: float | None = None
    """Largest error relative to the output's scale."""
    atol: float | None = None
    """Absolute tolerance applied."""
    rtol: float | None = None
    """Relative tolerance applied."""
    gpu_busy_ms: float | None = None
    """How long the GPU ran kernels and copies during this trial's forward, watched (CUPTI;
    recorded in a GPU check's late trial only, None elsewhere): the timed speed must be
    explained by it (:mod:`upskills.verify.watched_speed`)."""


FlushMode = Literal["write", "read"]
"""How L2 is flushed before each timed call: ``write`` fills a buffer larger than L2 (the
verifier's default: L2 is left full of dirty lines, whose write-back to DRAM then happens inside
the timed call), ``read`` reads one (L2 is left full of clean lines: the write-back of whatever
ran before happens during the flush, untimed). ``benchmarks/flush_bias.py`` measures the
difference side by side."""


class Timing(BaseModel):
    """Statistics of repeated timed calls, in milliseconds."""

    model_config = ConfigDict(extra="forbid")

    median_ms: float
    """Median time per call."""
    p10_ms: float
    """10th percentile."""
    p90_ms: float
    """90th percentile."""
    mean_ms: float
    """Mean time per call."""
    reps: int
    """Number of timed calls."""
    spread: float
    """(p90 - p10) / median: relative spread."""
    watched_busy_ms: float | None = None
    """The GPU busy time of the trial after the timed calls (None: not recorded), beside which
    the median was judged (:mod:`upskills.verify.watched_speed`)."""
    clock_ms: float | None = None
    """Per call over back-to-back calls on the judge's own clock (the clock check; CUDA-graph
    replays when the calls were host-bound), beside the events' median; None for baselines."""
    flush: FlushMode = "write"
    """How L2 was flushed before each timed call (:data:`FlushMode`)."""
    late_calls: int | None = None
    """Timed calls whose forward the host was still enqueuing when the GPU reached the start
    event (host time from the head start's enqueue to forward's return, longer than the GPU's
    head start): a host delay may be in their time. An upper bound (a GPU still behind on
    earlier work counts too), from the process that ran the calls: a diagnostic, not used in any
    decision. None where not recorded."""
    head_start_x: int | None = None
    """The GPU's head start at the end of the timed calls, as a multiple of the first one (1, 2, 4
    or 8): late calls that cost time grow it (:mod:`upskills.verify.timing`). From the process
    that ran the calls, a diagnostic like ``late_calls``. None where not recorded."""
    persisting_l2_bytes: int | None = None
    """The most L2 the candidate's context set aside for persisting lines after a timed call
    (0: none). Its persisting lines were demoted before each flush
    (:mod:`upskills.verify.l2_fence`), so they gained nothing across calls; a non-zero value says
    the candidate asked only where it exceeds ``persisting_l2_default_bytes``. From the process
    that ran the calls, a diagnostic. None where not recorded."""
    persisting_l2_default_bytes: int | None = None
    """The context's persisting-L2 limit before the candidate's import (the H200 of 2026-12-05:
    11.25 MiB, with no candidate asking). From the process that ran the calls, a diagnostic.
    None where not recorded."""


class Verdict(BaseModel):
    """The verifier's judgement of one candidate on one task."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1, 2] = 2
    """Version of this record's layout (1: before the judge/candidate split)."""
    task: str
    """Task name."""
    task_hash: str
    """Content hash of the task (see ``Task.hash``)."""
    candidate_hash: str
    """sha256 (16 hex chars) of the candidate source."""
    device: str
    """``cpu`` (Triton interpreter) or ``cuda``."""
    gpu: str | None = None
    """GPU name when run on CUDA."""
    passed: bool
    """True only when every stage run passed."""
    error_class: ErrorClass | None = None
    """Why the candidate failed, or None."""
    stage: VerdictStage = VerdictStage.DONE
    """Last stage reached: parse, guards, import, interface, correctness, timing, done."""
    guard: str | None = None
    """The guard that fired (``static:<rule>``, ``no_launch``, ``torch_compute``, ...), if any."""
    message: str = ""
    """What went wrong and where, or a one-line summary on success."""
    seed: int | None = None
    """The check's seed: every trial's inputs and the random shape derive from it (replay)."""
    notes: list[str] = Field(default_factory=list)
    """What this check could not see (CPU: races, timing) and other caveats."""
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    """Wall time per stage (judge side): cost breakdown of the check."""
    variants: list[VariantResult] = Field(default_factory=list[VariantResult])
    """Per-variant, per-seed correctness results."""
    timing_status: Literal["measured", "unavailable", "skipped", "failed"] = "unavailable"
    """Whether timings were measured (GPU), unavailable (CPU), skipped, or failed."""
    timing: Timing | None = None
    """Candidate timing at the task's main variant."""
    baselines: dict[str, Timing] = Field(default_factory=dict)
    """Baseline timings: ``eager`` and ``compile`` (torch.compile)."""
    speedup_eager: float | None = None
    """eager median / candidate median."""
    speedup_compile: float | None = None
    """torch.compile median / candidate median."""
    env: dict[str, str] = Field(default_factory=dict)
    """Versions and machine: torch, triton, python, gpu, cuda."""
    duration_s: float = 0.0
    """Wall time of the whole check."""


class BatchResult(BaseModel):
    """One line of ``upskills check --batch``: a key's verdict, or why it could not be judged."""

    model_config = ConfigDict(extra="forbid")

    key: str
    verdict: Verdict | None = None
    error: str | None = None


class ProfileReport(BaseModel):
    """Where a candidate stands against the machine's ceilings (the ``profile`` tool).

    Built by :mod:`upskills.verify.profile`; it lives here, beside the Verdict, because the trace
    schema records it in ``tool_result`` and may depend on this module only.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    task: str
    """Task name."""
    variant: str
    """The shape variant analysed and timed (the task's main variant)."""
    device: str
    """``cpu`` or ``cuda``."""
    gpu: str | None = None
    """GPU name when timed on CUDA."""
    bytes: int
    """Minimum bytes moved: every input and parameter read once, every output written once."""
    flops: float
    """FLOPs of the reference (``torch.utils.flop_counter``: matmul, conv, attention only)."""
    median_ms: float | None = None
    """The candidate's median time at the main variant (None when untimed)."""
    copy_gbs: float | None = None
    """Copy-bandwidth ceiling used, GB/s (read + write bytes); None when no ceilings."""
    matmul_tflops: float | None = None
    """Matmul ceiling used for the task's dtype, TFLOP/s; None when no ceilings."""
    ceilings_source: str = "none"
    """Where the ceilings came from: a file path, ``measured``, or ``none``."""
    memory_floor_ms: float | None = None
    """bytes / copy ceiling."""
    compute_floor_ms: float | None = None
    """flops / matmul ceiling (None for tasks with no counted FLOPs)."""
    floor_ms: float | None = None
    """Roofline floor: the larger of the memory and compute floors."""
    bound: Literal["memory", "compute"] | None = None
    """Which floor is larger."""
    achieved_gbs: float | None = None
    """bytes / median time, GB/s."""
    bandwidth_share: float | None = None
    """achieved_gbs / copy ceiling."""
    achieved_tflops: float | None = None
    """flops / median time, TFLOP/s (gemm, attention and conv tasks)."""
    flops_share: float | None = None
    """achieved_tflops / matmul ceiling (gemm, attention and conv tasks)."""
    ncu: dict[str, Any] | None = None
    """Nsight Compute metrics of the candidate's kernels, when ``ncu`` ran (see ``profile``)."""
    notes: list[str] = Field(default_factory=list)
    """What the report could not see, and how its numbers were obtained."""
