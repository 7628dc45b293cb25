"""The Task model: a PyTorch reference in KernelBench format plus the metadata upskills needs.

A task's reference is the source of a module that defines ``class Model(nn.Module)``,
``get_inputs()`` and ``get_init_inputs()``. A *shape variant* re-binds module-level globals
(``batch_size = ...``) before ``get_inputs`` runs, which is how KernelBench files size their
inputs, so a real KernelBench file needs no change to be a task with one variant.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CATEGORIES = (
    "elementwise",
    "reduction",
    "norm",
    "softmax",
    "transpose",
    "copy",
    "gemm",
    "attention",
    "conv",
    "fusion",
    "scan",
    "atomics",
    "gather",
    "loss",
)
"""Category tags a built-in task may carry."""

INPUT_DOMAINS = ("large", "zero_rows", "offset", "nonfinite", "tiny")
"""Adversarial input domains a task may declare (see ``upskills.verify.domains``)."""


class ShapeVariant(BaseModel):
    """One input configuration of a task: overrides of the reference module's globals."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Short id of the variant, unique within the task (``main``, ``ragged``, ``small``)."""
    globals: dict[str, int | float | str | bool | list[int]] = Field(default_factory=dict)
    """Module-level names re-bound before ``get_init_inputs()``/``get_inputs()`` are called."""
    ragged: bool = False
    """True when some size is not a multiple of 16, 32 or 128 (exercises masking)."""
    cpu: bool = True
    """Whether the variant is small enough for the CPU interpreter (correctness on CPU)."""
    main: bool = False
    """The variant timed for speedups on GPU (exactly one per task)."""


class Task(BaseModel):
    """A kernel task: reference source, statement, tags and shape variants."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    name: str
    """Task id: a built-in name (``softmax_rows``) or the file stem of a loaded problem."""
    statement: str
    """One line in plain language: what the kernel must compute, with dtypes."""
    tags: list[str] = Field(default_factory=list)
    """Category tags (see ``CATEGORIES``); external tasks may carry none."""
    dtypes: list[str] = Field(default_factory=list)
    """Input dtypes as torch names without prefix (``float16``, ``bfloat16``, ``float32``)."""
    source: str
    """The reference module's full Python source (KernelBench format)."""
    variants: list[ShapeVariant] = Field(default_factory=list)
    """Shape variants; empty means one variant with the module's own globals."""
    origin: str = "builtin"
    """Where the task came from: ``builtin`` or the path it was loaded from."""
    atol: float | None = None
    """Absolute tolerance override; None means the verifier's dtype-aware default."""
    rtol: float | None = None
    """Relative tolerance override; None means the verifier's dtype-aware default."""
    domains: list[str] = Field(default_factory=list)
    """Adversarial input domains the reference defines (large, zero_rows, offset, ...)."""
    ranges: dict[str, list[int]] = Field(default_factory=dict)
    """Size global -> ``[low, high]`` for the random shape each check draws."""

    @property
    def hash(self) -> str:
        """Content hash of the reference and its variants (sha256, 16 hex chars)."""
        h = hashlib.sha256(self.source.encode())
        for v in self.all_variants():
            h.update(v.model_dump_json().encode())
        return h.hexdigest()[:16]

    def all_variants(self) -> list[ShapeVariant]:
        """Variants, with the implicit ``default`` one when none are declared."""
        if self.variants:
            return list(self.variants)
        return [ShapeVariant(name="default", main=True)]

    def main_variant(self) -> ShapeVariant:
        """The variant used for timing."""
        vs = self.all_variants()
        return next((v for v in vs if v.main), vs[0])
