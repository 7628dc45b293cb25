"""Timing statistics, repetition planning, baseline cache, hardware description (CPU side)."""

from __future__ import annotations

import json

import pytest

from upskills.verify import l2_fence
from upskills.verify.baselines import (
    BaselineEntry,
    baseline_key,
    lookup_baseline,
    read_baseline_file,
    restore_rewritten,
    shipped_baselines,
    snapshot_cache,
    store_baseline,
    user_cache_path,
)
from upskills.verify.hardware import datasheet_bandwidth, describe_hardware
from upskills.verify.options import CheckOptions
from upskills.verify.sandbox import JobOutcome
from upskills.verify.timing import kept_calls, plan_reps, summarize
from upskills.verify.verdict import Timing, Verdict
from upskills.verify.verifier import Verifier


def test_summarize_percentiles_and_spread():
    t = summarize([float(i) for i in range(1, 102)])  # 1..101
    assert t.median_ms == 51.0 and t.reps == 101
    assert t.p10_ms == pytest.approx(11.0) and t.p90_ms == pytest.approx(91.0)
    assert t.spread == pytest.approx(80.0 / 51.0)
    assert t.mean_ms == pytest.approx(51.0)
    with pytest.raises(ValueError):
        summarize([])


def test_plan_reps_adapts_to_kernel_time():
    assert plan_reps(0.01) == 2000  # 10 us kernel: capped
    assert plan_reps(1.0) == 1000  # ~1 s of calls
    assert plan_reps(100.0) == 50  # slow kernel: still 50 reps (5 s)
    assert plan_reps(2000.0) == 10  # very slow: bounded by max_s=20
    assert plan_reps(1e6) == 3


def test_kept_calls_are_distinct_timed_calls_at_the_judges_fractions():
    assert kept_calls([0.5, 0.1], 2000) == [200, 1000]
    assert kept_calls([0.0, 0.9999], 3) == [0, 2]  # within the timed calls at both ends
    assert kept_calls([0.5, 0.6], 3) == [1]  # two fractions on one call: checked once
    assert kept_calls([], 2000) == []


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, mean_ms=ms, reps=50, spread=0.0)


def test_baselines_timed_after_a_read_flush_are_cached_apart(tmp_path, monkeypatch):
    """The write flush's keys are the old ones (entries cached before the choice stay valid); a
    read flush's baselines have keys of their own, so neither is compared with the other's."""
    monkeypatch.setenv("UPSKILLS_CACHE_DIR", str(tmp_path))
    assert baseline_key("G", "2.11", "abc") == "G|2.11|abc"
    assert baseline_key("G", "2.11", "abc", "read") == "G|2.11|abc|flush=read"
    write = BaselineEntry(task="t", task_hash="abc", gpu="G", torch="2.11", eager=_timing(2.0))
    store_baseline(write)
    assert lookup_baseline("G", "2.11", "abc", flush="read") is None  # a miss: measured anew
    read = write.model_copy(update={"eager": _timing(1.8), "flush": "read"})
    store_baseline(read)
    got_write, got_read = (
        lookup_baseline("G", "2.11", "abc"),
        lookup_baseline("G", "2.11", "abc", flush="read"),
    )
    assert got_write is not None and got_write.eager is not None
    assert got_read is not None and got_read.eager is not None
    assert (got_write.eager.median_ms, got_read.eager.median_ms) == (2.0, 1.8)


def test_the_flush_is_an_option_and_a_verdict_field_that_old_verdicts_lack():
    assert CheckOptions(flush="read").flush == "read"
    with pytest.raises(ValueError):
        CheckOptions(flush="none")  # type: ignore[arg-type]
    old = {"median_ms": 1.0, "p10_ms": 1.0, "p90_ms": 1.0, "mean_ms": 1.0, "reps": 5, "spread": 0}
    assert Timing.model_validate(old).flush == "write"  # every verdict before the choice


def test_time_cuda_refuses_an_unknown_flush_before_touching_the_gpu():
    from upskills.verify.timing import time_cuda

    with pytest.raises(ValueError, match="flush_mode"):
        time_cuda(lambda: None, flush_mode="none")  # type: ignore[arg-type]


class _StandInEvent:
    """A CUDA event on a stand-in GPU clock: a call's head, start and end events are recorded
    in that order at 0, ``HEAD`` and ``HEAD + 1`` ms, whatever the host does meanwhile."""

    HEAD = 50.0
    recorded = 0

    def __init__(self, enable_timing: bool = False) -> None:
        self.at = 0.0

    def record(self, stream: object = None) -> None:
        self.at = (0.0, self.HEAD, self.HEAD + 1.0)[_StandInEvent.recorded % 3]
        _StandInEvent.recorded += 1

    def elapsed_time(self, other: _StandInEvent) -> float:
        return other.at - self.at


def _stand_in_gpu(monkeypatch, event: type = _StandInEvent) -> list[int]:
    """torch's CUDA calls that ``time_cuda`` makes, on the CPU: stand-in events, no stream or
    synchronisation, the flush buffers on the CPU. Returns the list the stand-in spin appends
    each head start's cycles to."""
    import torch

    real_ones, real_empty = torch.ones, torch.empty
    monkeypatch.setattr(torch, "ones", lambda *a, **k: real_ones(*a, **{**k, "device": "cpu"}))
    monkeypatch.setattr(torch, "empty", lambda *a, **k: real_empty(*a, **{**k, "device": "cpu"}))
    monkeypatch.setattr(torch.cuda, "Event", event)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    spins: list[int] = []
    monkeypatch.setattr(torch.cuda, "_sleep", spins.append, raising=False)
    monkeypatch.setattr(l2_fence, "demote_persisting_lines", lambda: None)  # no driver here
    monkeypatch.setattr(l2_fence, "persisting_limit", lambda: 0)
    _StandInEvent.recorded = 0
    return spins


def test_a_call_the_host_enqueues_after_the_gpus_head_start_is_counted_late(monkeypatch):
    """The lateness of a timed call: the host's time from the head start to forward's return,
    less the GPU's time from the head start to the start event (stand-in events with a 50 ms
    head start). A forward that returns at once is early; one that sleeps 80 ms first is late
    by about 30 ms."""
    import time

    import torch

    from upskills.verify import timing

    monkeypatch.setattr(torch.cuda, "Event", _StandInEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None, raising=False)
    flushed: list[int] = []
    _StandInEvent.recorded = 0
    ms, out, late = timing._timed_call(lambda: "fast", lambda: flushed.append(1))  # pyright: ignore[reportPrivateUsage]
    assert (ms, out, flushed) == (1.0, "fast", [1])
    assert -50.0 < late < -40.0  # the host needed well under 10 ms of the 50

    def slow() -> str:
        time.sleep(0.08)
        return "slow"

    ms, out, late = timing._timed_call(slow, lambda: flushed.append(2))  # pyright: ignore[reportPrivateUsage]
    assert (ms, out) == (1.0, "slow")
    assert 29.0 < late < 80.0


def test_time_cuda_counts_only_the_timed_calls_that_were_late(monkeypatch):
    """The whole timing loop on stand-in events (no GPU here): warm-up and estimate calls are
    not counted; a forward that sleeps past the 50 ms stand-in head start on every other timed
    call is late on exactly those, and the output of each call is still returned."""
    import time

    from upskills.verify import timing

    _stand_in_gpu(monkeypatch)
    calls: list[int] = []

    def forward() -> int:
        calls.append(1)
        # a warm-up call (2), then timed calls 1, 3 and 5 (calls 7, 9, 11: after 3 warm-up, 3
        # estimate calls)
        if len(calls) == 2 or (len(calls) > 6 and len(calls) % 2):
            time.sleep(0.06)
        return len(calls)

    t, last = timing.time_cuda(forward, flush_bytes=64, max_reps=6, target_s=1.0)
    assert t.reps == 6 and t.median_ms == 1.0
    assert t.late_calls == 3 and t.head_start_x == 1  # late, but none slower than the rest
    assert last == [(None, 12)]


class _SlowableEvent(_StandInEvent):
    """A stand-in event whose call takes 1 ms, or 1 ms more when ``slow`` is set."""

    slow = False

    def record(self, stream: object = None) -> None:
        super().record(stream)
        if _StandInEvent.recorded % 3 == 0 and _SlowableEvent.slow:  # the end event
            self.at += 1.0


def test_a_late_slow_timed_call_doubles_the_head_start_of_the_calls_after_it(monkeypatch):
    """The head start each call is given (the stand-in spin records it): a late warm-up call
    leaves it alone; a late timed call that took longer than 1.25x the fastest call enqueued in
    time doubles it for the next calls, up to the cap; a late call at the usual time, or a call
    on time, leaves it where it is."""
    import time

    from upskills.verify import timing

    spins = _stand_in_gpu(monkeypatch, _SlowableEvent)
    calls: list[int] = []
    # after 3 warm-up and 3 estimate calls, 8 timed calls (7-14). Late (sleeping past the 50 ms
    # stand-in head start): warm-up call 1 and timed calls 7, 8, 10, 11 and 12; of those, 8
    # takes the usual 1 ms, the others 2 ms
    late, slow = {1, 7, 8, 10, 11, 12}, {1, 7, 10, 11, 12}

    def forward() -> int:
        calls.append(1)
        _SlowableEvent.slow = len(calls) in slow
        if len(calls) in late:
            time.sleep(0.06)
        return len(calls)

    try:
        t, _ = timing.time_cuda(forward, flush_bytes=64, max_reps=8, target_s=1.0)
    finally:
        _SlowableEvent.slow = False
    assert t.reps == 8 and t.late_calls == 5
    base = timing.HOST_CUSHION_CYCLES
    assert timing.HOST_CUSHION_MAX_CYCLES == 8 * base
    # calls 1-7 at the base; 8-10 after call 7; 11 after call 10; 12-14 at the cap
    assert spins == [base] * 7 + [2 * base] * 3 + [4 * base] + [8 * base] * 3
    assert t.head_start_x == 8


def test_a_host_late_on_every_call_grows_the_head_start_until_a_call_is_in_time(monkeypatch):
    """No call in time, so nothing to compare a late call's time with: each late timed call
    doubles the head start (here every call sleeps past the stand-in head start, at the usual
    time: without the rule, a host slow on every call would never be given more)."""
    import time

    from upskills.verify import timing

    spins = _stand_in_gpu(monkeypatch)

    def forward() -> int:
        time.sleep(0.055)
        return 0

    t, _ = timing.time_cuda(forward, flush_bytes=64, max_reps=5, target_s=1.0)
    assert t.reps == 5 and t.late_calls == 5
    base = timing.HOST_CUSHION_CYCLES
    assert spins == [base] * 7 + [2 * base, 4 * base, 8 * base, 8 * base]
    assert t.head_start_x == 8


def test_persisting_l2_lines_are_demoted_after_the_inputs_load_and_before_each_head_start(
    monkeypatch,
):
    """The fence against inputs kept in L2 across calls (``l2_fence``): each call's inputs are
    loaded, the device synchronised (the copies done: under a persisting window they mark lines
    too), every persisting line demoted, and only then the head start, flush and call. The most
    L2 the context set aside after a timed call is in the timing; with the fence off (the GPU
    test's control) nothing is demoted."""
    import torch

    from upskills.verify import timing

    _stand_in_gpu(monkeypatch)
    log: list[str] = []
    limits = iter([0, 0, 1 << 20, 3 << 20, 0] + [0] * 20)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("sync"))
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: log.append("spin"), raising=False)
    monkeypatch.setattr(l2_fence, "demote_persisting_lines", lambda: log.append("demote"))
    monkeypatch.setattr(l2_fence, "persisting_limit", lambda: next(limits))

    def forward() -> int:
        log.append("call")
        return 0

    def load(call: int) -> int:
        log.append("load")
        return call

    monkeypatch.setattr(l2_fence, "_default", 11796480)  # what record_default read (the H200)
    t, _ = timing.time_cuda(forward, flush_bytes=64, max_reps=5, before_each=load)
    assert t.reps == 5 and t.persisting_l2_bytes == 3 << 20
    assert t.persisting_l2_default_bytes == 11796480
    calls = "".join(log).replace("load", "L").replace("sync", "S").replace("demote", "D")
    calls = calls.replace("spin", "P").replace("call", "C")
    assert calls == "S" + "LSDPCS" * 11  # 3 warm-up, 3 estimate, 5 timed calls

    log.clear()
    t, _ = timing.time_cuda(forward, flush_bytes=64, max_reps=5, demote_persisting_l2=False)
    assert "demote" not in log and log.count("call") == 11


def test_the_l2_fence_names_a_driver_it_cannot_load_or_a_call_it_refused(monkeypatch):
    """No driver (this machine, CI): a clear error, not a crash in ctypes. A driver that says
    persisting lines are not supported has none to demote (0 set aside); any other status is an
    error naming the call."""
    import ctypes

    def no_driver(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(l2_fence, "_reset", None)
    monkeypatch.setattr(l2_fence, "_get_limit", None)
    monkeypatch.setattr(ctypes, "CDLL", no_driver)
    with pytest.raises(l2_fence.L2FenceError, match="cannot be loaded.*libcuda"):
        l2_fence.demote_persisting_lines()

    status = {"reset": 0, "limit": 0}

    def get_limit(out: object, which: int) -> int:
        assert which == l2_fence.PERSISTING_L2_LIMIT
        ctypes.cast(out, ctypes.POINTER(ctypes.c_size_t)).contents.value = 5 << 20  # pyright: ignore[reportArgumentType]
        return status["limit"]

    monkeypatch.setattr(l2_fence, "_reset", lambda: status["reset"])
    monkeypatch.setattr(l2_fence, "_get_limit", get_limit)
    l2_fence.demote_persisting_lines()
    assert l2_fence.persisting_limit() == 5 << 20
    status.update(reset=l2_fence.NOT_SUPPORTED, limit=l2_fence.NOT_SUPPORTED)
    l2_fence.demote_persisting_lines()
    assert l2_fence.persisting_limit() == 0
    status.update(reset=999, limit=1)
    with pytest.raises(l2_fence.L2FenceError, match="PersistingL2Cache returned CUresult 999"):
        l2_fence.demote_persisting_lines()
    with pytest.raises(l2_fence.L2FenceError, match="cuCtxGetLimit.*CUresult 1"):
        l2_fence.persisting_limit()
    # the default read before the candidate's import: None where the driver refuses the query
    monkeypatch.setattr(l2_fence, "_default", None)
    assert l2_fence.record_default() is None and l2_fence.default_limit() is None
    status.update(limit=0)
    assert l2_fence.record_default() == 5 << 20 and l2_fence.default_limit() == 5 << 20


def test_late_calls_is_optional_in_a_recorded_timing():
    old = {"median_ms": 1.0, "p10_ms": 1.0, "p90_ms": 1.0, "mean_ms": 1.0, "reps": 5, "spread": 0}
    assert Timing.model_validate(old).late_calls is None  # every verdict before it was counted
    assert Timing.model_validate({**old, "late_calls": 3}).late_calls == 3
    assert Timing.model_validate(old).head_start_x is None


def test_user_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("UPSKILLS_CACHE_DIR", str(tmp_path))
    assert user_cache_path() == tmp_path / "baselines.json"
    assert lookup_baseline("GPU X", "2.11", "abc") is None
    entry = BaselineEntry(
        task="t",
        task_hash="abc",
        gpu="GPU X",
        torch="2.11",
        eager=_timing(2.0),
        compile=_timing(1.0),
    )
    store_baseline(entry)
    store_baseline(entry.model_copy(update={"task_hash": "def", "task": "u"}))
    found = lookup_baseline("GPU X", "2.11", "abc")
    assert found is not None and found.eager is not None and found.eager.median_ms == 2.0
    assert lookup_baseline("GPU Y", "2.11", "abc") is None
    data = json.loads((tmp_path / "baselines.json").read_text())
    assert set(data["entries"]) == {
        baseline_key("GPU X", "2.11", "abc"),
        baseline_key("GPU X", "2.11", "def"),
    }


def test_rewritten_entries_are_put_back_and_added_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("UPSKILLS_CACHE_DIR", str(tmp_path))
    honest = BaselineEntry(task="t", task_hash="abc", gpu="G", torch="2.11", eager=_timing(2.0))
    store_baseline(honest)
    before = snapshot_cache()
    assert restore_rewritten(before) == []  # nothing changed
    # a candidate makes eager 500x slower (inflating its speedup); another judge adds an entry
    data = json.loads(user_cache_path().read_text())
    data["entries"][baseline_key("G", "2.11", "abc")]["eager"]["median_ms"] = 1000.0
    user_cache_path().write_text(json.dumps(data))
    store_baseline(honest.model_copy(update={"task_hash": "def", "task": "u"}))
    assert restore_rewritten(before) == [baseline_key("G", "2.11", "abc")]
    found = lookup_baseline("G", "2.11", "abc")
    assert found is not None and found.eager is not None and found.eager.median_ms == 2.0
    assert lookup_baseline("G", "2.11", "def") is not None
    # a lookup against the snapshot ignores what was written after it
    user_cache_path().write_text(json.dumps(data))
    snap = lookup_baseline("G", "2.11", "abc", before)
    assert snap is not None and snap.eager is not None and snap.eager.median_ms == 2.0


def test_the_packages_own_baselines_file_is_read_from_the_snapshot_and_put_back(
    tmp_path, monkeypatch
):
    """The shipped file sits in the checkout, writable by the candidate's user like the cache:
    speedups read the text snapshotted before the candidate ran, and the package guard puts
    the file back with the rest of the package."""
    import upskills.verify.baselines as baselines
    from upskills.verify.package_guard import PackageSnapshot

    shipped = tmp_path / "data" / "baselines.json"
    shipped.parent.mkdir()
    honest = BaselineEntry(task="t", task_hash="abc", gpu="G", torch="2.11", eager=_timing(2.0))
    key = baseline_key("G", "2.11", "abc")
    shipped.write_text(json.dumps({"entries": {key: honest.model_dump(mode="json")}}))
    monkeypatch.setattr(baselines, "_package_file", lambda: shipped)
    monkeypatch.setenv("UPSKILLS_CACHE_DIR", str(tmp_path / "cache"))
    package = PackageSnapshot(tmp_path)
    package.refresh()
    before = snapshot_cache()
    data = json.loads(shipped.read_text())
    data["entries"][key]["eager"]["median_ms"] = 2000.0  # the candidate's edit
    shipped.write_text(json.dumps(data))
    seen = lookup_baseline("G", "2.11", "abc", before)
    assert seen is not None and seen.eager is not None and seen.eager.median_ms == 2.0
    assert restore_rewritten(before) == []  # the user cache: untouched
    assert package.put_back() == ["data/baselines.json"]
    again = lookup_baseline("G", "2.11", "abc")
    assert again is not None and again.eager is not None and again.eager.median_ms == 2.0
    shipped.unlink()  # deleting it is put back too
    assert package.put_back() == ["data/baselines.json"] and shipped.is_file()


def test_malformed_cache_file_is_named(tmp_path):
    bad = tmp_path / "baselines.json"
    bad.write_text('{"schema_version": 1, "entries": {"k": {"task": 3}}}')
    with pytest.raises(ValueError, match="baselines.json: not a valid baselines file"):
        read_baseline_file(bad)


def test_shipped_baselines_file_is_valid():
    shipped = shipped_baselines()
    for key, entry in shipped.entries.items():
        assert key == baseline_key(entry.gpu, entry.torch, entry.task_hash)


def test_describe_hardware_cpu_and_datasheet():
    info = describe_hardware("cpu")
    assert info["name"] == "cpu" and info["cores"] >= 1
    assert datasheet_bandwidth("NVIDIA H200") == 4800.0
    assert datasheet_bandwidth("NVIDIA H100 80GB HBM3") == 3350.0
    assert datasheet_bandwidth("NVIDIA H100 PCIe") == 2000.0
    assert datasheet_bandwidth("Mystery GPU") is None


def test_importing_the_verifier_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys, upskills.verify, upskills._cli.check; "
        "print('torch' in sys.modules, 'triton' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def _timed_verdict(task_hash: str) -> Verdict:
    return Verdict(
        task="t",
        task_hash=task_hash,
        candidate_hash="c",
        device="cuda",
        gpu="GPU X",
        passed=True,
        timing=_timing(2.0),
        env={"gpu": "GPU X", "torch": "2.11"},
    )


def _verifier_measuring(result: dict | None) -> tuple[Verifier, list[str]]:
    """A Verifier whose baseline job returns ``result`` (no child processes started)."""
    verifier = object.__new__(Verifier)
    verifier.device = "cuda"
    calls: list[str] = []

    def measure(task, timeout_s=0.0, flush="write"):  # noqa: ANN001, ANN202 - the CUDA child
        calls.append(task.name)
        return JobOutcome(result, False, 0, "", 0.1)

    verifier.measure_baseline = measure  # type: ignore[method-assign]
    return verifier, calls


def test_fresh_baselines_are_timed_in_the_check_and_leave_the_cache_alone(
    tmp_path, monkeypatch, add_task
):
    monkeypatch.setenv("UPSKILLS_CACHE_DIR", str(tmp_path))
    cached = BaselineEntry(
        task=add_task.name,
        task_hash=add_task.hash,
        gpu="GPU X",
        torch="2.11",
        eager=_timing(1.0),
        compile=_timing(1.0),
    )
    store_baseline(cached)
    before = (tmp_path / "baselines.json").read_text()
    now = cached.model_copy(update={"eager": _timing(3.0), "compile": _timing(4.0)})
    verifier, calls = _verifier_measuring(now.model_dump(mode="json"))

    verdict = _timed_verdict(add_task.hash)
    entry = verifier.fresh_baseline(add_task)
    verifier._speedups(verdict, add_task, snapshot_cache(), fresh=True, fresh_entry=entry)
    assert calls == [add_task.name]  # measured, not looked up
    assert verdict.speedup_eager == 1.5 and verdict.speedup_compile == 2.0
    assert verdict.message.endswith("(baselines timed in this check)")
    assert (tmp_path / "baselines.json").read_text() == before  # not written

    cached_verdict = _timed_verdict(add_task.hash)
    verifier._speedups(cached_verdict, add_task, snapshot_cache())
    assert calls == [add_task.name]  # the cache answers without a measurement
    assert (
        cached_verdict.speedup_eager == 0.5 and "timed in this check" not in cached_verdict.message
    )


def test_fresh_baselines_that_fail_give_no_speedup_and_say_so(tmp_path, monkeypatch, add_task):
    monkeypatch.setenv("UPSKILLS_CACHE_DIR", str(tmp_path))
    verifier, _ = _verifier_measuring(None)  # the baseline child died
    verdict = _timed_verdict(add_task.hash)
    entry = verifier.fresh_baseline(add_task)
    assert entry is None
    verifier._speedups(verdict, add_task, snapshot_cache(), fresh=True, fresh_entry=entry)
    assert verdict.speedup_eager is None and not verdict.baselines
    assert "could not be timed again" in verdict.message


def test_check_cli_passes_fresh_baselines_on(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from upskills._cli.check import cli

    seen: list[CheckOptions] = []

    def fake_check(task, candidate, *, device, options):  # noqa: ANN001, ANN202
        seen.append(options)
        raise ValueError("stop here")

    monkeypatch.setattr("upskills.verify.check", fake_check)
    kernel = tmp_path / "k.py"
    kernel.write_text("class ModelNew: pass\n")
    CliRunner().invoke(cli, ["row_sum", str(kernel), "--fresh-baselines"])
    CliRunner().invoke(cli, ["row_sum", str(kernel)])
    CliRunner().invoke(cli, ["row_sum", str(kernel), "--flush", "read"])
    assert [o.fresh_baselines for o in seen] == [True, False, False]
    assert [o.flush for o in seen] == ["write", "write", "read"]
    bad = CliRunner().invoke(cli, ["row_sum", str(kernel), "--flush", "none"])
    assert bad.exit_code == 2 and len(seen) == 3  # refused before any check
