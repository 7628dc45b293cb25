"""A second op recorder that the dispatch keys do not switch off (guard (b), ``hidden_ops``).

The op recorder (:func:`~upskills.verify.guards.make_op_recorder`) is a ``TorchDispatchMode``:
PyTorch calls it only while the calling thread's dispatch keys include ``Python``. A
``load_inline`` extension sets its own thread's keys: ``x + y`` under an
``ExcludeDispatchKeyGuard`` of ``Python``, or inside ``torch._C._DisableTorchDispatch``
reached from C++ by name, ran ATen's add where the recorder never saw it, and passed as the
candidate's kernel (found 2026-12-05). The import table cannot fence the guard: every extension
that calls ``torch::empty_like`` imports it.

PyTorch's RecordFunction fires in the dispatcher's entry (``Dispatcher::call``) whatever the
keys. So each trial's forward runs under the legacy CPU profiler (thread-local RecordFunction
callbacks, no Kineto, nothing printed; in a GPU check's late trial Kineto's, which also
records the GPU's kernels for :mod:`upskills.verify.watched_speed`), and the op recorder
marks every op it sees with a scope around the op's own call, named :data:`MARK_PREFIX` and a
token drawn for the profile, then the op's name and its largest input's size. An aten event
outside every mark with no mark anywhere below it went through the dispatcher without reaching
the recorder: an unseen op. A compute op inside the mark of an allocation, a view, a copy or
a small op ran inside a kernel an extension put in PyTorch's place (:func:`smuggled_ops`). A
composite op (``to``) is seen through the op it decomposes into (``_to_copy``), which carries
the mark below it.

PyTorch itself hides a few ops from the modes: ``torch.tensor([1.0, 2.0])`` builds its tensor
with ``Python`` excluded (``empty``, ``to``, ``detach_`` unseen, then a seen ``lift_fresh``).
So unseen ops are judged as the recorder's are: the candidate's host adds them to the trial's
op log, and a compute op on more than a few elements among them is guard ``hidden_ops`` at once.

A forward that switched the profile off and another on (``torch.autograd.profiler_legacy`` is
public; the static guard refuses the profilers by name since 2026-12-05) hands back the second
one's events: the profile's first scope is missing from them, and :attr:`Shadow.intact` says
so.

What still avoids it: ``redispatch``, RecordFunction's own switch, the profiler's functions
and threads of the extension's own, each fenced by what the extension imports
(:mod:`upskills.verify.libraries`); and a profile switched off and on from C++ that reaches
Python by names the preprocessor pasted together, with a scope of the first one's name opened
again (which it cannot know).
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from upskills.verify.timing import make_flush
from upskills.verify.verdict import FlushMode

if TYPE_CHECKING:
    from upskills.verify.guards import OpLog

MARK_PREFIX = "upskills.op_seen."
"""The scope the op recorder opens around each op it sees while the shadow profile runs is
this and a random token, drawn for each profile: a forward that opened a scope of that name
itself (``torch.autograd.profiler.record_function`` is public) would have its ops read as
seen, so it must not know the name."""


class Shadow:
    """The profile of one forward; :meth:`unseen` after it ends."""

    def __init__(self) -> None:
        self.mark = MARK_PREFIX + secrets.token_hex(16)
        self._events: list[Any] = []
        self._profile: Any = None

    @property
    def events(self) -> list[Any]:
        """The profile's events, read on first use.

        Both profilers' are read lazily (:class:`_LegacyProfile`): a trial that fails before
        its profile is judged does not wait for millions of them to be read.
        """
        if self._profile is not None:
            prof, self._profile = self._profile, None
            self._events = list(prof.events())
        return self._events

    @events.setter
    def events(self, events: list[Any]) -> None:
        self._events, self._profile = events, None

    @property
    def start(self) -> str:
        """The scope the profile opens first.

        Missing from its events, the profile the block ended is not the one it began (a
        forward switched it off and another on).
        """
        return self.mark + ".start"

    @property
    def intact(self) -> bool:
        """Did the events come from the profile this block began?"""
        return any(event.name == self.start for event in self.events)

    @property
    def gpu_busy_ms(self) -> float | None:
        """The GPU's busy time in the block, from its kernels and copies (None: none recorded)."""
        return gpu_busy_ms(self.events)

    def unseen(self) -> list[tuple[str, int]]:
        """``(op, elements)`` for each aten op that ran without reaching the op recorder.

        ``op`` is the overload packet's name as the recorder writes it (``add``); ``elements``
        the largest element count among its inputs. In call order, every call.
        """
        return unseen_ops(self.events, self.mark)


@contextmanager
def shadow_profile(
    shadow: Shadow | None = None, *, flush: FlushMode | None = None, kineto: bool = False
) -> Generator[Shadow]:
    """Profile the block with the legacy CPU profiler (RecordFunction, this thread only).

    ``shadow``: the one whose :attr:`Shadow.mark` the op recorder was made with (a new one
    when the recorder is made inside the block).

    ``flush`` (a GPU check's late trial): L2 is first flushed as before a timed call and the
    device synchronised, and the profiler is Kineto's with the GPU's kernels and copies as well
    (CUPTI), so the shadow also says how long the GPU was busy (:attr:`Shadow.gpu_busy_ms`,
    :mod:`upskills.verify.watched_speed`) from the cache the timed calls start from. Two
    profilers cannot run on one thread at once, so there this one takes the legacy profiler's
    place; ``kineto`` does so without the GPU's events (tests on CPU).

    ``torch.autograd.profiler_legacy`` is marked deprecated (torch 2.13) and still works there
    and in torch 2.11; where it is gone, the Kineto profiler (CPU events only) takes its place.
    Kineto prints two lines to the candidate's stderr at each start and stop.
    """
    from torch.autograd.profiler import record_function

    shadow = shadow if shadow is not None else Shadow()
    if flush is not None:
        import torch

        _flush(flush)()
        torch.cuda.synchronize()  # nothing of the judge's or the flush's in the GPU's profile
    prof = _profiler(gpu=flush is not None, kineto=kineto)
    with prof:
        with record_function(shadow.start):
            pass
        yield shadow
    shadow._profile = prof  # pyright: ignore[reportPrivateUsage]


_flush = functools.cache(make_flush)
"""One flush buffer a process and mode, kept for the trials that follow."""


def _profiler(gpu: bool, kineto: bool) -> Any:
    import warnings

    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    try:
        from torch.autograd import profiler_legacy
    except ImportError:
        profiler_legacy = None
    if (
        gpu
        or kineto
        or profiler_legacy is None
        or not hasattr(profiler_legacy, "_parse_legacy_records")
    ):
        return profile(
            activities=activities, record_shapes=True, experimental_config=_with_metadata()
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its deprecation notice, in the candidate's stderr
        return _LegacyProfile(profiler_legacy.profile(record_shapes=True))  # pyright: ignore[reportDeprecated]


def _with_metadata() -> Any:
    """Kineto's config that keeps each GPU record's metadata (a copy's ``bytes``), or None.

    ``expose_kineto_event_metadata`` is an experimental option (torch 2.11 and 2.13 have it; on
    an H100 with 2.11 a 1 MiB copy's record read 1048576 bytes, ``benchmarks/device/smoke.py``);
    where a torch lacks it, the copies' sizes are unknown and :func:`host_copy_bytes` reads 0.
    """
    try:
        from torch._C._profiler import _ExperimentalConfig  # pyright: ignore[reportPrivateUsage]

        return _ExperimentalConfig(expose_kineto_event_metadata=True)
    except (ImportError, TypeError):
        return None


COPY_TO_HOST = "Memcpy DtoH"
"""The start of a GPU copy record's name when it wrote host memory (``Memcpy DtoH (Device ->
Pageable)``, ``... -> Pinned)``)."""

_BYTES = re.compile(r'"bytes"\s*:\s*(\d+)')


def host_copy_bytes(events: list[Any]) -> int:
    """Bytes the GPU's own copy records say went from the device to the host.

    The op recorder counts the copies PyTorch makes (``guards.to_host``); these records also
    hold an extension's own ``cudaMemcpy`` to host memory it allocated, whose direction is an
    argument no import shows, and a copy run out of the recorder's sight (guard (b)
    ``python_fallback``; thirty-fifth session's review). A record without its size counts 0.
    """
    return sum(
        _copy_size(e)
        for e in events
        if _on_gpu(e) and str(getattr(e, "name", "")).startswith(COPY_TO_HOST)
    )


def _on_gpu(event: Any) -> bool:
    """Is this a record of the GPU's (a kernel, a copy, a fill), not of the host?"""
    return getattr(getattr(event, "device_type", None), "name", None) == "CUDA"


def _copy_size(event: Any) -> int:
    """A copy record's ``bytes``, from its typed metadata or its metadata's JSON (0: neither)."""
    fields = cast(dict[str, Any], vars(event))
    size = getattr(fields.get("event_metadata"), "bytes", None)
    if isinstance(size, int):
        return size
    for key in ("_metadata_json", "metadata_json"):
        text = fields.get(key)
        if isinstance(text, str) and (found := _BYTES.search(text)):
            return int(found.group(1))
    return 0


class _LegacyProfile:
    """The legacy profiler, its records parsed only when :meth:`events` reads them.

    Its own ``__exit__`` parses every record and builds their tree at once. A forward that
    iterates a 1M-element tensor makes a million ops before its 65th element read stops it
    (``guards.ScalarFallback``): that parse took 176 s on this project's 2-core machine
    against 9 s to collect the records unparsed (2026-12-05, torch 2.13; on an H100 the
    trial ran past its test's 150 s). A trial stopped so never reads them.
    """

    def __init__(self, legacy: Any) -> None:
        self._legacy = legacy
        self._records: Any = None

    def __enter__(self) -> _LegacyProfile:
        import torch

        cast(Any, torch.autograd)._enable_profiler_legacy(self._legacy.config())
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        self._records = cast(Any, torch.autograd)._disable_profiler_legacy()

    def events(self) -> list[Any]:
        from torch.autograd import profiler_legacy
        from torch.autograd.profiler_util import EventList

        records, self._records = self._records, None
        found = EventList(cast(Any, profiler_legacy)._parse_legacy_records(records))
        found._build_tree()  # pyright: ignore[reportPrivateUsage]
        return list(found)


def gpu_busy_ms(events: list[Any]) -> float | None:
    """The union of the GPU events' time ranges, in ms (None where there is no GPU event)."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in events if _on_gpu(e))
    return None if not spans else busy_us(spans) / 1000.0


def busy_us(spans: list[tuple[float, float]]) -> float:
    """Length of the union of ``(start, end)`` spans, given sorted by start."""
    total, end = 0.0, float("-inf")
    for lo, hi in spans:
        if hi > end:
            total += hi - max(lo, end)
            end = hi
    return total


def unseen_ops(events: list[Any], mark: str) -> list[tuple[str, int]]:
    """Aten events outside every ``mark`` scope with no ``mark`` scope below them.

    Inside a mark runs an op the recorder saw, and whatever PyTorch runs for it. An aten
    event's name proves nothing (a forward can open a scope named ``aten::empty`` and hide
    ops below it, found 2026-12-05), so only marks are trusted, never an aten parent.
    """
    found: list[tuple[str, int]] = []
    for event in events:
        if not event.name.startswith("aten::") or _inside(event, mark):
            continue
        if not _marked_below(event, mark):
            found.append((event.name.removeprefix("aten::"), _elements(event)))
    return found


def _elements(event: Any) -> int:
    """The largest element count among the event's inputs (0 where no shape was recorded)."""
    best = 0
    shapes: list[Any] = list(getattr(event, "input_shapes", None) or [])
    for shape in shapes:
        dims: list[Any] = list(cast(Any, shape)) if isinstance(shape, list | tuple) else []
        if dims and all(isinstance(d, int) for d in dims):
            count = 1
            for d in dims:
                count *= int(d)
            best = max(best, count)
    return best


def _inside(event: Any, mark: str) -> bool:
    return _nearest_mark(event, mark) is not None


def _nearest_mark(event: Any, mark: str) -> Any:
    """The innermost mark scope around ``event`` (None outside every mark)."""
    parent = event.cpu_parent
    while parent is not None:
        if _is_mark(parent, mark):
            return parent
        parent = parent.cpu_parent
    return None


def _is_mark(event: Any, mark: str) -> bool:
    return event.name.startswith(mark + ":")


def _marked_below(event: Any, mark: str) -> bool:
    stack = list(event.cpu_children)
    while stack:
        child = stack.pop()
        if _is_mark(child, mark):
            return True
        stack.extend(child.cpu_children)
    return False


def smuggled_ops(events: list[Any], mark: str) -> list[tuple[str, str, int]]:
    """``(op, seen_op, elements)``: aten compute run inside a seen op's replaced kernel.

    A seen op that the judge lets pass (an allocation, a view, a copy, or an op on at most
    ``SMALL_NUMEL`` elements) whose kernel runs a compute op on more than ``SMALL_NUMEL``
    elements is not running PyTorch's kernel: an extension replaced it. The op recorder calls
    the seen op with its mode popped, so what that kernel runs reaches no mode, and inside the
    recorder's own mark it read as seen (found 2026-12-05: an extension that registered its own
    ``empty_like`` kernel for the length of one forward, returning ``x + y``, passed).
    """
    from upskills.verify.guards import ALLOWED_OPS, DATA_MOVEMENT_OPS, SMALL_NUMEL

    passing = ALLOWED_OPS | DATA_MOVEMENT_OPS
    found: list[tuple[str, str, int]] = []
    for event in events:
        op = event.name.removeprefix("aten::")
        if op == event.name or op in passing or (n := _elements(event)) <= SMALL_NUMEL:
            continue
        scope = _nearest_mark(event, mark)
        if scope is None:
            continue
        seen_op, _, seen_elements = scope.name.removeprefix(mark + ":").rpartition(":")
        seen_n = int(seen_elements) if seen_elements.isdigit() else None
        if event.cpu_parent is scope and op == seen_op and seen_n is not None and n <= seen_n:
            continue  # the seen op's own event
        if seen_op in passing or (seen_n is not None and seen_n <= SMALL_NUMEL):
            found.append((op, seen_op, n))
    return found


def judge_shadow(shadow: Shadow, log: OpLog, display: str) -> None:
    """Judge one trial's shadow profile in the candidate's host (guard ``hidden_ops``).

    The profile must be the one the trial began. Ops that never reached the op recorder join
    the trial's op log, for the judge's rules on sizes, sums and the reference's copies; a
    compute op on more than ``SMALL_NUMEL`` elements among them fails here. Allocations and
    views are left out (PyTorch's own ``torch.tensor`` hides some). In a GPU check's late
    trial, more than 512 bytes copied from the GPU to the host by the GPU's own records is
    guard ``python_fallback`` (:func:`host_copy_bytes`).
    """
    from upskills.verify.guards import ALLOWED_OPS, DATA_MOVEMENT_OPS, SMALL_NUMEL, OpRecord
    from upskills.verify.judge_rules import host_fallback
    from upskills.verify.verdict import ErrorClass, VerdictStage
    from upskills.verify.worker import StageFailure

    def fail(what: str) -> StageFailure:
        return StageFailure(
            ErrorClass.GUARD,
            VerdictStage.CORRECTNESS,
            f"{display}: guard (b) ModelNew.forward {what}",
            guard="hidden_ops",
        )

    if not shadow.intact:
        raise fail("switched the verifier's profile off and another on: ops between went unseen")
    if smuggled := smuggled_ops(shadow.events, shadow.mark):
        op, seen_op, _ = smuggled[0]
        raise fail(
            f"ran PyTorch's aten::{op} inside aten::{seen_op}, whose kernel in PyTorch runs no "
            "such op: the op's kernel was replaced, and the compute must be the candidate's own "
            "kernels"
        )
    shown = [(op, n) for op, n in shadow.unseen() if op not in ALLOWED_OPS]
    log.ops.extend(OpRecord(op, n) for op, n in shown)
    compute = [f"aten::{op}" for op, n in shown if op not in DATA_MOVEMENT_OPS and n > SMALL_NUMEL]
    if compute:
        raise fail(
            f"ran PyTorch's {', '.join(dict.fromkeys(compute))} where the op recorder could not "
            "see it (its thread's dispatch keys changed, or its dispatch modes turned off): the "
            "compute must be the candidate's own kernels"
        )
    if (copied := host_copy_bytes(shadow.events)) > 8 * SMALL_NUMEL:  # 64 elements of 8 bytes
        raise host_fallback(copied, display, "bytes")
