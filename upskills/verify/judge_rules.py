"""What the judge checks in a trial's reply: the run-time guards and the outputs as outputs.

Guards fire on what the candidate's process reported about one call (library patches, threads,
no launch of its own, Python/NumPy fallbacks, PyTorch doing the work); outputs must have the
reference's structure, exact ``torch.Tensor`` type, no aliasing of inputs, and its shape, dtype
and device. The late trial after every other call (:func:`late_trial`) lives here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from upskills.verify.judge import Judge, Prepared

from upskills.verify.guards import ALLOWED_OPS, DATA_MOVEMENT_OPS, SMALL_NUMEL, op_family
from upskills.verify.protocol import OpSeen, TrialDone
from upskills.verify.verdict import ErrorClass, VariantResult, VerdictStage
from upskills.verify.worker import StageFailure

GUARD_LETTERS = {
    "no_launch": "(a) ",
    "torch_compute": "(b) ",
    "python_fallback": "(b) ",
    "stale_result": "(c) ",
    "timed_result": "(c) ",
    "library_patch": "(d) ",
    "threads": "(d) ",
    "clock": "(d) ",
    "output_type": "(b) ",
    "output_alias": "(b) ",
    "input_type": "(b) ",
}
"""The guard families of the docs: (a) own kernel, (b) not PyTorch's work, (c) no caching,
(d) no timing or library tricks, (e) no reaching the judge."""


def python_fallback(count: str, display: str, where: str = "") -> StageFailure:
    """Guard ``python_fallback``: ``count`` tensor elements were read into Python or NumPy.

    The judge raises it from a trial's reply; the candidate's host, in the trial itself, from
    the 65th element a forward reads one at a time (:class:`~upskills.verify.guards.OpLog`).
    """
    return StageFailure(
        ErrorClass.GUARD,
        VerdictStage.GUARDS,
        f"{display}: guard (b) forward converted {count} tensor elements to Python/NumPy values "
        "(a Python or NumPy fallback is not a kernel)" + (f" ({where})" if where else ""),
        guard="python_fallback",
    )


HOST_FALLBACKS = {
    "copied": "copied {n} elements of GPU tensors to the host, where only Python, NumPy or C++ "
    "reads them",
    "python": "moved {n} elements through host memory that Python reads and writes without a "
    "conversion (torch.frombuffer, mmap, shared memory)",
    "reach": "gave its GPU kernels or its C++ {n} elements of host memory (pinned, or host "
    "tensors as arguments), which only a computation on the host needs",
    "bytes": "copied {n} bytes from the GPU to the host (the GPU's own copy records), where "
    "only C++, Python or NumPy reads them",
    "address": "gave its GPU kernels or its C++ {n} raw addresses of pinned or managed host "
    "memory (an integer, or an object's data_ptr()), or changed a checked pointer during its "
    "launch or launched with Triton's launch, JIT or pre-run hooks set, which only a "
    "computation on the host needs",
    "pinned": "ended a trial holding {n} bytes of pinned host memory from PyTorch's allocator, "
    "which GPU kernels reach and only a computation on the host needs",
}
"""How a forward's work reached the host, by :func:`host_fallback`'s ``how``."""


def host_fallback(count: int, display: str, how: str) -> StageFailure:
    """Guard ``python_fallback``: ``count`` elements (or bytes) went where the host computes.

    ``how``: a key of :data:`HOST_FALLBACKS`.
    """
    return StageFailure(
        ErrorClass.GUARD,
        VerdictStage.GUARDS,
        f"{display}: guard (b) forward {HOST_FALLBACKS[how].format(n=count)} (a Python or host "
        "fallback is not a kernel)",
        guard="python_fallback",
    )


def timed_threads(display: str, count: int) -> StageFailure:
    """Guard ``threads`` on a timed request: threads started while timed, or alive since import.

    ``count`` threads started while timed or alive beyond the census taken before the
    candidate's import. Trials refuse a forward's threads; the timed calls and the clock check
    count them too, so no thread runs beside the calls the judge times (one could slow the
    clock check's calibration pass alone, which no forward runs in, and shrink the judge's
    estimate).
    """
    return StageFailure(
        ErrorClass.GUARD,
        VerdictStage.TIMING,
        f"{display}: guard (d) {count} thread(s) started while timed or alive since the "
        "candidate's import; threads escape the op recorder and the timed stream",
        guard="threads",
    )


def check_guards(reply: TrialDone, ref_work: set[str], where: str, display: str) -> None:
    """Run-time guards on what the candidate's process reported about one call."""

    def fire(guard: str, text: str) -> StageFailure:
        letter = GUARD_LETTERS.get(guard, "")
        return StageFailure(
            ErrorClass.GUARD,
            VerdictStage.GUARDS,
            f"{display}: guard {letter}{text} ({where})",
            guard=guard,
        )

    if reply.library_changes:
        raise fire(
            "library_patch",
            "library state changed while forward ran: " + ", ".join(reply.library_changes[:5]),
        )
    if reply.threads_started:
        raise fire(
            "threads",
            f"{reply.threads_started} thread(s) started by forward or alive since the "
            "candidate's import; threads escape the op recorder and the timed stream",
        )
    if reply.launches == 0:
        raise fire(
            "no_launch",
            "ModelNew.forward launched no kernel of its own; launch a Triton or "
            "load_inline kernel in every call",
        )
    scalars = reply.python_scalars + sum(
        op.calls for op in reply.ops if op.name == "_local_scalar_dense"
    )
    if scalars > SMALL_NUMEL:
        raise python_fallback(str(scalars), display, where)
    bad: list[OpSeen] = []
    compute_total = 0
    for op in reply.ops:
        if op.name in ALLOWED_OPS:
            continue
        if op.name not in DATA_MOVEMENT_OPS:
            compute_total += op.total_numel
        if op.numel <= SMALL_NUMEL:
            continue
        if op.name not in DATA_MOVEMENT_OPS or op_family(op.name) in ref_work:
            bad.append(op)
    if bad:
        names = ", ".join(f"aten.{op.name} on {op.numel} elements" for op in bad[:4])
        raise fire(
            "torch_compute",
            f"ModelNew.forward runs PyTorch compute ops for the task's work ({names}); "
            "do the work in your own kernel",
        )
    if compute_total > SMALL_NUMEL:
        ops = ", ".join(
            f"aten.{op.name} x{op.calls}"
            for op in reply.ops
            if op.name not in ALLOWED_OPS and op.name not in DATA_MOVEMENT_OPS
        )
        raise fire(
            "torch_compute",
            f"ModelNew.forward runs PyTorch compute ops on {compute_total} elements in all "
            f"({ops}); splitting the work into small pieces is still PyTorch's work",
        )


def output_problem(
    reply: TrialDone, structure: str, ref_items: list[Any], where: str, display: str
) -> tuple[ErrorClass, str] | None:
    """Structure, exact type, aliasing, shape, dtype and device of the outputs."""
    from upskills.verify.transport import dtype_name

    if reply.structure != structure or len(reply.outputs) != len(ref_items):
        return ErrorClass.SHAPE, (
            f"{where}: forward returned {reply.structure or 'nothing'}, expected {structure}"
        )
    for i, (meta, ref) in enumerate(zip(reply.outputs, ref_items, strict=True)):
        label = "output" if structure == "tensor" else f"output[{i}]"
        if not meta.exact_tensor:
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.GUARDS,
                f"{display}: {label} is a {meta.type_name}, not a plain "
                f"torch.Tensor ({where}); subclasses can do work where outputs are judged",
                guard="output_type",
            )
        if meta.aliases_input:
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.GUARDS,
                f"{display}: {label} shares memory with an input ({where}); return a new tensor",
                guard="output_alias",
            )
        if meta.shape != list(ref.shape):
            return ErrorClass.SHAPE, (
                f"{where}: {label} has shape {tuple(meta.shape)}, expected {tuple(ref.shape)}"
            )
        if meta.dtype != dtype_name(ref.dtype):
            return ErrorClass.DTYPE, (
                f"{where}: {label} has dtype {meta.dtype}, expected {dtype_name(ref.dtype)}"
            )
        if meta.device != ref.device.type:
            return ErrorClass.DEVICE, (
                f"{where}: {label} is on {meta.device}, expected {ref.device.type}"
            )
    return None


def late_trial(judge: Judge, prepared: Prepared) -> VariantResult:
    """One more trial, after every other call of the check (found 2026-12-05).

    Of the variant the candidate's model was last built for (the main one after a timing).
    The timed calls run without the op recorder, and their outputs are checked, not how they
    were made: a forward that counted its calls could launch its own kernel in the trials and
    hand the work to PyTorch afterwards (``x + y``, an ``at::mm`` in its extension, beside a
    launch of anything), and be timed at PyTorch's speed. This trial comes after those calls,
    with fresh inputs, the op recorder, the shadow profile and every trial's guard, so a
    forward that switches once the trials are over is called here switched. One that switches
    back after a number of calls it foresees is not. Its result (passed) is returned: its GPU
    busy time is one of :mod:`~upskills.verify.watched_speed`'s. It waits first until the
    driver could have cleared the memory the judge gave back (:mod:`~upskills.verify.clearing`;
    the stage ``clearing_wait``): inside that window a memory-bound kernel runs 10-14% slower.
    """
    from upskills.verify.judge_memory import settle

    settle(judge, force=True)
    result = judge.trial(prepared, judge.job.seeds, "normal", {}, late=True)
    if not result.passed:
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.GUARDS,
            f"{judge.job.display}: guard (c) {result.message}: the forward computes "
            "differently once the trials are over",
            guard="timed_result",
        )
    return result
