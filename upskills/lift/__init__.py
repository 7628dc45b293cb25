"""Lift experiments: students, arms, the generation and evaluation phases, and statistics.

Public API: ``Student``/``load_student``, ``LiftConfig``, ``run_lift``, ``evaluate_run``,
``pass_at_k``/``paired_lift``. Submodules import torch, the verifier and providers lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from upskills.lift.config import LiftConfig
    from upskills.lift.evaluate import evaluate_run
    from upskills.lift.runner import LiftError, run_lift
    from upskills.lift.stats import paired_lift, pass_at_k
    from upskills.lift.student import Student, load_student

__all__ = [
    "LiftConfig",
    "LiftError",
    "Student",
    "evaluate_run",
    "load_student",
    "paired_lift",
    "pass_at_k",
    "run_lift",
]

_LAZY = {
    "LiftConfig": "upskills.lift.config",
    "LiftError": "upskills.lift.runner",
    "Student": "upskills.lift.student",
    "load_student": "upskills.lift.student",
    "run_lift": "upskills.lift.runner",
    "evaluate_run": "upskills.lift.evaluate",
    "pass_at_k": "upskills.lift.stats",
    "paired_lift": "upskills.lift.stats",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'upskills.lift' has no attribute {name!r}")
