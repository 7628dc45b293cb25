"""The kernel verifier: the judge every number upskills reports depends on.

``check(task, candidate)`` runs a candidate in a fresh child process (see ``sandbox``) through
parse -> static guards -> import -> interface -> correctness -> timing -> speedup and returns a
:class:`Verdict`. Importing this package does not import torch or triton.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from upskills._lazy import lazy_face

if TYPE_CHECKING:
    from upskills.verify.hardware import describe_hardware
    from upskills.verify.options import CheckOptions
    from upskills.verify.verdict import ErrorClass, Timing, VariantResult, Verdict, VerdictStage
    from upskills.verify.verifier import Verifier, check

__all__ = [
    "CheckOptions",
    "ErrorClass",
    "Timing",
    "VariantResult",
    "Verdict",
    "VerdictStage",
    "Verifier",
    "check",
    "describe_hardware",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "describe_hardware": "upskills.verify.hardware",
        "CheckOptions": "upskills.verify.options",
        "ErrorClass": "upskills.verify.verdict",
        "Timing": "upskills.verify.verdict",
        "VariantResult": "upskills.verify.verdict",
        "Verdict": "upskills.verify.verdict",
        "VerdictStage": "upskills.verify.verdict",
        "Verifier": "upskills.verify.verifier",
        "check": "upskills.verify.verifier",
    },
)
