"""The candidate's side of timing: events over judged calls, back-to-back calls, CUDA graphs.

Part of the candidate's process (:mod:`upskills.verify.candidate_host`): these requests run
``ModelNew.forward`` many times for the judge's clock and copy the last outputs into the
judge's buffers. Like the rest of that process they decide nothing: the judge times the
requests with its own clock and compares what lands in its memory.
"""

from __future__ import annotations

from typing import Any, cast

from upskills.verify.fingerprint import PROJECTIONS, fingerprints
from upskills.verify.guards import OpLog, make_op_recorder
from upskills.verify.judge_memory import give_back_cache
from upskills.verify.library_snapshot import threads_since
from upskills.verify.modes import check_modes_left, collect_garbage, mode_depths
from upskills.verify.perturb import perturb_inputs
from upskills.verify.protocol import Bulk, BulkDone, TensorHandle, TimeDone, TimeRun
from upskills.verify.transport import clone_tree, copy_into, import_args, keep_mapped, open_handle
from upskills.verify.verdict import ErrorClass, VerdictStage
from upskills.verify.worker import StageFailure, classify_exception, describe_exception


def flatten_any(value: Any) -> tuple[str, list[Any]]:
    """``(structure, items)`` of what forward returned (a candidate may return anything).

    Runs none of the candidate's code: the class is read with ``type`` (``isinstance`` would
    call a ``__class__`` property), and a list or tuple is read by the base class's iterator, so
    a subclass's ``__iter__`` or ``__len__`` never runs. One that did its work there, after
    ``forward`` and out of the op recorder's sight, passed every CPU trial with the static check
    on (``TUPLE_SUBCLASS`` in ``tests/verify/test_adversarial.py``, 2026-12-03).
    """
    import torch

    cls = type(cast(object, value))
    if issubclass(cls, torch.Tensor):
        return "tensor", [value]
    if issubclass(cls, tuple):
        items: list[Any] = [*tuple[Any, ...].__iter__(value)]
        return f"tuple[{len(items)}]", items
    if issubclass(cls, list):
        items = [*list[Any].__iter__(value)]
        return f"list[{len(items)}]", items
    return cls.__name__, [value]


PLAIN_LEAVES = (int, float, bool, str, type(None))
"""Leaf types whose exact instances run no code of anyone's when the verifier reads them."""


def own_attributes(value: Any) -> int:
    """How many attributes a tensor holds in its own ``__dict__``.

    An instance attribute shadows a method of the class (``out.untyped_storage = fn``), so the
    verifier's next ``out.untyped_storage()`` would run the candidate's function: one that
    filled the output so passed every CPU trial **with the static check on**
    (``SHADOWED_ON_THE_TENSOR`` in ``tests/verify/test_adversarial.py``, 2026-12-04). Read
    through the type's ``__dict__`` descriptor and ``dict.__len__``: no code of the candidate's.
    """
    return dict[str, Any].__len__(value.__dict__)


def plain_tensor(value: Any) -> bool:
    """A ``torch.Tensor`` of exactly that class with no attribute of its own."""
    import torch

    return type(cast(object, value)) is torch.Tensor and own_attributes(value) == 0


def changed_input(values: list[Any]) -> str | None:
    """The class an input was left as, when not a plain tensor, number, list or tuple of them.

    ``forward`` holds its inputs (and the lists in them) and may change a tensor's class
    (``x.__class__ = Sub``): the verifier's next read of it (its storage, a copy into it) would
    then run ``Sub.__torch_function__``, after ``forward`` and out of the op recorder's and the
    events' sight. One that filled the output so passed every CPU trial with the static check
    out of the way (``INPUT_CLASS_SWAP`` in ``tests/verify/test_adversarial.py``, 2026-12-04).
    Read with ``type`` and the base classes' iterators: none of the candidate's code runs here.
    """
    import torch

    for value in list[Any].__iter__(values):
        cls = type(cast(object, value))
        if cls is list:
            inner = changed_input([*list[Any].__iter__(value)])
            if inner is not None:
                return inner
        elif cls is tuple:
            inner = changed_input([*tuple[Any, ...].__iter__(value)])
            if inner is not None:
                return inner
        elif cls is torch.Tensor:
            if own_attributes(value):
                return f"torch.Tensor with {own_attributes(value)} attribute(s) of its own"
        elif cls not in PLAIN_LEAVES:
            return f"{cls.__module__}.{cls.__qualname__}"
    return None


def check_plain_inputs(values: list[Any], stage: VerdictStage, display: str) -> None:
    """Raise guard (b) ``input_type`` if :func:`changed_input` finds a changed input."""
    changed = changed_input(values)
    if changed is not None:
        raise StageFailure(
            ErrorClass.GUARD,
            stage,
            f"{display}: guard (b) ModelNew.forward left an input as a {changed}, not a plain "
            "torch.Tensor: the verifier's reads of its inputs would run that class's code",
            guard="input_type",
        )


class TimingRequests:
    """``time`` and ``bulk`` requests (a mixin of ``CandidateHost``)."""

    path: str
    display: str
    device: str
    watch: Any
    model: Any
    graph: Any

    def _sync(self) -> None:
        raise NotImplementedError

    def _collect(self, stage: VerdictStage, young: bool = False) -> None:
        """A collector pass (:func:`~upskills.verify.modes.collect_garbage`), watched.

        The pass runs the candidate's finalizers outside forward and its op recorder, just
        before a call whose inputs are already made: a finalizer that walked up to a trial's
        frame and summed its inputs with ``torch.add`` passed every CPU trial with the static
        check out of the way (``FINALIZER_AHEAD``, 2026-12-04). So the pass runs under a fresh
        op recorder (a class made per pass, as for forward: none the candidate could have
        edited beforehand), with the launch counter read before and after; a torch op or a
        launch during it is guard (d) ``library_patch``.
        """
        state = self.watch.counter.state
        log = OpLog()
        before = state.launches
        with make_op_recorder(log, state):
            collect_garbage(young=young)
        launched = state.launches - before
        if log.ops or launched:
            names = sorted({op.name for op in log.ops})
            ops = f"{len(log.ops)} torch op(s)" + (f" ({', '.join(names[:3])})" if names else "")
            raise StageFailure(
                ErrorClass.GUARD,
                stage,
                f"{self.display}: guard (d) the candidate's code ran in the verifier's collector "
                f"pass (a finalizer or a collector callback) and did work outside forward: {ops}, "
                f"{launched} kernel launch(es)",
                guard="library_patch",
            )

    def _forward(self, args: list[Any]) -> Any:
        """One call of ``forward``, which must leave no torch mode behind (guard (d))."""
        before = mode_depths()
        if before != self.watch.modes:  # left by the import, __init__ or an earlier request
            check_modes_left(before, VerdictStage.TIMING, self.display, self.watch.modes)
        out = self.model(*args)
        if mode_depths() != before:
            check_modes_left(before, VerdictStage.TIMING, self.display)
        return out

    def time_run(self, req: TimeRun) -> TimeDone:
        """Time forward with events, loading the judge's input sets in the judge's order."""
        import torch

        from upskills.verify.timing import time_cuda

        self._collect(VerdictStage.TIMING)
        mark = self.watch.thread_starts
        sets = [import_args(s) for s in req.input_sets]
        work = [clone_tree(v) for v in sets[0]]
        order = req.order

        def load(call: int) -> int:
            self._collect(VerdictStage.TIMING, young=True)  # the last output is copied
            check_plain_inputs(work, VerdictStage.TIMING, self.display)  # before they are read
            pick = order[call % len(order)]
            copy_into(work, sets[pick])
            if req.perturb:
                perturb_inputs(work, req.perturb[call % len(req.perturb)])
            return pick

        times: list[float] = []
        prints: list[Any] = []  # one 1-d tensor a timed call, on the device: no sync per call
        seed = req.fingerprint_seed

        def fingerprint(out: Any) -> None:  # the i-th timed call's, i = len(prints)
            if seed is not None:
                prints.append(_fingerprint_of(out, seed, len(prints)))

        before = self.watch.counter.state.launches
        keep = max(1, len(req.keep))
        slots = [[open_handle(h) for h in buffers] for buffers in req.keep]  # mapped untimed
        picks: list[int] = []

        def kept(pick: Any, out: Any) -> None:  # a chosen call's output, copied at once
            if len(picks) < len(slots):
                _copy_items(out, slots[len(picks)])
                picks.append(int(pick))

        try:
            with torch.no_grad():
                timed, last = time_cuda(
                    lambda: self._forward(work),
                    before_each=load,
                    keep_last=1 if req.keep_at else keep,
                    keep_at=req.keep_at,
                    on_kept=kept,
                    max_reps=req.max_reps,
                    flush_mode=req.flush,
                    target_s=req.target_ms / 1000.0,
                    times_out=times,
                    after_each=fingerprint if seed is not None else None,
                )
        except StageFailure:  # a guard of the timed path (load, _forward): its own verdict
            raise
        except Exception as exc:  # noqa: BLE001 - a failure while timing
            raise self._timing_failure(exc) from exc
        for pick, out in last[-len(req.keep) :] if not req.keep_at else []:
            kept(pick, out)
        self._sync()
        done = TimeDone(
            times_ms=times,
            picks=picks,
            launches=self.watch.counter.state.launches - before,
            library_changes=self.watch.library_changes(),
            threads=threads_since(self.watch, mark),
            fingerprints=_to_lists(prints),
            late_calls=timed.late_calls,
            head_start_x=timed.head_start_x,
            persisting_l2_bytes=timed.persisting_l2_bytes,
            persisting_l2_default_bytes=timed.persisting_l2_default_bytes,
        )
        # KernelBench's 8 GiB tensors: the copy of the inputs and two outputs stay cached here
        # while the judge builds the kept calls' references; an H100 had no room for both
        work.clear()
        last.clear()
        prints.clear()
        done.released_bytes = give_back_cache(self.device)
        return done

    def _timing_failure(self, exc: Exception) -> StageFailure:
        """A failure while timed (an out-of-memory error, a crash of ``forward``), classified."""
        return StageFailure(
            classify_exception(exc),
            VerdictStage.TIMING,
            f"timing failed: {describe_exception(exc, self.path, self.display)}",
        )

    def bulk(self, req: Bulk) -> BulkDone:
        """``calls`` back-to-back forwards, one synchronisation, the candidate's own event time.

        A failure of ``forward`` here is the candidate's, with its message, like one in the
        timed calls (the thirty-third session's H100 run lost two cheats' out-of-memory errors
        to a bare "exited with status 70" before).
        """
        mark = self.watch.thread_starts
        if req.graph:
            done = self._graph_bulk(req)
        else:
            try:
                done = self._audited_bulk(req) if req.perturb else self._plain_bulk(req)
            except StageFailure:  # a guard of the timed path (load, _forward): its own verdict
                raise
            except Exception as exc:  # noqa: BLE001 - a failure while timing
                raise self._timing_failure(exc) from exc
            done.released_bytes = give_back_cache(self.device)  # as after the timed calls
        done.threads = threads_since(self.watch, mark)
        return done

    def _plain_bulk(self, req: Bulk) -> BulkDone:
        import torch

        self._collect(VerdictStage.TIMING)
        inputs = import_args(req.inputs)
        before = self.watch.counter.state.launches
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        bufs = [open_handle(h) for h in req.outputs]
        land_at = req.calls - 1 if req.land_at is None else req.land_at
        with torch.no_grad():
            torch.cuda.synchronize()
            start.record()
            for i in range(req.calls):
                out = self._forward(inputs)
                if i == land_at:  # copied in stream order at once: no output outlives another
                    _copy_items(out, bufs)
                del out
            end.record()
            torch.cuda.synchronize()
        self._sync()
        return BulkDone(
            event_ms=float(start.elapsed_time(end)),
            launches=self.watch.counter.state.launches - before,
        )

    def _audited_bulk(self, req: Bulk) -> BulkDone:
        """Back-to-back calls, each on its own perturbed copy of the inputs, each fingerprinted.

        No call is landed, so none is one the forward could compute alone: the judge verifies
        calls it draws after the reply. ``calibrate`` runs the same loop without ``forward``,
        and without the collector pass before it: the judge takes the calibration's time off
        the calls', and a pass there ran the finalizers of the garbage the last calls left (a
        ``__del__`` that sleeps), which made the calls read faster by as much. Left for the
        timed pass's own collector pass, that garbage can only make them read slower.
        """
        import torch

        if not req.calibrate:  # no collector pass in the calibration: below
            self._collect(VerdictStage.TIMING)
        inputs = import_args(req.inputs)
        work = [clone_tree(v) for v in inputs]
        seed = req.fingerprint_seed if req.fingerprint_seed is not None else 0
        stand_in = [open_handle(h) for h in req.outputs]  # fingerprinted when calibrating
        before = self.watch.counter.state.launches
        prints: list[Any] = []
        with torch.no_grad():
            torch.cuda.synchronize()
            for i in range(req.calls):
                check_plain_inputs(work, VerdictStage.TIMING, self.display)
                copy_into(work, inputs)
                perturb_inputs(work, req.perturb[i % len(req.perturb)])
                if req.calibrate:
                    prints.append(fingerprints(stand_in, seed, i))
                    continue
                out = self._forward(work)
                prints.append(_fingerprint_of(out, seed, i))
                del out
            torch.cuda.synchronize()
        self._sync()
        return BulkDone(
            launches=self.watch.counter.state.launches - before, fingerprints=_to_lists(prints)
        )

    def _land(self, out: Any, handles: list[TensorHandle]) -> None:
        """Copy the output's tensors into the judge's buffers (same shapes only), then sync."""
        _copy_items(out, [open_handle(h) for h in handles])
        self._sync()

    def _drop_graph(self) -> None:
        """Forget the captured graph and unmap the judge's buffers it was captured on."""
        if self.graph is not None:
            for mapping in self.graph[3]:
                mapping.close()
            self.graph = None

    def _graph_bulk(self, req: Bulk) -> BulkDone:
        """Capture forward in a CUDA graph, or replay it: the judge's clock without host cost."""
        import torch

        before = self.watch.counter.state.launches
        try:
            if req.graph == "capture":
                inputs = import_args(req.inputs)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.no_grad(), torch.cuda.stream(side):
                    for _ in range(2):  # warm-up off the capture (autotuning, allocations)
                        self._forward(inputs)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.no_grad(), torch.cuda.graph(graph):
                    out = self._forward(inputs)
                torch.cuda.synchronize()
                self._drop_graph()
                self.graph = (graph, out, inputs, keep_mapped())  # replays read these buffers
                return BulkDone(launches=self.watch.counter.state.launches - before)
            if self.graph is None:
                raise RuntimeError("no graph was captured")
            graph, out, _, _ = self.graph
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(req.calls):
                graph.replay()
            end.record()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - not capturable: the judge says so
            raise StageFailure(
                ErrorClass.TIMING,
                VerdictStage.TIMING,
                f"forward could not run as a CUDA graph: {type(exc).__name__}: "
                f"{str(exc).strip()[:300]}",
            ) from exc
        self._land(out, req.outputs)
        return BulkDone(event_ms=float(start.elapsed_time(end)), launches=req.calls)


def _copy_items(out: Any, bufs: list[Any]) -> None:
    """Copy an output's plain tensors into the judge's mapped buffers (same shapes only)."""
    _, items = flatten_any(out)
    for item, buf in zip(items, bufs, strict=False):
        # a plain tensor only: a subclass's methods would run the candidate's code here, after
        # the events (trials refuse subclasses; a forward can tell timed calls from them)
        if plain_tensor(item) and list(item.shape) == list(buf.shape):
            buf.copy_(item)


def _fingerprint_of(out: Any, seed: int, call: int) -> Any:
    """Call ``call``'s fingerprint of a forward's output.

    NaN where an item is not a plain tensor: a subclass's methods would run the candidate's
    code here, after the events.
    """
    import torch

    items = flatten_any(out)[1]
    if all(plain_tensor(t) for t in items):
        return fingerprints(items, seed, call)
    return torch.full((len(items) * PROJECTIONS,), float("nan"), dtype=torch.float64)


def _to_lists(prints: list[Any]) -> list[list[float]]:
    """The timed calls' fingerprints as lists, in one copy from the device."""
    import torch

    if not prints:
        return []
    if len({p.numel() for p in prints}) == 1:  # the usual case: one transfer
        stacked: Any = torch.stack(prints).cpu()
        rows = cast("list[list[float]]", stacked.tolist())
        return [[float(v) for v in row] for row in rows]
    return [[float(v) for v in p.cpu().tolist()] for p in prints]
