"""Correctness trials and timing of one candidate, in the child process.

For each variant: the reference ``Model`` and the candidate's ``ModelNew`` are built from the
same init inputs after the same seed (and parameters with the reference's names are copied
into ``ModelNew``). For each seed, fresh inputs are drawn on the device; the candidate runs
first on its own clone, under the launch counter and the op recorder, then the reference on
another clone. Guards are checked before values, so a cheat is reported as a cheat.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from upskills.tasks.model import Task
from upskills.tasks.runtime import (
    ReferenceRunError,
    build_init_inputs,
    build_inputs,
    build_module,
    load_reference,
)
from upskills.verify.compare import compare_outputs, is_matmul_class
from upskills.verify.guards import (
    LaunchCounter,
    LibrarySnapshot,
    OpLog,
    forbidden_ops,
    live_threads,
    make_op_recorder,
    work_ops,
)
from upskills.verify.verdict import ErrorClass
from upskills.verify.worker import (
    StageFailure,
    check_interface,
    classify_exception,
    describe_exception,
    environment,
    import_candidate,
)

_STOP = {
    ErrorClass.GUARD,
    ErrorClass.CRASH,
    ErrorClass.RUNTIME,
    ErrorClass.COMPILE,
    ErrorClass.TIMEOUT,
    ErrorClass.TASK,
}
"""After a trial fails with one of these, no further trial runs."""


@dataclass
class Context:
    """What every trial needs: device, candidate file, guards and their state."""

    device: str
    """``cpu`` or ``cuda``."""
    path: str
    """The candidate file as imported."""
    display: str
    """The candidate's name in messages."""
    counter: LaunchCounter
    """Kernel launch counter (guard a)."""
    snapshot: LibrarySnapshot | None = None
    """Library attributes as they were before the candidate was imported (guard d)."""
    threads: set[int] = field(default_factory=set)
    """Threads alive before the candidate ran (guard d)."""
    reference_calls: list[int] = field(default_factory=lambda: [0])
    """Calls into the reference's forward while the candidate ran (guard e)."""
    candidate_active: list[bool] = field(default_factory=lambda: [False])
    """True while the candidate's forward runs."""


def clone_tree(value: Any) -> Any:
    """Deep copy of tensors in nested lists/tuples/dicts (other values shared)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list | tuple):
        return type(value)(clone_tree(v) for v in value)
    if isinstance(value, dict):
        return {k: clone_tree(v) for k, v in value.items()}
    return value


def mutated(now: Any, pristine: Any) -> str | None:
    """Path of the first input that differs from its pristine copy, or None."""
    import torch

    if isinstance(now, torch.Tensor):
        if now.shape != pristine.shape or now.dtype != pristine.dtype:
            return "input"
        same = (
            (now == pristine) | (now.isnan() & pristine.isnan())
            if now.is_floating_point()
            else now == pristine
        )
        return None if bool(same.all()) else "input"
    if isinstance(now, list | tuple):
        for i, (a, b) in enumerate(zip(now, pristine, strict=False)):
            where = mutated(a, b)
            if where:
                return f"{where}[{i}]"
    return None


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _guard_reference(ctx: Context, module: Any) -> None:
    """Count calls into the reference's forward made while the candidate runs (guard e)."""
    cls = module.Model
    original = cls.forward

    @functools.wraps(original)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if ctx.candidate_active[0]:
            ctx.reference_calls[0] += 1
        return original(self, *args, **kwargs)

    cls.forward = forward


def _library_guards(ctx: Context, when: str) -> None:
    """Guard (d): patched library functions, leftover threads, a changed current stream."""
    import torch

    changed = ctx.snapshot.changed() if ctx.snapshot else []
    if changed:
        raise StageFailure(
            ErrorClass.GUARD,
            "guards",
            f"{ctx.display}: guard (d) {when} the candidate replaced library functions: "
            f"{', '.join(changed[:5])}",
        )
    extra = live_threads() - ctx.threads
    if extra:
        raise StageFailure(
            ErrorClass.GUARD,
            "guards",
            f"{ctx.display}: guard (d) {when} {len(extra)} thread(s) started by the candidate "
            "are still running (threads are a timing trick)",
        )
    if ctx.device.startswith("cuda"):
        if torch.cuda.current_stream() != torch.cuda.default_stream():
            raise StageFailure(
                ErrorClass.GUARD,
                "guards",
                f"{ctx.display}: guard (d) {when} the current CUDA stream is not the default "
                "stream (side streams escape timing)",
            )


def _call_candidate(ctx: Context, model: Any, inputs: list[Any], log: OpLog) -> Any:
    import torch

    state = ctx.counter.state
    recorder = make_op_recorder(log, state)
    ctx.candidate_active[0] = True
    try:
        with torch.no_grad(), recorder:
            out = model(*inputs)
    except StageFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - the candidate's failure, classified
        raise StageFailure(
            classify_exception(exc), "correctness", describe_exception(exc, ctx.path, ctx.display)
        ) from exc
    finally:
        ctx.candidate_active[0] = False
    try:
        _sync(ctx.device)
    except Exception as exc:  # noqa: BLE001 - a kernel failed asynchronously on the GPU
        raise StageFailure(
            classify_exception(exc),
            "correctness",
            f"{ctx.display}: a kernel launched by ModelNew.forward failed on the GPU: "
            f"{type(exc).__name__}: {str(exc).strip()[:1500]}",
        ) from exc
    return out


def _trial(
    ctx: Context,
    task: Task,
    variant: str,
    seed: int,
    models: tuple[Any, Any],
    module: Any,
    prev: dict[str, Any],
) -> dict[str, Any]:
    """One trial: guards, mutation, values. Returns a VariantResult dict."""
    import torch

    ref_model, new_model = models
    inputs = build_inputs(module, ctx.device, seed)
    pristine = clone_tree(inputs)
    cand_inputs = clone_tree(inputs)
    before = ctx.counter.state.launches
    log = OpLog()
    out = _call_candidate(ctx, new_model, cand_inputs, log)
    where = f"variant {variant!r} seed {seed}"
    if ctx.counter.state.launches == before:
        raise StageFailure(
            ErrorClass.GUARD,
            "guards",
            f"{ctx.display}: guard (a) ModelNew.forward launched no kernel of its own "
            f"({where}); launch a Triton or load_inline kernel in every call",
        )
    if ctx.reference_calls[0]:
        raise StageFailure(
            ErrorClass.GUARD,
            "guards",
            f"{ctx.display}: guard (e) ModelNew.forward called the reference Model ({where})",
        )
    _library_guards(ctx, f"after forward ({where}):")
    ref_log = OpLog()
    ref_inputs = clone_tree(inputs)
    with torch.no_grad(), make_op_recorder(ref_log, ctx.counter.state):
        try:
            ref_out = ref_model(*ref_inputs)
        except Exception as exc:  # noqa: BLE001 - a broken reference is the task's fault
            raise StageFailure(
                ErrorClass.TASK,
                "correctness",
                f"reference of task {task.name!r} failed on {where}: {type(exc).__name__}: {exc}",
            ) from exc
    _sync(ctx.device)
    bad = forbidden_ops(log, work_ops(ref_log))
    if bad:
        names = ", ".join(f"aten.{op.name} on {op.numel} elements" for op in bad[:4])
        raise StageFailure(
            ErrorClass.GUARD,
            "guards",
            f"{ctx.display}: guard (b) ModelNew.forward runs PyTorch compute ops for the task's "
            f"work ({names}; {where}); do the work in your own kernel",
        )
    result: dict[str, Any] = {"variant": variant, "seed": seed, "passed": True}
    changed = mutated(cand_inputs, pristine)
    if changed:
        result.update(
            passed=False,
            error_class=ErrorClass.MUTATION.value,
            message=f"{where}: the candidate modified its {changed}",
        )
        return result
    cmp = compare_outputs(
        ref_out, out, atol=task.atol, rtol=task.rtol, matmul=is_matmul_class(task.tags)
    )
    result.update(
        max_abs_err=cmp.max_abs_err, max_rel_err=cmp.max_rel_err, atol=cmp.atol, rtol=cmp.rtol
    )
    if not cmp.passed:
        stale = prev.get(variant)
        if (
            stale is not None
            and compare_outputs(stale[1], out).passed
            and not compare_outputs(stale[0], ref_out).passed
        ):
            raise StageFailure(
                ErrorClass.GUARD,
                "guards",
                f"{ctx.display}: guard (c) ModelNew returned the previous call's result for new "
                f"inputs ({where}): results must not be cached",
            )
        result.update(
            passed=False,
            error_class=cmp.error_class.value if cmp.error_class else None,
            message=f"{where}: {cmp.message}",
        )
    prev[variant] = (ref_out, out)
    return result


def _build_pair(ctx: Context, module: Any, new_cls: Any, seed: int) -> tuple[Any, Any]:
    init_inputs = build_init_inputs(module, ctx.device, seed)
    ref_model = build_module(module.Model, clone_tree(init_inputs), ctx.device, seed)
    try:
        new_model = build_module(new_cls, clone_tree(init_inputs), ctx.device, seed)
    except Exception as exc:  # noqa: BLE001 - the candidate's constructor failed
        raise StageFailure(
            classify_exception(exc), "correctness", describe_exception(exc, ctx.path, ctx.display)
        ) from exc
    _copy_matching_state(ref_model, new_model)
    return ref_model, new_model


def _copy_matching_state(ref_model: Any, new_model: Any) -> None:
    """Copy the reference's parameters/buffers into same-named, same-shaped ones of ModelNew."""
    import torch

    if not (isinstance(ref_model, torch.nn.Module) and isinstance(new_model, torch.nn.Module)):
        return
    mine = new_model.state_dict()
    common = {
        k: v for k, v in ref_model.state_dict().items() if k in mine and mine[k].shape == v.shape
    }
    if common:
        new_model.load_state_dict(common, strict=False)


def run_check(payload: dict[str, Any]) -> dict[str, Any]:
    """Run a whole check in this (child) process; see :func:`upskills.verify.worker.run_job`."""
    task = Task.model_validate(payload["task"])
    device = payload["device"]
    ctx = Context(device, payload["path"], payload["display"], LaunchCounter())
    ctx.counter.install()
    if device.startswith("cuda"):  # references in full fp32: cuDNN convolutions default to TF32
        import torch

        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    variant_names: list[str] = payload["variants"]
    modules = {}
    for name in variant_names:
        try:
            modules[name] = load_reference(task, name)
        except ReferenceRunError as exc:
            raise StageFailure(ErrorClass.TASK, "import", str(exc)) from exc
        _guard_reference(ctx, modules[name])
    try:  # imported now: importing it later patches torch functions (torch.manual_seed)
        import torch._dynamo  # noqa: F401
    except ImportError:
        pass
    ctx.snapshot = LibrarySnapshot()
    ctx.threads = live_threads()
    candidate = import_candidate(ctx.path, ctx.display)
    _library_guards(ctx, "after import:")
    new_cls = check_interface(candidate, next(iter(modules.values())), ctx.display)
    results: list[dict[str, Any]] = []
    prev: dict[str, Any] = {}
    failure: StageFailure | None = None
    for name in variant_names:
        try:
            models = _build_pair(ctx, modules[name], new_cls, 0)
            for seed in range(payload["seeds"]):
                res = _trial(ctx, task, name, seed, models, modules[name], prev)
                results.append(res)
                if not res["passed"]:
                    break
        except StageFailure as exc:
            failure = exc
            break
        finally:
            prev.pop(name, None)
    out: dict[str, Any] = {"variants": results, "env": environment()}
    first_bad = next((r for r in results if not r["passed"]), None)
    if failure is not None:
        out.update(
            passed=False,
            error_class=failure.error_class.value,
            stage=failure.stage,
            message=failure.message,
        )
    elif first_bad is not None:
        failed = sum(1 for r in results if not r["passed"])
        out.update(
            passed=False,
            error_class=first_bad["error_class"],
            stage="correctness",
            message=f"{ctx.display}: {first_bad['message']}"
            + (f" (and {failed - 1} more failing trials)" if failed > 1 else ""),
        )
    else:
        out.update(
            passed=True,
            stage="correctness",
            message=f"correct on {len(results)} trials "
            f"({len(variant_names)} variants x {payload['seeds']} seeds)",
        )
        if payload.get("timing") and device.startswith("cuda"):
            try:
                out.update(_time_candidate(ctx, task, modules, new_cls, payload["main_variant"]))
            except StageFailure as exc:
                out.update(
                    passed=False,
                    error_class=exc.error_class.value,
                    stage=exc.stage,
                    message=exc.message,
                    timing_status="failed",
                )
    return out


TIMING_INPUT_SETS = 3
"""Input sets the timed calls draw from at random (a stale result then shows)."""


def _copy_into(dst: Any, src: Any) -> None:
    import torch

    if isinstance(dst, torch.Tensor):
        dst.copy_(src)
    elif isinstance(dst, list | tuple):
        for d, s in zip(dst, src, strict=True):
            _copy_into(d, s)


def _time_candidate(
    ctx: Context, task: Task, modules: dict[str, Any], new_cls: Any, main: str
) -> dict[str, Any]:
    """Time the candidate on the main variant; the last timed outputs must still be correct.

    Before each timed call (untimed, ahead of the L2 flush) the inputs are overwritten in place
    with one of a few input sets chosen at random, and the last few outputs are checked against
    the reference for their set: a candidate that works while checked but returns stale or
    unfinished results while timed fails guard (c).
    """
    import random

    import torch

    from upskills.verify.timing import time_cuda

    module = modules.get(main) or load_reference(task, main)
    ref_model, new_model = _build_pair(ctx, module, new_cls, 0)
    sets = [build_inputs(module, ctx.device, 100 + i) for i in range(TIMING_INPUT_SETS)]
    with torch.no_grad():
        ref_outs = [ref_model(*clone_tree(s)) for s in sets]
    work = clone_tree(sets[0])
    rng = random.Random(0)

    def load(_call: int) -> int:
        pick = rng.randrange(len(sets))
        _copy_into(work, sets[pick])
        return pick

    before = ctx.counter.state.launches
    try:
        with torch.no_grad():
            timing, last = time_cuda(lambda: new_model(*work), before_each=load, keep_last=4)
    except Exception as exc:  # noqa: BLE001 - a failure while timing
        return {
            "timing_status": "failed",
            "stage": "timing",
            "message": f"timing failed: {describe_exception(exc, ctx.path, ctx.display)}",
            "passed": False,
            "error_class": classify_exception(exc).value,
        }
    _library_guards(ctx, "after timing:")
    if ctx.counter.state.launches - before < timing.reps:
        raise StageFailure(
            ErrorClass.GUARD,
            "timing",
            f"{ctx.display}: guard (a) some timed calls launched no kernel (cached result?)",
        )
    for pick, out in last:
        cmp = compare_outputs(
            ref_outs[pick], out, atol=task.atol, rtol=task.rtol, matmul=is_matmul_class(task.tags)
        )
        if not cmp.passed:
            raise StageFailure(
                ErrorClass.GUARD,
                "timing",
                f"{ctx.display}: guard (c) the timed calls returned a wrong result "
                f"({cmp.message}): the candidate behaves differently when timed",
            )
    return {
        "timing_status": "measured",
        "timing": timing.model_dump(),
        "stage": "timing",
        "env": environment(),
    }
