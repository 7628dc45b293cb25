"""upskills.verify.judge: which model the candidate times, and whose environment a verdict names."""

from __future__ import annotations

from typing import Any

import pytest

from tests.verify.conftest import make_task
from upskills.tasks.model import ShapeVariant
from upskills.verify.judge import Judge, JudgeJob, trusted_env
from upskills.verify.protocol import Ack, Setup
from upskills.verify.shapes import PlannedVariant

pytest.importorskip("torch")

LINEAR_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.lin = nn.Linear(k, k)

    def forward(self, x):
        return self.lin(x)


M, K = 4, 8


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K]
"""


class _Recorder:
    """Stands in for the candidate's process: acknowledges every request and keeps it."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def __call__(self, message: Any) -> Ack:
        self.sent.append(message)
        return Ack()


def _judge() -> tuple[Judge, _Recorder]:
    task = make_task(
        "lin",
        LINEAR_REF,
        [
            ShapeVariant(name="main", main=True, globals={"K": 8}),
            ShapeVariant(name="wide", globals={"K": 24}),
        ],
    )
    job = JudgeJob(
        task=task,
        device="cpu",
        address="unused",
        display="candidate.py",
        variants=["main", "wide"],
        seeds=1,
        seed=7,
        timeout_s=30,
    )
    judge = Judge(job, chan=None, deadline=0.0)  # type: ignore[arg-type]  # ask is replaced
    recorder = _Recorder()
    judge.ask = recorder  # type: ignore[method-assign]
    return judge, recorder


def test_timing_rebuilds_the_main_model_after_the_last_variant():
    """Trials end on another shape; the timed model must be the main variant's again."""
    judge, sent = _judge()
    prepared = [
        judge.prepare(PlannedVariant("main", {"K": 8})),
        judge.prepare(PlannedVariant("random", {"K": 13}, drawn=True)),
    ]
    for i, prep in enumerate(prepared):
        judge.setup(prep, first=i == 0)
    main = judge.main_for_timing(prepared)
    assert main.plan.name == "main"
    last = sent.sent[-1]
    assert isinstance(last, Setup) and last.variant == "main"
    assert last.init_args[0].value == 8  # type: ignore[union-attr]
    assert sorted(last.state) == ["lin.bias", "lin.weight"] and last.state["lin.weight"].shape == [
        8,
        8,
    ]


def test_timing_keeps_the_model_when_main_was_last():
    judge, sent = _judge()
    prepared = [judge.prepare(PlannedVariant("main", {"K": 8}))]
    judge.setup(prepared[0], first=True)
    judge.main_for_timing(prepared)
    assert len(sent.sent) == 1


def test_the_gpu_a_verdict_names_is_the_judges():
    """A candidate cannot pick whose speedup baselines it is compared with."""
    claimed = {"python": "3.12", "gpu": "NVIDIA B200", "cuda": "99.0", "extra": "x"}
    assert "gpu" not in trusted_env(claimed, {"python": "3.12", "torch": "2.11"})
    env = trusted_env(claimed, {"torch": "2.11", "gpu": "NVIDIA H200", "cuda": "13.0"})
    assert env["gpu"] == "NVIDIA H200" and env["cuda"] == "13.0" and env["extra"] == "x"


def test_timing_input_sets_shrink_to_what_the_gpu_can_hold(monkeypatch) -> None:
    import torch

    from upskills.verify.judge_timing import TIMING_INPUT_SETS, timing_sets

    gib = 2**30
    assert timing_sets("cpu", 100 * gib, gib) == TIMING_INPUT_SETS
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (120 * gib, 140 * gib))
    assert timing_sets("cuda", 2 * gib, gib) == TIMING_INPUT_SETS  # small: all three
    # KernelBench 38_L1Norm_: 8 GiB in, 8 GiB out per set; 120 GiB free after the first set;
    # one set's room stays free for the kept calls' references, made again after timing
    assert timing_sets("cuda", 16 * gib, 8 * gib) == 2
    assert timing_sets("cuda", 4 * gib, 2 * gib) == 3
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (60 * gib, 140 * gib))
    assert timing_sets("cuda", 16 * gib, 8 * gib) == 1
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (2 * gib, 140 * gib))
    assert timing_sets("cuda", 16 * gib, 8 * gib) == 1  # never fewer than the one made


def test_more_timed_calls_are_checked_while_their_outputs_are_small() -> None:
    from upskills.verify.judge_timing import KEEP_TIMED, KEEP_TIMED_MAX, keep_count

    assert keep_count(4) == KEEP_TIMED_MAX  # a scalar loss
    assert keep_count(256 * 2**20) == 4  # vector_add's 256 MiB output: 1 GiB of them
    assert keep_count(8 * 2**30) == KEEP_TIMED  # KernelBench's 8 GiB outputs: the floor


def test_the_judge_gives_cached_and_ipc_memory_back_between_large_trials(monkeypatch) -> None:

    import torch

    from upskills.verify.judge_memory import release_memory

    calls: list[str] = []
    gib = 2**30
    reserved = {"now": 9 * gib}
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: reserved["now"])
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a: gib)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: calls.append("sync"))
    monkeypatch.setattr(torch.cuda, "ipc_collect", lambda: calls.append("ipc_collect"))

    def empty_cache() -> None:
        calls.append("empty_cache")
        reserved["now"] = gib  # what is still allocated stays

    monkeypatch.setattr(torch.cuda, "empty_cache", empty_cache)
    assert release_memory("cpu", force=True) == 0
    assert calls == []
    assert release_memory("cuda") == 8 * gib  # the bytes given back, counted for the wait
    assert calls == ["sync", "ipc_collect", "empty_cache"]
    calls.clear()
    reserved["now"] = gib + 2**20  # under 1 GiB cached: not worth a round trip to the driver
    assert release_memory("cuda") == 0
    assert calls == []
    assert release_memory("cuda", force=True) == 2**20
    assert calls == ["sync", "ipc_collect", "empty_cache"]


def test_an_out_of_memory_failure_says_what_the_judge_held(monkeypatch) -> None:
    from types import SimpleNamespace

    import torch

    from upskills.verify.judge import Judge
    from upskills.verify.protocol import Failure

    gib = 2**30
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: 112 * gib)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (5 * gib, 140 * gib))
    judge = SimpleNamespace(device="cuda")
    text = "OutOfMemoryError: CUDA out of memory."
    oom = Failure(error_class="runtime", stage="timing", message=text)
    got = Judge.fail_from(judge, oom)  # type: ignore[arg-type]
    assert "the judge held 112.0 GiB" in got.message and "5.0 of 140.0 GiB free" in got.message
    other = Failure(error_class="runtime", stage="timing", message="ValueError: bad")
    assert Judge.fail_from(judge, other).message == "ValueError: bad"  # type: ignore[arg-type]


def test_guard_c_keeps_a_sample_of_each_output_not_a_copy() -> None:
    """The next trial's stale-result guard gets evenly spaced elements, the same places."""
    import torch

    from upskills.verify.judge_outputs import STALE_SAMPLE, stale_sample

    big = torch.randn(1536, 2048).t()  # 3M elements, not contiguous
    got = stale_sample(big)
    step = big.numel() // STALE_SAMPLE
    assert step == 3 and got.shape == (big.numel() // step,)
    assert torch.equal(got, big.reshape(-1)[::step])
    assert torch.equal(stale_sample(big.clone()), got)  # a cached result matches its sample
    assert not torch.equal(stale_sample(torch.randn(2048, 1536)), got)
    small, scalar = torch.arange(6.0).view(2, 3), torch.tensor(2.0)
    kept = stale_sample((small, [scalar]))
    small.add_(1), scalar.add_(1)  # a copy, not a view: the next call may overwrite its output
    assert torch.equal(kept[0], torch.arange(6.0).view(2, 3)) and kept[1][0].item() == 2.0
    assert isinstance(kept, tuple) and isinstance(kept[1], list)
