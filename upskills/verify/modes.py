"""Guard (d) over torch's mode stacks: ``forward`` finds them as they were and leaves them so.

A torch function or dispatch mode left active runs on every torch call the process makes
afterwards, the verifier's own among them (copying an output into the judge's buffer,
fingerprinting it), so a forward could move its work there: out of the call, and on a GPU out
of the events (``docs/design/verifier.md``, "A forward that leaves a torch mode behind").
"""

from __future__ import annotations

from upskills.verify.verdict import ErrorClass, VerdictStage
from upskills.verify.worker import StageFailure


def mode_depths() -> tuple[int, int]:
    """How many torch function modes and dispatch modes are active in this process."""
    import torch

    return torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()  # pyright: ignore[reportPrivateUsage]


def check_modes_left(
    before: tuple[int, int],
    stage: VerdictStage,
    display: str,
    baseline: tuple[int, int] | None = None,
) -> None:
    """Raise guard (d) if the mode stacks moved during ``forward`` or before it.

    ``before`` is taken just before ``forward``, ``baseline`` before the candidate's import.
    The cheats: ``LINGERING_MODE`` and ``MODE_AT_IMPORT`` in ``tests/verify/test_adversarial.py``.
    """
    if baseline is not None and before != baseline:
        raise StageFailure(
            ErrorClass.GUARD,
            stage,
            f"{display}: guard (d) torch modes were active before ModelNew.forward ran "
            f"(function modes {baseline[0]} -> {before[0]}, dispatch modes {baseline[1]} -> "
            f"{before[1]}): the candidate's import or __init__ left them",
            guard="library_patch",
        )
    now = mode_depths()
    if now != before:
        raise StageFailure(
            ErrorClass.GUARD,
            stage,
            f"{display}: guard (d) ModelNew.forward left torch modes active (function modes "
            f"{before[0]} -> {now[0]}, dispatch modes {before[1]} -> {now[1]}): every torch "
            "call after it, the verifier's own, would run through them",
            guard="library_patch",
        )
