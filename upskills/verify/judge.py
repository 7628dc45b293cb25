"""The judge: inputs, reference, comparison and verdict, in a process the candidate never enters.

One judge process serves one check (forked from the judge's warm zygote, see
:mod:`upskills.verify.sandbox`). It listens on a private socket, builds every reference from the
task, and for each trial draws fresh inputs, computes the reference output from a pristine copy,
hands the candidate's process shared copies and output buffers it owns, and compares what lands
in those buffers. The candidate's replies (:mod:`upskills.verify.protocol`) carry metadata and
timings only; the judge applies the guards to them and never executes anything the candidate
sent. On CUDA it also cross-checks the candidate's event timings against its own clock.
"""

from __future__ import annotations

import inspect
import random
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from upskills.tasks.model import Task
from upskills.tasks.runtime import build_init_inputs, build_inputs, build_module, load_reference
from upskills.verify.compare import compare_outputs, is_matmul_class
from upskills.verify.cuda_vmm import close_fds
from upskills.verify.domains import apply_domain
from upskills.verify.guards import LaunchState, OpLog, make_op_recorder, work_ops
from upskills.verify.judge_memory import memory_note, release_memory
from upskills.verify.judge_outputs import flatten_outputs, mutated_input, stale_sample, trial_seed
from upskills.verify.judge_rules import check_guards, late_trial, output_problem
from upskills.verify.libraries import accept_candidate, check_libraries
from upskills.verify.protocol import (
    REPLY,
    Ack,
    Bye,
    Channel,
    ChannelClosed,
    ChannelTimeout,
    Failure,
    Hello,
    Param,
    Ping,
    Setup,
    TensorHandle,
    Trial,
    TrialDone,
)
from upskills.verify.shapes import PlannedVariant, ShapeError, draw_random, shrink_for_cpu
from upskills.verify.transport import SharedArena, buffer_like, clone_tree, export_args
from upskills.verify.verdict import ErrorClass, FlushMode, Timing, VariantResult, VerdictStage
from upskills.verify.watched_speed import check_watched_speed, trial_flush
from upskills.verify.worker import StageFailure, environment

CPU_NOTE = (
    "CPU (Triton interpreter): programs run one after another, so races between programs "
    "cannot show; nothing is timed; and only what the code does for CPU tensors runs"
)


class JudgeJob(BaseModel):
    """What the judge's process needs for one check."""

    model_config = ConfigDict(extra="forbid")

    task: Task
    device: str
    address: str
    """Abstract Unix socket name to listen on."""
    display: str
    variants: list[str]
    seeds: int
    seed: int
    """The check's seed (every trial's seed derives from it)."""
    random_shape: bool = True
    timing: bool = True
    perturb_timing: bool = True
    flush: FlushMode = "write"
    audit_timed_calls: bool = True
    audit_clock_calls: bool = True
    late_trial: bool = False
    """One more trial after every other call (:attr:`CheckOptions.late_trial`)."""
    timeout_s: float
    candidate_parent: int | None = None
    """The candidate zygote's pid: the candidate's process is its child. Another process that
    connects first (one a candidate left running, found through ``/proc/net/unix``) is an
    impostor; None accepts the first connection (tests)."""
    static_notes: list[str] = Field(default_factory=list)


class JudgeResult(BaseModel):
    """What the judge decided (the Verifier turns it into a Verdict)."""

    model_config = ConfigDict(extra="forbid")

    passed: bool = False
    error_class: ErrorClass | None = None
    stage: VerdictStage = VerdictStage.CORRECTNESS
    guard: str | None = None
    message: str = ""
    variants: list[VariantResult] = Field(default_factory=list[VariantResult])
    timing_status: str = "skipped"
    timing: Timing | None = None
    env: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    candidate_lost: str | None = None
    """``closed`` or ``timeout`` when the candidate's process stopped answering."""


class CandidateLost(Exception):
    """The candidate's process closed the connection or did not answer in time."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


@dataclass
class Prepared:
    """One shape's reference, ready: its module, init inputs and built model."""

    plan: PlannedVariant
    module: Any
    init_inputs: list[Any]
    model: Any


@dataclass
class _Clock:
    marks: dict[str, float] = field(default_factory=dict[str, float])

    def add(self, stage: str, seconds: float) -> None:
        self.marks[stage] = round(self.marks.get(stage, 0.0) + seconds, 4)


def _params(fn: Any) -> list[Param]:
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [Param(name=p.name, kind=p.kind.name, text=str(p)) for p in params]


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


class Judge:
    """Judges one candidate over the connection to its process."""

    def __init__(self, job: JudgeJob, chan: Channel, deadline: float) -> None:
        self.job = job
        self.task = job.task
        self.device = job.device
        self.chan = chan
        self.deadline = deadline
        self.arena = SharedArena()
        self.clock = _Clock()
        self.result = JudgeResult(timing_status="unavailable" if job.device == "cpu" else "skipped")
        self.matmul = is_matmul_class(self.task.tags)
        self.peer: tuple[int, int] | None = None
        """The candidate's process and user, as the kernel reports them (None where unknown)."""
        self.model_variant: str | None = None
        """The variant the candidate's ``ModelNew`` was last built for."""

    # ------------------------------------------------------------------ exchange

    def ask(self, message: BaseModel) -> Any:
        """Send a request and wait (until the check's deadline) for the typed reply.

        The judge's own queued work (input copies, poisoned output buffers) finishes first: the
        candidate's process runs in another CUDA context, which the GPU may schedule earlier.
        """
        _sync(self.device)
        fds = self.arena.fds_for(message)
        try:
            self.chan.send(message, fds)
            raw = self.chan.recv_raw(self.deadline)
        except ChannelTimeout as exc:
            raise CandidateLost("timeout") from exc
        except (ChannelClosed, BrokenPipeError, ConnectionResetError) as exc:
            raise CandidateLost("closed") from exc
        finally:
            close_fds(fds)
        try:
            return REPLY.validate_python(raw)
        except ValueError as exc:
            lines = str(exc).splitlines()  # pydantic lists every field: keep the first few
            why = "; ".join(line.strip() for line in lines[:3]) + (" ..." if len(lines) > 3 else "")
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.CORRECTNESS,
                f"{self.job.display}: the candidate's process sent a malformed reply ({why})",
                guard="protocol",
            ) from exc

    def fail_from(self, failure: Failure) -> StageFailure:
        """The stage failure a candidate's reply reported (unknown classes -> runtime)."""
        try:
            cls = ErrorClass(failure.error_class)
        except ValueError:
            cls = ErrorClass.RUNTIME
        try:
            stage = VerdictStage(failure.stage)
        except ValueError:
            stage = VerdictStage.CORRECTNESS
        message = failure.message
        if self.device.startswith("cuda") and "out of memory" in message.lower():
            message += memory_note()
        return StageFailure(cls, stage, message, guard=failure.guard)

    # ------------------------------------------------------------------ plan

    def plan(self) -> list[PlannedVariant]:
        """The named variants (shrunk to the CPU budget on CPU) and one drawn at random."""
        planned: list[PlannedVariant] = []
        for name in self.job.variants:
            variant = next(v for v in self.task.all_variants() if v.name == name)
            if self.device == "cpu":
                try:
                    plan = shrink_for_cpu(self.task, variant)
                except ShapeError as exc:
                    raise StageFailure(
                        ErrorClass.TASK,
                        VerdictStage.CORRECTNESS,
                        f"reference of task {self.task.name!r} at variant {variant.name!r}: {exc}",
                    ) from exc
                if plan.name != variant.name:
                    self.result.notes.append(
                        f"variant {variant.name!r} shrunk for the CPU: "
                        + ", ".join(
                            f"{k}={v}"
                            for k, v in plan.globals.items()
                            if variant.globals.get(k) != v
                        )
                    )
            else:
                plan = PlannedVariant(variant.name, dict(variant.globals))
            planned.append(plan)
        if self.job.random_shape:
            rng = random.Random(self.job.seed)
            drawn, note = draw_random(self.task, self.device, rng, planned[0] if planned else None)
            if drawn is not None:
                planned.append(drawn)
            else:
                self.result.notes.append(f"no random shape this check: {note}")
        return planned

    def prepare(self, plan: PlannedVariant) -> Prepared:
        """Load the reference at this shape and build its model (seeded by the check)."""
        from upskills.tasks.runtime import ReferenceRunError

        base_name = plan.name.split("~")[0]
        base = next((v for v in self.task.all_variants() if v.name == base_name), None)
        try:
            module = load_reference(self.task, base or self.task.main_variant())
        except ReferenceRunError as exc:
            raise StageFailure(ErrorClass.TASK, VerdictStage.IMPORT, str(exc)) from exc
        module.__dict__.update(plan.globals)
        seed = trial_seed(self.job.seed, plan.name, -1)
        try:
            init_inputs = build_init_inputs(module, self.device, seed)
            model = build_module(module.Model, clone_tree(init_inputs), self.device, seed)
        except Exception as exc:  # noqa: BLE001 - a reference that cannot be built is the task's
            raise StageFailure(
                ErrorClass.TASK,
                VerdictStage.CORRECTNESS,
                f"reference of task {self.task.name!r} could not be built at {plan.name!r}: "
                f"{type(exc).__name__}: {exc}",
            ) from exc
        return Prepared(plan, module, init_inputs, model)

    # ------------------------------------------------------------------ correctness

    def setup(self, prepared: Prepared, first: bool) -> None:
        """Have the candidate build ``ModelNew`` for this variant."""
        import torch

        held: list[Any] = []  # the shared copies live until the candidate has read them
        init_shared, init_wire = export_args(prepared.init_inputs, self.arena)
        held.append(init_shared)
        state: dict[str, TensorHandle] = {}
        if isinstance(prepared.model, torch.nn.Module):
            for key, value in prepared.model.state_dict().items():
                shared, wire = export_args([value.detach()], self.arena)
                held.append(shared)
                handle = wire[0]
                assert isinstance(handle, TensorHandle)
                state[key] = handle
        req = Setup(variant=prepared.plan.name, init_args=init_wire, state=state)
        if first:
            req.interface = True
            req.init_params = _params(prepared.module.Model.__init__)
            req.forward_params = _params(prepared.module.Model.forward)
        reply = self.ask(req)
        del held
        if not isinstance(reply, Ack):
            raise StageFailure(ErrorClass.RUNTIME, VerdictStage.CORRECTNESS, "unexpected reply")
        if reply.failure is not None:
            raise self.fail_from(reply.failure)
        self.model_variant = prepared.plan.name

    def reference(self, prepared: Prepared, inputs: list[Any]) -> tuple[Any, set[str]]:
        """The reference output on a copy of ``inputs`` and the op families it worked with."""
        import torch

        log = OpLog()
        copies = clone_tree(inputs)
        with torch.no_grad(), make_op_recorder(log, LaunchState()):
            try:
                out = prepared.model(*copies)
            except Exception as exc:  # noqa: BLE001 - a broken reference is the task's fault
                raise StageFailure(
                    ErrorClass.TASK,
                    VerdictStage.CORRECTNESS,
                    f"reference of task {self.task.name!r} failed at {prepared.plan.name!r}: "
                    f"{type(exc).__name__}: {exc}",
                ) from exc
        _sync(self.device)
        return out, work_ops(log)

    def trial(
        self, prepared: Prepared, index: int, domain: str, prev: dict[str, Any], late: bool = False
    ) -> VariantResult:
        """One trial: fresh inputs, the reference, the candidate's run, guards and values.

        ``late``: the trial after every other call
        (:func:`~upskills.verify.judge_rules.late_trial`), so named in messages.
        """
        name = prepared.plan.name
        seed = trial_seed(self.job.seed, name, index)
        t0 = time.monotonic()
        inputs = build_inputs(prepared.module, self.device, seed)
        if domain != "normal":
            apply_domain(inputs, domain, seed)
        # ``inputs`` stay pristine: the reference runs on copies, the candidate on the arena's
        ref_out, ref_work = self.reference(prepared, inputs)
        structure, ref_items = flatten_outputs(ref_out)
        shared_inputs, wire = export_args(inputs, self.arena)
        buffers = [buffer_like(t, self.arena) for t in ref_items]
        self.clock.add("reference", time.monotonic() - t0)
        where = f"variant {name!r} seed {seed}" + (
            f" ({domain} inputs)" if domain != "normal" else ""
        )
        if late:
            where += ", the trial after every other call"
        t1 = time.monotonic()
        outs, flush = [h for _, h in buffers], trial_flush(self.device, self.job.flush, late)
        reply = self.ask(
            Trial(label=where, inputs=wire, outputs=outs, structure=structure, flush=flush)
        )
        self.clock.add("candidate", time.monotonic() - t1)
        t2 = time.monotonic()
        if not isinstance(reply, TrialDone):
            raise StageFailure(ErrorClass.RUNTIME, VerdictStage.CORRECTNESS, "unexpected reply")
        if reply.failure is not None:
            raise self.fail_from(reply.failure)
        check_guards(reply, ref_work, where, self.job.display)
        result = VariantResult(variant=name, seed=seed, domain=domain, passed=True)
        result.gpu_busy_ms = reply.gpu_busy_ms
        if prepared.plan.drawn:
            result.shape = dict(prepared.plan.globals)
        problem = output_problem(reply, structure, ref_items, where, self.job.display)
        if problem is not None:
            result.passed, result.error_class, result.message = False, problem[0], problem[1]
            self.clock.add("compare", time.monotonic() - t2)
            return result
        changed = mutated_input(shared_inputs, inputs)
        if changed:
            result.passed, result.error_class = False, ErrorClass.MUTATION
            result.message = f"{where}: the candidate modified its {changed}"
            self.clock.add("compare", time.monotonic() - t2)
            return result
        got = [b for b, _ in buffers]
        out = got[0] if structure == "tensor" else got
        ref = ref_items[0] if structure == "tensor" else ref_items
        # offset inputs are quantised (fp32 spacing 6e-5 at 1000): TF32-level tolerance there;
        # a one-pass variance still misses by orders of magnitude
        loose = self.matmul or domain == "offset"
        cmp = compare_outputs(ref, out, atol=self.task.atol, rtol=self.task.rtol, matmul=loose)
        result.max_abs_err, result.max_rel_err = cmp.max_abs_err, cmp.max_rel_err
        result.atol, result.rtol = cmp.atol, cmp.rtol
        if not cmp.passed:
            stale = prev.get(name)
            if (
                stale is not None
                and compare_outputs(stale[1], stale_sample(out)).passed
                and not compare_outputs(stale[0], stale_sample(ref)).passed
            ):
                raise StageFailure(
                    ErrorClass.GUARD,
                    VerdictStage.GUARDS,
                    f"{self.job.display}: guard (c) ModelNew returned the previous call's result "
                    f"for new inputs ({where}): results must not be cached",
                    guard="stale_result",
                )
            result.passed = False
            result.error_class = cmp.error_class
            result.message = f"{where}: {cmp.message}"
        prev[name] = (stale_sample(ref), stale_sample(out))
        self.clock.add("compare", time.monotonic() - t2)
        return result

    # ------------------------------------------------------------------ whole check

    def run(self) -> JudgeResult:
        """Plan, prepare, then run every trial (and timing) against the candidate."""
        t0 = time.monotonic()
        planned = self.plan()
        prepared = [self.prepare(p) for p in planned]
        self.clock.add("prepare", time.monotonic() - t0)
        t1 = time.monotonic()
        hello = self._hello()
        self.clock.add("import", time.monotonic() - t1)
        self.result.env = trusted_env(hello.env, environment(init_cuda=self.device != "cpu"))
        if hello.failure is not None:
            raise self.fail_from(hello.failure)
        domains = ["normal", *self.task.domains]
        prev: dict[str, Any] = {}
        count = 0
        current = prepared[0]
        for i, prep in enumerate(prepared):
            self.setup(prep, first=i == 0)
            current = prep
            for index in range(self.job.seeds):
                domain = domains[(index + i) % len(domains)] if index else "normal"
                res = self.trial(prep, index, domain, prev)
                self.result.variants.append(res)
                release_memory(self.device)
                count += 1
                if not res.passed:
                    break
            if any(not r.passed for r in self.result.variants):
                break
        self._conclude(count, len(prepared))
        if self.result.passed:
            self._check_process()
        prev.clear()  # large outputs: free them before the timing sets are built
        release_memory(self.device, force=True)
        if self.result.passed and self.job.timing and self.device.startswith("cuda"):
            from upskills.verify.judge_timing import time_main

            current = self.main_for_timing(prepared)
            time_main(self, current)
            self._check_process()  # again: a library loaded only once the timing began
        late = late_trial(self, current) if self.result.passed and self.job.late_trial else None
        if self.result.passed:
            check_watched_speed(self.result, self.job.display, late)
        return self.result

    def _check_process(self) -> None:
        """Fail a candidate whose process broke a rule no single call shows.

        It linked shared objects that call a vendor library, or its code changed library
        functions or the dispatcher's kernels since its import
        (:mod:`~upskills.verify.dispatch_table`).
        """
        if self.peer is not None:
            check_libraries(*self.peer, self.job.display)
        reply = self.ask(Ping(inspect=True))
        changed = reply.library_changes if isinstance(reply, Ack) else ["no answer"]
        if changed:
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.GUARDS,
                f"{self.job.display}: the candidate's code changed {', '.join(changed[:5])}: "
                "PyTorch's functions and kernels must stay PyTorch's, or they do the work "
                "outside forward",
                guard="library_patch",
            )

    def main_for_timing(self, prepared: list[Prepared]) -> Prepared:
        """The main variant, with the candidate's ``ModelNew`` rebuilt for it if need be.

        The trials leave the candidate holding the model of the last variant checked (the one
        drawn at random); timing the main variant's inputs on it ran a model built for other
        sizes and weights (seen on the H200: layernorm, embedding, histogram and three more
        known-good kernels failed as "behaves differently when timed").
        """
        name = self.task.main_variant().name
        main = next((p for p in prepared if p.plan.name == name), None)
        if main is None:
            main = self.prepare(PlannedVariant(name))
        if self.model_variant != name:
            self.setup(main, first=False)
        return main

    def _hello(self) -> Hello:
        try:
            raw = self.chan.recv_raw(self.deadline)
        except ChannelTimeout as exc:
            raise CandidateLost("timeout") from exc
        except ChannelClosed as exc:
            raise CandidateLost("closed") from exc
        reply = REPLY.validate_python(raw)
        if not isinstance(reply, Hello):
            raise CandidateLost("closed")
        return reply

    def _conclude(self, count: int, variants: int) -> None:
        bad = [r for r in self.result.variants if not r.passed]
        if bad:
            first = bad[0]
            self.result.passed = False
            self.result.error_class = first.error_class
            self.result.stage = VerdictStage.CORRECTNESS
            self.result.message = f"{self.job.display}: {first.message}"
            return
        used = sorted({r.domain for r in self.result.variants} - {"normal"})
        extra = f"; adversarial inputs: {', '.join(used)}" if used else ""
        self.result.passed = True
        self.result.stage = VerdictStage.CORRECTNESS
        self.result.message = (
            f"correct on {count} trials ({variants} shapes, 1 drawn at random, x "
            f"{self.job.seeds} seeds{extra})"
            if any(r.shape for r in self.result.variants)
            else f"correct on {count} trials ({variants} shapes x {self.job.seeds} seeds{extra})"
        )


def trusted_env(candidate: dict[str, str], own: dict[str, str]) -> dict[str, str]:
    """The verdict's environment: the judge's own, plus what only the candidate's process saw.

    The GPU and CUDA names key the speedup baselines, so they come from the judge alone: a
    candidate that claimed another GPU would be compared with that GPU's baselines.
    """
    theirs = {k: v for k, v in candidate.items() if k not in ("gpu", "cuda")}
    return {**theirs, **own}


def judge_check(job: JudgeJob) -> JudgeResult:
    """Body of the judge's process for one check.

    Listens on ``job.address``, waits for the candidate's process, and judges it; every failure
    of the candidate ends up in the result, never as an exception.
    """
    start = time.monotonic()
    deadline = start + job.timeout_s
    if job.device.startswith("cuda"):  # references in full fp32: cuDNN convolutions default to TF32
        import torch

        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + job.address)
    listener.listen(1)
    listener.settimeout(max(1.0, job.timeout_s))
    conn: socket.socket | None = None
    result = JudgeResult()
    judge: Judge | None = None
    impostors: list[str] = []
    try:
        conn, who = accept_candidate(listener, job.candidate_parent, impostors)
        listener.close()
        judge = Judge(job, Channel(conn), deadline)
        judge.peer = who
        result = judge.result
        if impostors:
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.GUARDS,
                f"{job.display}: a process that is not the candidate's connected to the judge "
                f"first ({', '.join(impostors[:3])}): a process a candidate left running",
                guard="impostor",
            )
        result = judge.run()
        try:
            judge.chan.send(Bye())
        except OSError:
            pass
    except TimeoutError:
        result.candidate_lost = "timeout"
        result.message = "the candidate's process never connected"
    except CandidateLost as exc:
        result.candidate_lost = exc.how
        result.passed = False
    except StageFailure as exc:
        result.passed = False
        result.error_class, result.message = exc.error_class, exc.message
        result.stage = VerdictStage(exc.stage)
        result.guard = exc.guard
        if exc.stage == VerdictStage.TIMING:
            result.timing_status = "failed"
    finally:
        if judge is not None:
            judge.arena.close()
            result.stage_seconds = dict(judge.clock.marks)
        if conn is not None:
            conn.close()
    if job.device == "cpu":
        result.notes.append(CPU_NOTE)
    result.notes.extend(job.static_notes)
    result.stage_seconds["judge_total"] = round(time.monotonic() - start, 4)
    return result
