"""The kernel verifier: the judge every number upskills reports depends on.

``check(task, candidate)`` runs a candidate in a fresh child process (see ``sandbox``) through
parse -> static guards -> import -> interface -> correctness -> timing -> speedup and returns a
:class:`Verdict`. Importing this package does not import torch or triton.
"""

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
