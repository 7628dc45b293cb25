"""A failure the judge caused is no lesson: the same kernel hash failing, then passing, is not a
repair (the live corpus's verifier bug: a guard fired on freed timing inputs, and a kernel passed
unchanged once the verifier was fixed). Also: a family pack with no lessons left is retired."""

from __future__ import annotations

from pathlib import Path

from tests.distill.test_cuda_traces import CUDA_ROW_SUM
from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, khash, verdict, write_trace
from upskills.distill import DistillConfig, distill
from upskills.distill.episodes import summarize_trace
from upskills.distill.lessons import mine_trace
from upskills.skills.pack import versions
from upskills.verify.verdict import ErrorClass

GOOD, BAD = ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED


def _guard_fault(source: str, speedup: float | None = None):
    """The verifier's bug as the corpus recorded it: a guard fails at the timing stage."""
    return verdict(source, False, error=ErrorClass.GUARD, speedup=speedup)


def _fixes(tmp: Path, name: str, attempts) -> list:
    path = tmp / f"{name}.jsonl"
    write_trace(path, attempts)
    return [x for x in mine_trace(summarize_trace(path)) if x.kind == "fix"]


def test_a_real_repair_is_still_a_fix(tmp_path):
    """The control: BAD fails on its own, GOOD passes, neither was judged both ways."""
    fixes = _fixes(tmp_path, "control", [(BAD, verdict(BAD, False)), (GOOD, verdict(GOOD, True))])
    assert [x.technique for x in fixes] == ["masking"]


def test_the_same_kernel_failing_then_passing_is_not_a_repair(tmp_path):
    # the passing kernel had failed unchanged before: its pass after BAD repairs nothing
    attempts = [
        (GOOD, _guard_fault(GOOD)),
        (BAD, verdict(BAD, False)),
        (GOOD, verdict(GOOD, True)),
    ]
    path = tmp_path / "after.jsonl"
    write_trace(path, attempts)
    trace = summarize_trace(path)
    assert trace.disputed == {khash(GOOD)}
    assert trace.episodes[1].repaired and not trace.is_repair(trace.episodes[1])
    assert [x for x in mine_trace(trace) if x.kind == "fix"] == []
    assert {x.kind for x in mine_trace(trace)} == {"practice"}  # the final kernel still teaches


def test_a_failure_of_a_kernel_that_later_passes_unchanged_is_not_fixed_by_the_next(tmp_path):
    attempts = [(BAD, _guard_fault(BAD)), (GOOD, verdict(GOOD, True)), (BAD, verdict(BAD, True))]
    assert _fixes(tmp_path, "before", attempts) == []


def test_a_recheck_that_fails_then_passes_is_one_passing_attempt_timed_by_its_passes(tmp_path):
    path = tmp_path / "recheck.jsonl"
    write_trace(
        path,
        [
            (GOOD, verdict(GOOD, True, speedup=1.3, gpu="H200")),
            (GOOD, verdict(GOOD, False, error=ErrorClass.GUARD, speedup=9.0, gpu="H200")),
            (GOOD, verdict(GOOD, True, gpu="H200")),
        ],
    )
    trace = summarize_trace(path)
    [attempt] = trace.attempts
    assert attempt.passed and attempt.speedup == 1.3  # not the failing verdict's 9.0x
    assert trace.disputed == {khash(GOOD)}
    assert [x for x in mine_trace(trace) if x.kind == "fix"] == []


def _cuda_trace(folder: Path, task_hash: str) -> None:
    v = verdict(CUDA_ROW_SUM, True, task_hash=task_hash, speedup=1.8, gpu="H200")
    write_trace(folder / "cuda.jsonl", [(CUDA_ROW_SUM, v)], task_hash=task_hash)


def test_a_family_pack_the_corpus_no_longer_feeds_is_retired_with_its_versions_kept(tmp_path):
    from upskills.tasks import load_task

    h = load_task("row_sum").hash
    skills, config = tmp_path / "skills", DistillConfig(min_prevalence=1)
    _cuda_trace(tmp_path / "old", h)
    first = {p.name for p in distill([tmp_path / "old"], skills, None, config).packs}
    assert {"gpu-tiling", "gpu-launch-tuning"} <= first  # shared memory, <<<>>> launch
    hand = skills / "gpu-kernel-debugging"  # a hand-written pack with a family's name
    hand.mkdir()
    (hand / "SKILL.md").write_text(
        '---\nname: gpu-kernel-debugging\ndescription: "Written by hand."\n'
        'metadata:\n  version: "1.0.0"\n---\n\n# Debugging\n\nBy hand.\n'
    )
    write_trace(tmp_path / "new" / "triton.jsonl", [(GOOD, verdict(GOOD, True, task_hash=h))])
    result = distill([tmp_path / "new"], skills, None, config)
    changes = {p.name: p.change for p in result.packs}
    assert changes["gpu-tiling"] == changes["gpu-launch-tuning"] == "retired"
    assert "gpu-kernel-debugging" not in changes and (hand / "SKILL.md").is_file()
    assert not (skills / "gpu-tiling").exists() and versions("gpu-tiling", skills) == ["1.0.0"]
    assert (skills / "gpu-memory-access" / "SKILL.md").is_file()


def test_a_named_pack_retires_nothing(tmp_path):
    from upskills.tasks import load_task

    h = load_task("row_sum").hash
    skills, config = tmp_path / "skills", DistillConfig(min_prevalence=1)
    _cuda_trace(tmp_path / "old", h)
    distill([tmp_path / "old"], skills, None, config)
    named = config.model_copy(update={"name": "my-kernels"})
    result = distill([tmp_path / "old"], skills, None, named)
    assert [p.change for p in result.packs] == ["created"]
    assert (skills / "gpu-tiling" / "SKILL.md").is_file()
