"""Distillation: whole traces in, typed lessons, versioned Agent Skills packs and test cases out.

Works with no model at all; a teacher model, when configured, only rewrites the prose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from upskills._lazy import lazy_face

if TYPE_CHECKING:
    from upskills.distill.pipeline import DistillConfig, DistillError, DistillResult, distill

__all__ = [
    "DistillConfig",
    "DistillError",
    "DistillResult",
    "distill",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "DistillConfig": "upskills.distill.pipeline",
        "DistillError": "upskills.distill.pipeline",
        "DistillResult": "upskills.distill.pipeline",
        "distill": "upskills.distill.pipeline",
    },
)
