"""The lift run store: append-only JSONL of generated and evaluated samples, resumable.

One line per sample per phase, flushed as it is produced. Keys are deterministic
(``student/arm/case/sample``), so a resumed run reads what is already there and skips it. A run
killed mid-write leaves at most one partial last line; it is cut off before appending again,
never parsed as a result.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.core.jsonl import RecordWriter as RecordWriter
from upskills.core.jsonl import RunStoreError as RunStoreError
from upskills.core.jsonl import read_records

GENERATIONS = "generations.jsonl"
"""Generation phase output inside a run folder."""


def evaluations_name(device: str) -> str:
    """File name of the evaluation phase output for a device kind (``cpu``, ``cuda``)."""
    return f"evaluations.{device}.jsonl"


def sample_key(student: str, arm: str, case: str, sample: int) -> str:
    """Deterministic key of one sample: ``student/arm/case/sample``."""
    return f"{student}/{arm}/{case}/{sample}"


class GenerationRecord(BaseModel):
    """One student sample: what it was asked, what it answered, the kernel extracted."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    kind: Literal["generation"] = "generation"
    """Record kind."""
    key: str
    """``student/arm/case/sample``."""
    student: str
    """Student name."""
    arm: str
    """Arm name (``baseline``, ``placebo``, ``excerpt``, ``<skill>@<version>``, ``...+read``)."""
    case: str
    """Test case id."""
    task: str
    """Task name of the case."""
    split: str
    """Split of the case (``heldout`` or ``train``)."""
    sample: int
    """Sample index within the case."""
    seed: int
    """Sampling seed (identical across arms for the same case and sample)."""
    prompt_hash: str
    """sha256 (16 hex) of the system prompt and user prompt sent."""
    response_text: str = ""
    """The student's final response text."""
    kernel_source: str | None = None
    """Candidate module extracted from the response; None when none was found."""
    kernel_hash: str | None = None
    """sha256 (16 hex) of ``kernel_source``."""
    input_tokens: int = 0
    """Prompt tokens over all calls for this sample."""
    output_tokens: int = 0
    """Generated tokens over all calls for this sample."""
    latency_s: float = 0.0
    """Wall time of the model calls (a batched call's time is split evenly)."""
    calls: int = 1
    """Model calls made (more than one with tool use or agent turns)."""
    skill_reads: list[str] = Field(default_factory=list)
    """Paths read through ``read_skill`` (``SKILL.md``, ``references/x.md``); on-demand arms."""
    stop_reason: str | None = None
    """Why the last call stopped."""
    error: str | None = None
    """Infrastructure error (HTTP, timeout, outage) that ended this sample: not the student's;
    excluded from pass rates and retried on resume."""
    rung: str = "write"
    """Ladder rung of the case."""
    choice: int | None = None
    """``choose``: index of the candidate line with the highest score."""
    scores: list[float] = Field(default_factory=list)
    """``choose``: summed log-probability (nats) of each candidate line."""
    trace: str | None = None
    """Agent mode's write cases: the run's trace (the teachers' event format), relative to the
    run folder."""


class EvaluationRecord(BaseModel):
    """The verifier's verdict on one generated sample, summarised."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    kind: Literal["evaluation"] = "evaluation"
    """Record kind."""
    key: str
    """Key of the generation record judged."""
    kernel_hash: str | None = None
    """Hash of the kernel judged (None: nothing to judge)."""
    passed: bool
    """Whether the candidate passed every correctness check."""
    error_class: str | None = None
    """Verdict error class, ``no_kernel`` (nothing extracted) or ``generation`` (provider error)."""
    message: str = ""
    """Verdict message (truncated)."""
    speedup_eager: float | None = None
    """Eager median / candidate median (GPU only)."""
    speedup_compile: float | None = None
    """torch.compile median / candidate median (GPU only)."""
    device: str
    """``cpu`` or ``cuda``."""
    gpu: str | None = None
    """GPU name when on CUDA."""
    duration_s: float = 0.0
    """Verifier wall time."""


def iter_keys(path: Path) -> Iterator[str]:
    """Keys present in a run file (validated)."""
    model = GenerationRecord if path.name == GENERATIONS else EvaluationRecord
    for rec in read_records(path, model):
        yield rec.key
