"""The shadow profile finds aten ops that ran without reaching the op recorder.

The op recorder is a ``TorchDispatchMode``; the shadow profile (RecordFunction, through the
legacy CPU profiler) sees every op that enters the dispatcher. Here the recorder is turned off
from Python with ``torch._C._DisableTorchDispatch``, the switch a C++ extension reached by name
on 2026-12-05; the end-to-end attacks through a real extension are in ``test_load_inline.py``.
"""

from __future__ import annotations

import types
import warnings
from typing import Any

import pytest
import torch

from upskills.verify import shadow_ops
from upskills.verify.guards import LaunchState, OpLog, make_op_recorder
from upskills.verify.shadow_ops import shadow_profile


@pytest.fixture(autouse=True, params=["legacy", "kineto"])
def profiler(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test with the legacy profiler (CPU trials) and with Kineto's (a GPU trial's, whose
    CUDA half this machine cannot run: the op events and their tree are the same code)."""
    if request.param == "kineto":
        real = shadow_ops._profiler  # pyright: ignore[reportPrivateUsage]
        monkeypatch.setattr(shadow_ops, "_profiler", lambda gpu, kineto: real(gpu, True))
    return request.param


def _unseen(forward) -> tuple[list[tuple[str, int]], list[str]]:
    """(ops the shadow profile found unseen, ops the recorder logged) for one call."""
    log = OpLog()
    with torch.no_grad(), shadow_profile() as shadow:
        with make_op_recorder(log, LaunchState(), mark=shadow.mark):
            forward()
    return shadow.unseen(), [op.name for op in log.ops]


X = torch.randn(4096)
Y = torch.randn(4096)


def test_ops_the_recorder_saw_are_not_unseen():
    unseen, logged = _unseen(lambda: torch.add(X, Y))
    assert unseen == [] and logged == ["add"]


def test_a_composite_op_is_seen_through_the_op_it_decomposes_into():
    """``to`` enters the dispatcher as itself; the mode sees ``_to_copy`` below it."""
    unseen, logged = _unseen(lambda: (X.to(torch.float64), torch.nn.functional.gelu(X).sum()))
    assert unseen == [], unseen
    assert "_to_copy" in logged and "to" not in logged


def test_an_op_run_with_the_recorder_turned_off_is_unseen():
    def hidden() -> None:
        torch.empty_like(X)  # seen: the recorder is on here
        with torch._C._DisableTorchDispatch():  # pyright: ignore[reportPrivateUsage]
            torch.add(X, Y)
            torch.mul(X, Y)
            torch.add(X, Y)

    unseen, logged = _unseen(hidden)
    assert unseen == [("add", 4096), ("mul", 4096), ("add", 4096)]
    assert logged == ["empty_like"]


def test_without_marks_every_op_would_read_as_unseen():
    """The marks are what the analysis reads: a recorder that does not mark proves nothing."""
    log = OpLog()
    with torch.no_grad(), shadow_profile() as shadow:
        with make_op_recorder(log, LaunchState()):
            torch.add(X, Y)
    # the add as it entered the dispatcher, and again as the mode called it: both unmarked
    assert shadow.unseen() == [("add", 4096)] * 2 and [op.name for op in log.ops] == ["add"]


def test_a_scope_named_like_an_op_or_a_mark_hides_nothing():
    """Found 2026-12-05: ops hidden below a scope the forward named ``aten::empty`` read as
    nested in an op and were skipped. Only the profile's own marks, named with a token drawn
    for it, count; a scope a forward names after the marks' prefix is no mark."""
    from torch.autograd.profiler import record_function

    from upskills.verify.shadow_ops import MARK_PREFIX

    for scope in ("aten::empty", MARK_PREFIX.rstrip("."), MARK_PREFIX + "0" * 32):

        def hidden(scope: str = scope) -> None:
            with record_function(scope), torch._C._DisableTorchDispatch():  # pyright: ignore
                torch.add(X, Y)

        unseen, _ = _unseen(hidden)
        assert ("add", 4096) in unseen, (scope, unseen)


def test_what_torch_tensor_hides_itself_is_allocation_and_a_small_copy():
    """``torch.tensor`` builds its tensor with the Python key excluded: an honest forward that
    makes a small constant shows unseen ops, none of them compute."""
    unseen, logged = _unseen(lambda: torch.tensor([1.0, 2.0]))
    assert {op for op, _ in unseen} <= {"empty", "to", "_to_copy", "copy_", "detach_"}, unseen
    assert all(n <= 2 for _, n in unseen) and "lift_fresh" in logged


def test_unseen_ops_join_the_trials_log_and_unseen_compute_fails_at_once():
    import pytest

    from upskills.verify.shadow_ops import Shadow, judge_shadow
    from upskills.verify.worker import StageFailure

    def judged(unseen: list[tuple[str, int]]) -> OpLog:
        shadow = Shadow()
        shadow.unseen = lambda: unseen  # type: ignore[method-assign]
        shadow.events = [types.SimpleNamespace(name=shadow.start)]
        log = OpLog()
        judge_shadow(shadow, log, "k.py")
        return log

    # torch.tensor's own: an allocation (left out) and a small copy (the judge's to judge)
    log = judged([("empty", 0), ("to", 2), ("add", 8)])
    assert [(op.name, op.numel) for op in log.ops] == [("to", 2), ("add", 8)]
    with pytest.raises(StageFailure) as failed:
        judged([("add", 4096), ("mul", 4096), ("add", 4096)])
    assert failed.value.guard == "hidden_ops"
    assert "aten::add, aten::mul where the op recorder could not see it" in str(failed.value)


def test_a_profile_switched_off_and_another_on_is_found_out(profiler: str):
    """A forward that ended the verifier's profile and began its own would hand back only the
    ops after the switch; the profile's first scope, drawn with its mark, is then missing."""
    from torch.autograd import profiler_legacy

    with shadow_profile() as honest:
        torch.add(X, Y)
    assert honest.intact
    with shadow_profile() as shadow:
        if profiler == "legacy":
            torch.autograd._disable_profiler_legacy()  # pyright: ignore[reportPrivateUsage]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                profiler_legacy.profile().__enter__()  # pyright: ignore[reportDeprecated]
        else:
            torch.autograd._disable_profiler()  # pyright: ignore[reportPrivateUsage]
            activities = [torch.profiler.ProfilerActivity.CPU]
            torch.profiler.profile(activities=activities, record_shapes=True).__enter__()
        torch.add(X, Y)
    assert not shadow.intact


def _smuggled(forward) -> list[tuple[str, str, int]]:
    from upskills.verify.shadow_ops import smuggled_ops

    log = OpLog()
    with torch.no_grad(), shadow_profile() as shadow:
        with make_op_recorder(log, LaunchState(), mark=shadow.mark):
            forward()
    return smuggled_ops(shadow.events, shadow.mark)


def test_pytorchs_own_kernels_of_allocations_copies_and_small_ops_run_no_compute():
    """What honest forwards call: the marks of allowed, data-movement and small ops hold only
    allocations, views and copies, and a big op's own sub-ops (``mean`` runs ``sum``) pass."""
    t = torch.randn(64, 64).t()

    def honest() -> None:
        X.to(torch.float64)
        t.contiguous()
        torch.nn.functional.pad(X, (3, 5))
        torch.cat([X, Y]).clone()
        torch.stack([X, Y])
        torch.zeros(4096).fill_(2.0)
        torch.full_like(X, 3.0)
        X.mean()
        X[:8].mean()
        X.view(64, 64).sum(0)
        torch.ones(4096, dtype=torch.int64).to(torch.float16)

    assert _smuggled(honest) == []


def test_compute_inside_an_allowed_ops_replaced_kernel_is_found():
    """Found 2026-12-05 through a C++ extension (``test_load_inline.py``): a kernel registered
    for ``aten::empty_like`` for the length of one forward returned ``x + y``. The recorder
    saw ``empty_like`` and called it with its mode popped; the ``add`` inside read as seen."""
    stash: list[torch.Tensor] = []

    def kernel(self: torch.Tensor, **_: object) -> torch.Tensor:
        return torch.add(self, stash.pop()) if stash else torch.empty(self.shape)

    def forward() -> None:
        lib = torch.library.Library("aten", "IMPL")  # noqa: TID251 - the attack under test
        try:
            lib.impl("empty_like", kernel, "CPU")
            stash.append(Y)
            torch.empty_like(X)
        finally:
            lib._destroy()

    assert _smuggled(forward) == [("add", "empty_like", 4096)]

    # and a small op's: a 2-element sum whose kernel adds 4096 elements
    def small_forward() -> None:
        lib = torch.library.Library("aten", "IMPL")  # noqa: TID251 - the attack under test
        try:
            lib.impl("sum", lambda a, dtype=None: torch.add(X, Y)[0].clone(), "CPU")
            torch.sum(X[:2])
        finally:
            lib._destroy()

    assert ("add", "sum", 4096) in _smuggled(small_forward)

    # and a 2-element add whose kernel adds 4096 elements: the same op, another size
    def add_kernel(a: torch.Tensor, b: torch.Tensor, alpha: object = 1) -> torch.Tensor:
        out = torch.empty(X.shape)
        torch.ops.aten.add.out(X, Y, out=out)  # another overload: PyTorch's own kernel
        return out[: a.numel()].clone()

    def same_op_forward() -> None:
        lib = torch.library.Library("aten", "IMPL")  # noqa: TID251 - the attack under test
        try:
            with warnings.catch_warnings():  # "Overriding a previously registered kernel"
                warnings.simplefilter("ignore")
                lib.impl("add.Tensor", add_kernel, "CPU")
            torch.add(X[:2], Y[:2])
        finally:
            lib._destroy()

    assert ("add", "add", 4096) in _smuggled(same_op_forward)


def test_a_forward_reading_elements_one_by_one_is_stopped_at_the_limit():
    """A trial's recorder stops a Python fallback at its 65th element, before the profile of a
    million more would have to be read (found on the H100, 2026-12-05: 1M ``float(x[i])`` under
    Kineto's profile ran past the test's 150 s)."""
    from upskills.verify.guards import ScalarFallback

    log = OpLog(scalar_limit=64)
    read: list[float] = []
    with pytest.raises(ScalarFallback), shadow_profile() as shadow:
        with make_op_recorder(log, LaunchState(), mark=shadow.mark):
            for v in X:
                read.append(float(v))
    assert len(read) == 64 and log.scalars == 65
    unlimited = OpLog()
    with make_op_recorder(unlimited, LaunchState()):
        [float(v) for v in X[:100]]
    assert unlimited.scalars == 100


def test_the_legacy_profile_is_parsed_only_when_its_events_are_read(
    profiler: str, monkeypatch: pytest.MonkeyPatch
):
    """The legacy profiler's own exit parses every record at once: 176 s on this machine for
    the million ops a forward iterating a 1M-element tensor makes before its 65th element
    read stops it (the H100's trial ran past 150 s, 2026-12-05). A trial stopped so must not
    wait for them; a trial judged reads them all, as before."""
    if profiler != "legacy":
        pytest.skip("Kineto's events were read lazily already")
    from torch.autograd import profiler_legacy

    real = profiler_legacy._parse_legacy_records  # pyright: ignore[reportPrivateUsage]
    parsed: list[int] = []

    def counted(records):
        parsed.append(1)
        return real(records)

    monkeypatch.setattr(profiler_legacy, "_parse_legacy_records", counted)
    log = OpLog()
    with torch.no_grad(), shadow_profile() as shadow:
        with make_op_recorder(log, LaunchState(), mark=shadow.mark):
            torch.add(X, Y)
    assert parsed == []
    assert shadow.intact and shadow.unseen() == [] and parsed == [1]
    with pytest.raises(RuntimeError), shadow_profile() as stopped:
        torch.add(X, Y)
        raise RuntimeError("the trial stops here")
    assert parsed == [1] and stopped.events == []  # a failed trial's profile is never read


def test_a_gpu_trials_profile_starts_after_the_timed_calls_flush(monkeypatch: pytest.MonkeyPatch):
    """The watched busy time is read from the cache the timed calls meet: L2 flushed (as
    before a timed call), the device synchronised, then the GPU's profile. Without the flush a
    trial's kernels read warm inputs, and an honest 1M-element add on an H100 timed at 2.9x its
    watched busy time: room for a slower kernel of its own to pass at PyTorch's speed. The
    order is checked here with the GPU's calls stood in for (no GPU on this machine)."""
    calls: list[str] = []
    monkeypatch.setattr(shadow_ops, "_flush", lambda mode: lambda: calls.append(f"flush {mode}"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append("sync"))
    real = shadow_ops._profiler  # pyright: ignore[reportPrivateUsage]

    def profiler(gpu: bool, kineto: bool):
        calls.append(f"profile gpu={gpu}")
        return real(False, kineto)  # CPU events only: this machine has no CUDA activity

    monkeypatch.setattr(shadow_ops, "_profiler", profiler)
    with shadow_profile(flush="write"):
        calls.append("forward")
    assert calls == ["flush write", "sync", "profile gpu=True", "forward"]
    calls.clear()
    with shadow_profile():
        calls.append("forward")
    assert calls == ["profile gpu=False", "forward"]


def test_the_gpus_copies_to_the_host_are_read_from_their_records():
    """``host_copy_bytes`` adds the sizes of the device-to-host copy records, read from Kineto's
    typed metadata (torch 2.13) or its JSON (older torch). Stand-ins for the GPU's records here:
    this machine has no CUDA; the whole check is ``test_load_inline.py``'s GPU test."""
    from types import SimpleNamespace

    cuda, cpu = SimpleNamespace(name="CUDA"), SimpleNamespace(name="CPU")

    def record(name: str, device: Any = cuda, **fields: Any) -> Any:
        return SimpleNamespace(name=name, device_type=device, **fields)

    events = [
        record("Memcpy DtoH (Device -> Pageable)", _metadata_json='"device": 0, "bytes": 4096'),
        record("Memcpy DtoH (Device -> Pinned)", event_metadata=SimpleNamespace(bytes=1000)),
        record("Memcpy DtoH (Device -> Pageable)", metadata_json='"bytes" : 24, "stream": 7'),
        record("Memcpy HtoD (Pageable -> Device)", _metadata_json='"bytes": 9999'),
        record("Memcpy DtoD (Device -> Device)", _metadata_json='"bytes": 9999'),
        record("Memcpy DtoH (Device -> Pageable)", cpu, _metadata_json='"bytes": 9999'),
        record("Memcpy DtoH (Device -> Pageable)"),  # no size: counts 0
        record("aten::copy_", cpu),
    ]
    assert shadow_ops.host_copy_bytes(events) == 4096 + 1000 + 24
    assert shadow_ops.host_copy_bytes([]) == 0


def test_kinetos_profile_keeps_the_gpu_records_metadata():
    """The metadata option exists in this torch, and the profile still records every op."""
    assert shadow_ops._with_metadata() is not None
    import torch

    with shadow_ops.shadow_profile(kineto=True) as shadow:
        torch.ones(4).add(1)
    assert shadow.intact and any(e.name == "aten::add" for e in shadow.events)
