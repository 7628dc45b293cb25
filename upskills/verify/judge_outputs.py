"""What the judge derives from a trial's data.

Trial seeds, reference outputs as flat tensor lists, inputs a forward changed and what guard (c)
keeps of a trial's outputs; shared by
:mod:`upskills.verify.judge` and :mod:`upskills.verify.judge_timing`.
"""

from __future__ import annotations

import hashlib
from typing import Any, cast

from upskills.verify.verdict import ErrorClass, VerdictStage
from upskills.verify.worker import StageFailure


def trial_seed(seed: int, variant: str, index: int) -> int:
    """The seed of one trial, derived from the check's seed."""
    digest = hashlib.sha256(f"{seed}:{variant}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def flatten_outputs(value: Any) -> tuple[str, list[Any]]:
    """``(structure, tensors)`` of a reference output: ``tensor``, ``tuple[2]``, ``list[3]``."""
    import torch

    if isinstance(value, torch.Tensor):
        return "tensor", [value]
    if isinstance(value, list | tuple):
        seq = cast("list[Any] | tuple[Any, ...]", value)
        if all(isinstance(v, torch.Tensor) for v in seq):
            kind = "tuple" if isinstance(seq, tuple) else "list"
            return f"{kind}[{len(seq)}]", list(seq)
    raise StageFailure(
        ErrorClass.TASK,
        VerdictStage.CORRECTNESS,
        f"the reference returns a {type(cast(object, value)).__name__}; the judge compares tensors "
        "and tuples/lists of tensors",
    )


def mutated_input(now: list[Any], pristine: list[Any]) -> str | None:
    """The first input (``input[i]``, nested ``input[i][j]``) unlike its pristine copy."""
    import torch

    for i, (a, b) in enumerate(zip(now, pristine, strict=False)):
        if isinstance(a, torch.Tensor):
            same = (a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else a == b
            if not bool(same.all()):
                return f"input[{i}]"
        elif isinstance(a, list | tuple):
            inner = mutated_input(list(cast("list[Any] | tuple[Any, ...]", a)), list(b))
            if inner:
                return f"input[{i}]{inner.removeprefix('input')}"
    return None


STALE_SAMPLE = 1 << 20
"""Elements of each output tensor guard (c) keeps from one trial for the next."""


def stale_sample(value: Any) -> Any:
    """At most about :data:`STALE_SAMPLE` evenly spaced elements of each tensor in ``value``.

    Guard (c) only names why a trial that already failed failed (its output is the last
    trial's while the reference's changed), so a sample at the same places tells it as well as
    a copy. Whole copies of the last reference and output held two of a 38_L1Norm_ trial's 8 GiB
    tensors more than it needs, and that trial did not fit an H100's 80 GB.
    """
    import torch

    if isinstance(value, torch.Tensor):
        if value.dim() == 0 or value.numel() <= STALE_SAMPLE:
            return value.clone()
        step = value.numel() // STALE_SAMPLE
        picks = torch.arange(0, value.numel(), step, device=value.device)
        return value[torch.unravel_index(picks, value.shape)]
    if isinstance(value, list | tuple):
        seq = cast("list[Any] | tuple[Any, ...]", value)
        return type(seq)(stale_sample(v) for v in seq)
    return value
