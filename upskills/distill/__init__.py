"""Distillation: whole traces in, typed lessons, versioned Agent Skills packs and test cases out.

Works with no model at all; a teacher model, when configured, only rewrites the prose.
"""

from upskills.distill.pipeline import DistillConfig, DistillError, DistillResult, distill

__all__ = ["DistillConfig", "DistillError", "DistillResult", "distill"]
