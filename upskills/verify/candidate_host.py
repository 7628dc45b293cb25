"""The candidate's side of a check: import it, build ``ModelNew``, run what the judge asks.

Runs in a fresh process forked for one candidate (:mod:`upskills.verify.sandbox`), a process
the judge never enters. It maps the judge's inputs, runs ``ModelNew.forward`` under the launch
counter and the op recorder, and copies the outputs into the judge's buffers; it answers with
typed messages (:mod:`upskills.verify.protocol`). It decides nothing: the judge reads the
outputs from its own memory and compares them with its own reference. The instruments here
(launch counts, recorded ops, thread and library checks) report to the judge, which applies
the guards; a candidate that tampers with them can only have less to report, and the static
guards, which run in the judge's parent before this process exists, forbid the means to tamper.
"""

from __future__ import annotations

import inspect
import os
import socket
import sys
import time
import types
from pathlib import Path
from typing import Any, cast

from upskills.verify import dispatch_table, guards, l2_fence, transport
from upskills.verify.build_locks import clear_stale_locks, source_extensions_root
from upskills.verify.candidate_timing import (
    TimingRequests,
    check_plain_inputs,
    flatten_any,
    own_attributes,
    plain_tensor,
)
from upskills.verify.guards import SMALL_NUMEL, LaunchCounter, OpLog, ScalarFallback
from upskills.verify.host_memory import HELD_PINNED_LIMIT, held_pinned_bytes
from upskills.verify.host_reads import wrap_host_reads
from upskills.verify.interface import mismatch, signature_problem
from upskills.verify.judge_rules import host_fallback, python_fallback
from upskills.verify.library_snapshot import LibrarySnapshot, live_threads, wrap_thread_starts
from upskills.verify.modes import (
    check_modes_left,
    mode_depths,
    monitoring_callbacks,
    quiet_collector,
    signal_handlers,
)
from upskills.verify.protocol import (
    REQUEST,
    Ack,
    Bulk,
    BulkDone,
    Bye,
    Channel,
    ChannelClosed,
    Failure,
    Hello,
    OpSeen,
    OutputMeta,
    Param,
    Ping,
    Setup,
    TimeDone,
    TimeRun,
    Trial,
    TrialDone,
)
from upskills.verify.shadow_ops import Shadow, judge_shadow, shadow_profile
from upskills.verify.transport import (
    clone_tree,
    dtype_name,
    import_args,
    open_handle,
    receive_fds,
    release_opened,
)
from upskills.verify.verdict import ErrorClass, FlushMode, VerdictStage
from upskills.verify.worker import (
    StageFailure,
    classify_exception,
    describe_exception,
    environment,
    import_candidate,
)

CONNECT_TIMEOUT_S = 60.0
"""How long the candidate's process waits for the judge to listen."""


def _failure(exc: StageFailure) -> Failure:
    return Failure(
        error_class=exc.error_class.value, stage=exc.stage, message=exc.message, guard=exc.guard
    )


_REFUSED_HOOKS: list[str] = []
"""One entry per audit hook the candidate's process tried to add."""
_INSTALLED: list[Any] = []
"""The refusing hook, once installed in this process (a second would be refused by the first)."""


def refuse_audit_hooks(event: str, args: tuple[Any, ...]) -> None:
    """An audit hook that refuses every later one.

    Python drops a hook whose addition an existing hook answers with a ``RuntimeError``. A
    hook runs the candidate's code wherever the process raises an audit event, the
    verifier's own steps among them: one added at import that filled ``forward``'s empty
    output with ``torch.add`` when the verifier mapped the judge's buffer (``mmap.__new__``)
    passed every CPU trial, its work out of ``forward`` and out of the op recorder's sight
    (found 2026-12-03, ``AUDIT_HOOK`` in ``tests/verify/test_adversarial.py``).
    """
    if event == "sys.addaudithook":
        _REFUSED_HOOKS.append(event)
        raise RuntimeError("upskills: the candidate's process takes no audit hooks")


class _Watch:
    """Instruments installed before the candidate's module is imported."""

    def __init__(self, device: str = "cpu") -> None:
        import torch

        if device.startswith("cuda"):
            # CUDA's first use runs the calls torch queued for it, which register kernels
            # (torch.cuda._register_triton_kernels): done here, before anything is watched, not
            # in the first trial's forward, where guard (d) took them for the candidate's
            torch.cuda.init()
            l2_fence.prepare()  # the driver's entry points, before the candidate can touch ctypes
            torch.cuda.synchronize()  # the primary context exists: its limits can be read
            l2_fence.record_default()  # the persisting-L2 limit no candidate code has touched
        self.counter = LaunchCounter()
        self.counter.install()
        self.scalars = 0
        self.threads_started = 0  # while forward runs in a trial
        self.thread_starts = 0  # since the watch began, whenever (the timed requests' count)
        self.active = False
        wrap_host_reads(self)  # tensor data read into Python, counted (guard (b))
        wrap_thread_starts(self)
        dispatch_table.record_registrations()  # before the snapshot, which watches the wrappers
        self.snapshot = LibrarySnapshot()
        self.threads = live_threads()
        self.default_dtype = torch.get_default_dtype()
        self.sync = torch.cuda.synchronize
        quiet_collector()  # cyclic garbage is collected only where no output waits
        self.modes = mode_depths()  # before the candidate's import: forward must find these
        self.signals = signal_handlers()
        self.monitoring = monitoring_callbacks()
        if not _REFUSED_HOOKS and refuse_audit_hooks not in _INSTALLED:
            sys.addaudithook(refuse_audit_hooks)  # no later hook is added (none can be removed)
            _INSTALLED.append(refuse_audit_hooks)
        self.dispatch = dispatch_table.snapshot()  # last: the kernels before the candidate's

    def library_changes(self, dispatch: bool = False) -> list[str]:
        """Library functions replaced since the snapshot, and a changed default dtype.

        With ``dispatch``, also the ATen ops whose dispatcher kernels changed
        (:mod:`~upskills.verify.dispatch_table`, 0.1 s: after the import, the trials and the
        timing, not after every call).
        """
        import torch

        changed = self.snapshot.changed()
        if dispatch:
            ops = dispatch_table.changed(self.dispatch)
            changed += [f"{op} (its kernels in the dispatcher)" for op in ops]
        made = dispatch_table.overriding(self.dispatch)
        if made:
            changed.append(f"PyTorch's dispatcher ({len(made)} kernel(s) registered: {made[0]})")
        if _REFUSED_HOOKS:
            changed.append(f"sys.addaudithook (refused {len(_REFUSED_HOOKS)} time(s))")
        if signal_handlers() != self.signals:
            changed.append("signal handlers (signal.signal)")
        if monitoring_callbacks() != self.monitoring:
            changed.append("sys.monitoring callbacks (register_callback)")
        if torch.get_default_dtype() != self.default_dtype:
            changed.append(f"torch default dtype is now {torch.get_default_dtype()}")
        return changed


def _params(fn: Any) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    return params[1:] if params and params[0].name == "self" else params


def check_signature(ref: list[Param], cand_fn: Any, method: str, display: str, line: int) -> None:
    """Raise INTERFACE unless the candidate accepts the reference's arguments by name."""
    cand = _params(cand_fn)
    if problem := signature_problem(ref, cand):
        raise StageFailure(
            ErrorClass.INTERFACE,
            VerdictStage.INTERFACE,
            mismatch(display, line, method, ref, cand, problem),
        )


def model_class(module: types.ModuleType, display: str) -> tuple[Any, int]:
    """``ModelNew`` and its line, after checking it is an ``nn.Module`` subclass."""
    import torch

    new_cls = getattr(module, "ModelNew", None)
    if new_cls is None:
        raise StageFailure(
            ErrorClass.INTERFACE, VerdictStage.INTERFACE, f"{display}: defines no class ModelNew"
        )
    if not (isinstance(new_cls, type) and issubclass(new_cls, torch.nn.Module)):
        raise StageFailure(
            ErrorClass.INTERFACE,
            VerdictStage.INTERFACE,
            f"{display}: ModelNew must be a class deriving from torch.nn.Module",
        )
    try:
        line = inspect.getsourcelines(new_cls)[1]
    except (OSError, TypeError):
        line = 0
    return new_cls, line


def _ranges(values: list[Any]) -> list[tuple[int, int]]:
    import torch

    out: list[tuple[int, int]] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            start = storage.data_ptr()
            out.append((start, start + storage.nbytes()))
        elif isinstance(value, list | tuple):
            out.extend(_ranges(list(cast("list[Any] | tuple[Any, ...]", value))))
    return out


def _meta(value: Any, inputs: list[tuple[int, int]]) -> OutputMeta:
    import torch

    cls = type(cast(object, value))
    meta = OutputMeta(
        type_name=f"{cls.__module__}.{cls.__qualname__}", exact_tensor=plain_tensor(value)
    )
    if cls is torch.Tensor and not meta.exact_tensor:  # its own attributes shadow methods
        meta.type_name = f"torch.Tensor with {own_attributes(value)} attribute(s) of its own"
    if meta.exact_tensor:  # a subclass's methods are not called: the judge refuses it as it is
        storage = value.untyped_storage()
        start = storage.data_ptr()
        end = start + storage.nbytes()
        meta.shape = list(value.shape)
        meta.dtype = dtype_name(value.dtype)
        meta.device = value.device.type
        meta.aliases_input = any(start < e and s < end for s, e in inputs if storage.nbytes())
    return meta


class CandidateHost(TimingRequests):
    """Serves the judge's requests for one candidate."""

    def __init__(self, path: str, display: str, device: str, watch: _Watch) -> None:
        self.path = path
        self.display = display
        self.device = device
        self.watch = watch
        watch.counter.state.candidate_files = frozenset({path, os.path.realpath(path)})
        self.new_cls: Any = None
        self.line = 0
        self.model: Any = None
        self.graph: Any = None
        """(graph, its output, the inputs it reads) after a ``capture`` bulk request."""

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            self.watch.sync()

    def _call(self, inputs: list[Any], log: OpLog, flush: FlushMode | None = None) -> Any:
        import torch

        self._collect(VerdictStage.CORRECTNESS)
        shadow = Shadow()
        recorder = guards.make_op_recorder(log, self.watch.counter.state, mark=shadow.mark)
        check_modes_left(mode_depths(), VerdictStage.CORRECTNESS, self.display, self.watch.modes)
        state = self.watch.counter.state
        inputs_at = frozenset(t.untyped_storage().data_ptr() for t in guards.tensors(inputs))
        state.inputs, state.python_memory = inputs_at, 0
        state.gpu, state.host_reach, state.host_addresses = self.device.startswith("cuda"), 0, 0
        self.watch.active = True
        try:
            with torch.no_grad(), shadow_profile(shadow, flush=flush), recorder:
                before = mode_depths()
                out = self.model(*inputs)
                check_modes_left(before, VerdictStage.CORRECTNESS, self.display)
            if self.watch.scalars + log.scalars > SMALL_NUMEL:  # before the profile is read
                raise ScalarFallback(self.watch.scalars + log.scalars)
            if log.host_copied > SMALL_NUMEL:
                raise host_fallback(log.host_copied, self.display, "copied")
            if state.host_reach > SMALL_NUMEL:
                raise host_fallback(state.host_reach, self.display, "reach")
            if state.host_addresses:
                raise host_fallback(state.host_addresses, self.display, "address")
            if state.gpu and (held := held_pinned_bytes()) > HELD_PINNED_LIMIT:
                raise host_fallback(held, self.display, "pinned")
            state.python_memory += guards.python_memory(out, inputs_at)  # returned as is
            if state.python_memory > SMALL_NUMEL:
                raise host_fallback(state.python_memory, self.display, "python")
        except StageFailure:
            raise
        except ScalarFallback:
            raise python_fallback(f"more than {SMALL_NUMEL}", self.display) from None
        except Exception as exc:  # noqa: BLE001 - the candidate's failure, classified
            raise StageFailure(
                classify_exception(exc),
                VerdictStage.CORRECTNESS,
                describe_exception(exc, self.path, self.display),
            ) from exc
        finally:
            self.watch.active, state.inputs, state.gpu = False, None, False
        judge_shadow(shadow, log, self.display)
        # recorded in the late trial alone (flush set; watched_speed.py)
        self.gpu_busy_ms: float | None = shadow.gpu_busy_ms if flush is not None else None
        try:
            self._sync()
        except Exception as exc:  # noqa: BLE001 - a kernel failed asynchronously on the GPU
            raise StageFailure(
                classify_exception(exc),
                VerdictStage.CORRECTNESS,
                f"{self.display}: a kernel launched by ModelNew.forward failed on the GPU: "
                f"{type(exc).__name__}: {str(exc).strip()[:1500]}",
            ) from exc
        return out

    def setup(self, req: Setup) -> Ack:
        """Check the interface (first time) and build ``ModelNew`` for a variant."""
        import torch

        if self.new_cls is None:
            raise StageFailure(ErrorClass.IMPORT, VerdictStage.IMPORT, "no module imported")
        if req.interface:
            cls, line = self.new_cls, self.line
            check_signature(req.init_params, cls.__init__, "__init__", self.display, line)
            check_signature(req.forward_params, cls.forward, "forward", self.display, line)
        # copies: a model may keep a tensor it was built with, and the judge's buffers are
        # unmapped once this request is answered
        init_args = clone_tree(import_args(req.init_args))
        torch.manual_seed(0)  # pyright: ignore[reportUnknownMemberType]
        try:
            with torch.device(self.device):
                model = self.new_cls(*init_args)
            if isinstance(model, torch.nn.Module):
                model = model.to(self.device)
        except Exception as exc:  # noqa: BLE001 - the candidate's constructor failed
            raise StageFailure(
                classify_exception(exc),
                VerdictStage.CORRECTNESS,
                describe_exception(exc, self.path, self.display),
            ) from exc
        if req.state and isinstance(model, torch.nn.Module):
            mine = model.state_dict()
            common = {
                k: open_handle(h)
                for k, h in req.state.items()
                if k in mine and list(mine[k].shape) == h.shape
            }
            if common:
                model.load_state_dict(common, strict=False)
        self.model = model
        return Ack()

    def trial(self, req: Trial) -> TrialDone:
        """Run forward once; copy the outputs into the judge's buffers."""
        inputs = import_args(req.inputs)
        log = OpLog(scalar_limit=SMALL_NUMEL)
        before = self.watch.counter.state.launches
        self.watch.scalars = 0
        self.watch.threads_started = 0
        out = self._call(inputs, log, req.flush)
        check_plain_inputs(inputs, VerdictStage.CORRECTNESS, self.display)  # before any read
        done = TrialDone(
            launches=self.watch.counter.state.launches - before,
            ops=_summarize_ops(log),
            python_scalars=self.watch.scalars,
            threads_started=self.watch.threads_started + len(live_threads() - self.watch.threads),
            library_changes=self.watch.library_changes(),
            default_dtype=dtype_name(__import__("torch").get_default_dtype()),
            gpu_busy_ms=self.gpu_busy_ms,
        )
        structure, items = flatten_any(out)
        done.structure = structure
        input_ranges = _ranges(inputs)
        done.outputs = [_meta(item, input_ranges) for item in items]
        buffers = [open_handle(h) for h in req.outputs]
        if structure == req.structure and len(items) == len(buffers):
            for meta, item, buf in zip(done.outputs, items, buffers, strict=True):
                if meta.exact_tensor and meta.shape == list(buf.shape) and not meta.aliases_input:
                    if meta.dtype == dtype_name(buf.dtype):
                        buf.copy_(item)
        self._sync()
        return done


def _summarize_ops(log: OpLog) -> list[OpSeen]:
    seen: dict[str, OpSeen] = {}
    for op in log.ops:
        entry = seen.get(op.name)
        if entry is None:
            seen[op.name] = OpSeen(name=op.name, numel=op.numel, total_numel=op.numel)
        else:
            entry.calls += 1
            entry.numel = max(entry.numel, op.numel)
            entry.total_numel += op.numel
    return list(seen.values())


def _connect(address: str) -> socket.socket:
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect("\0" + address)
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def serve_candidate(source: str, display: str, device: str, address: str, workdir: str) -> None:
    """Body of the candidate's process: import, then answer the judge until ``bye``.

    Args:
        source: The candidate's source.
        display: Its name in messages (``kernel.py``).
        device: ``cpu`` or ``cuda``.
        address: Abstract Unix socket name the judge listens on.
        workdir: A private folder for the candidate's file (and its compile caches).
    """
    path = str(Path(workdir) / (display if display.endswith(".py") else "candidate.py"))
    Path(path).write_text(source)
    try:  # imported now: importing it later patches torch functions (torch.manual_seed)
        import torch._dynamo  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        pass
    watch = _Watch(device)
    host = CandidateHost(path, display, device, watch)
    chan = Channel(_connect(address), max_bytes=1 << 30, accept_fds=True)
    hello = Hello()
    # each source builds its extensions in a folder of its own (load_inline caches by name)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(source_extensions_root(source))
    for lock in clear_stale_locks():  # a build a killed check left: later loads would wait forever
        print(f"removed a stale extension build lock no process held: {lock}", file=sys.stderr)
    try:
        module = import_candidate(path, display)
        changed = watch.library_changes(dispatch=True)
        if changed:
            raise StageFailure(
                ErrorClass.GUARD,
                VerdictStage.GUARDS,
                f"{display}: importing it replaced library functions: {', '.join(changed[:5])}",
                guard="library_patch",
            )
        host.new_cls, host.line = model_class(module, display)
    except StageFailure as exc:
        hello.failure = _failure(exc)
    hello.env = environment()
    chan.send(hello)
    if hello.failure is not None:
        return
    _serve(chan, host)


def _serve(chan: Channel, host: CandidateHost) -> None:
    while True:
        try:
            raw = chan.recv_raw()
            req = REQUEST.validate_python(raw)
        except ChannelClosed:
            return
        reply: Any
        try:
            receive_fds(raw, chan.take_fds())
            if isinstance(req, Setup):
                reply = host.setup(req)
            elif isinstance(req, Trial):
                reply = host.trial(req)
            elif isinstance(req, TimeRun):
                reply = host.time_run(req)
            elif isinstance(req, Bulk):
                reply = host.bulk(req)
            elif isinstance(req, Ping):
                # ``inspect``: after the trials and the timing, what the candidate's code changed
                changes: list[str] = []
                if req.inspect:
                    changes = host.watch.library_changes(dispatch=True)
                reply = Ack(library_changes=changes)
            else:
                assert isinstance(req, Bye)
                chan.send(Ack())
                return
        except StageFailure as exc:
            reply = _reply_type(req)(failure=_failure(exc))
        release_opened()  # queued copies into the judge's buffers land before the reply
        chan.send(reply)
        sys.stdout.flush()


def _reply_type(req: Any) -> Any:
    if isinstance(req, Trial):
        return TrialDone
    if isinstance(req, TimeRun):
        return TimeDone
    if isinstance(req, Bulk):
        return BulkDone
    return Ack


def _open_to_others(path: Path) -> bool:
    """Every folder from ``/`` to ``path`` can be entered by other users."""
    import stat

    for part in [path, *path.parents]:
        try:
            mode = part.stat().st_mode
        except OSError:
            return False
        if part.is_dir() and not mode & stat.S_IXOTH:
            return False
    return True


def runtime_readable_by_others() -> bool:
    """Python, its packages and torch can be read by another user (else no privilege drop)."""
    import torch

    paths = [Path(sys.base_prefix), Path(sys.prefix), Path(torch.__file__).parent]
    return all(_open_to_others(p) for p in paths)


def drop_privileges(workdir: str) -> str | None:
    """As root, continue as ``nobody`` (the judge's processes are then out of reach).

    Returns:
        The user now running, or None when nothing changed (not root, or disabled with
        ``UPSKILLS_SANDBOX_USER=none``).
    """
    from upskills.verify.sandbox import sandbox_ids  # noqa: PLC0415 - imports this module

    user = os.environ.get("UPSKILLS_SANDBOX_USER", "nobody")
    if user == "none" or os.geteuid() != 0 or not runtime_readable_by_others():
        return None
    ids = sandbox_ids()
    if ids is None:
        return None
    os.chown(workdir, *ids)
    os.setgroups([])
    os.setgid(ids[1])
    os.setuid(ids[0])
    os.environ["HOME"] = workdir
    transport.OTHER_USER = True
    return user
