"""A pack's provenance (``references/provenance.json``): what it was distilled from, and how.

The distiller writes it; the pack loader reads it; lift reads it to keep the cases of tasks
that fed a skill out of the held-out split, and to find the traces of the ``excerpt`` arm;
``skills diff`` compares it. A hand-written pack may carry a partial one (``traces`` only).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class TraceSource(BaseModel):
    """One trace a pack was distilled from."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str
    """The trace's id."""
    file: str = ""
    """Trace file name (no folder, so packs do not leak local paths)."""
    sha256: str = ""
    """sha256 of the trace file, first 16 hex characters."""
    task: str = ""
    """Task the trace solved."""
    task_hash: str = ""
    """That task's content hash."""
    model: str = ""
    """Teacher model of the trace ('' when unknown)."""

    def describe(self) -> str:
        """``trace_id (task, sha256 ...)``: how ``skills diff`` names it."""
        return f"{self.trace_id} ({self.task or '?'}, sha256 {self.sha256 or '?'})"


class TemplateSource(BaseModel):
    """Where a shipped template kernel came from."""

    model_config = ConfigDict(extra="forbid")

    file: str
    """Path of the template in the pack (``scripts/<task>_kernel.py``)."""
    task: str
    """Task the template solves."""
    trace_id: str
    """Trace whose passing kernel it is."""
    speedup_eager: float | None = None
    """Its measured speedup over eager PyTorch (None: not timed)."""
    speedup_compile: float | None = None
    """Its measured speedup over ``torch.compile`` (None: not timed)."""
    gpu: str | None = None
    """The GPU those speedups were measured on."""


class Provenance(BaseModel):
    """``references/provenance.json``."""

    model_config = ConfigDict(extra="forbid")

    distiller: str = ""
    """Distiller name and version (``upskills-distill 0.1.0``); '' for a hand-written pack."""
    evidence_sha256: str = ""
    """Hash over the source traces' ids and hashes: same evidence, same value."""
    config: dict[str, Any] = Field(default_factory=dict[str, Any])
    """The distiller's configuration, as it dumped it (opaque here)."""
    teacher: str | None = None
    """Model that polished the prose, if any."""
    prompts: dict[str, str] = Field(default_factory=dict[str, str])
    """Prompt name -> sha256 of each prompt used."""
    traces: list[TraceSource] = Field(default_factory=list[TraceSource])
    """Source traces."""
    templates: list[TemplateSource] = Field(default_factory=list[TemplateSource])
    """Template kernels and their traces."""
    families: list[str] = Field(default_factory=list[str])
    """Family hashes of the tasks that fed the pack (recomputed from source at lift time)."""
    ablation: dict[str, int] = Field(default_factory=dict[str, int])
    """How the performance lessons' effects were attributed (isolated/ablated/confounded)."""

    def task_hashes(self) -> set[str]:
        """Content hashes of the tasks that fed the pack (non-empty ones)."""
        return {t.task_hash for t in self.traces if t.task_hash}

    def trace_refs(self) -> set[str]:
        """Every name a source trace goes by: trace ids, file names and file stems."""
        refs = {t.trace_id for t in self.traces} | {t.trace_id for t in self.templates}
        for t in self.traces:
            if t.file:
                refs |= {t.file, t.file.removesuffix(".jsonl")}
        return refs

    def to_json(self) -> str:
        """The file's text: sorted keys, one-space indent, trailing newline."""
        import json

        return json.dumps(self.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"
