"""One episode, one GPU: an ablation's kernels are all timed on the GPU their times are compared on.

The cache may hold two GPUs' rows (an H200's file, written, and an H100's, only read, or the
other way round). These tests fill such caches with ``GpuTimer``, a test double that names its
GPU and times each kernel by rules read from its source, so each GPU's rows give different
effects, and check that an episode never takes ``before`` from one GPU and a change alone from
another; that an episode one GPU finished is not judged on another; and that a compile failure
found without a GPU counts on every GPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.distill.test_ablation import RuleTimer
from tests.distill.tracegen import (
    ROW_SUM_HINTED_TUNED,
    ROW_SUM_MASKED,
    verdict,
    write_trace,
)
from upskills.distill.ablate import (
    PRESCREEN_GPU,
    AblationCache,
    Measurement,
    ablate_episode,
    kernel_hash,
)
from upskills.distill.changeset import apply_changes, split_changes

ROOT = Path(__file__).resolve().parents[2]
BEFORE, AFTER = ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED
ALONE = [apply_changes(BEFORE, AFTER, [c]) for c in split_changes(BEFORE, AFTER)]
"""``before`` with the hints alone (#0), and with ``num_warps=8`` alone (#1)."""


class GpuTimer(RuleTimer):
    """TEST DOUBLE (never a measurement): RuleTimer on a GPU of a given name."""

    def __init__(self, gpu: str, rules: dict[str, float]) -> None:
        super().__init__(rules)
        self.gpu = gpu
        self.judged: list[str] = []

    def __call__(self, task: str, task_hash: str, source: str) -> Measurement:
        self.judged.append(source)
        return super().__call__(task, task_hash, source).model_copy(update={"gpu": self.gpu})


FAST_WARPS = {"num_warps=8": 0.5, "tl.multiple_of": 0.8}
"""GPU A: 8 warps alone 2x, the hints alone 1.25x."""
SLOW_WARPS = {"num_warps=8": 0.9, "tl.multiple_of": 0.4}
"""GPU B: 8 warps alone 1.11x, the hints alone 2.5x."""


def _fill(path: Path, gpu: str, rules: dict[str, float], sources: list[str]) -> None:
    cache, timer = AblationCache(path), GpuTimer(gpu, rules)
    for s in sources:
        cache.measure(timer, "row_sum", "h", s)


def _effects(out) -> list[float | None]:
    return [round(c.effect, 3) if c.effect else None for c in out.changes]


def test_an_episode_is_read_from_the_gpu_that_judged_all_of_it(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _fill(a, "GPU A", FAST_WARPS, [BEFORE, AFTER, ALONE[0]])  # #1 alone never judged on A
    _fill(b, "GPU B", SLOW_WARPS, [BEFORE, AFTER, *ALONE])
    for cache in (AblationCache(a, [b]), AblationCache(b, [a])):
        out = ablate_episode("row_sum", "h", BEFORE, AFTER, None, cache)
        assert out.status == "ablated"
        assert {m.gpu for m in (out.before, out.after, *(c.alone for c in out.changes))} == {
            "GPU B"
        }
        assert _effects(out) == [2.5, 1.111]


def test_a_change_another_gpu_timed_is_never_compared_with_this_gpus_before(tmp_path):
    """A judged before, after and #0 alone; B only #1 alone: #1 is not timed on A, and B's
    time of it is not set against A's before (that read 0.9 ms against 1 ms as a 1.11x)."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _fill(a, "GPU A", FAST_WARPS, [BEFORE, AFTER, ALONE[0]])
    _fill(b, "GPU B", SLOW_WARPS, [ALONE[1]])
    out = ablate_episode("row_sum", "h", BEFORE, AFTER, None, AblationCache(a, [b]))
    assert out.status == "confounded"
    assert out.changes[1].alone is None and out.changes[1].effect is None
    assert "#1 `num_warps=8 (new)` not timed alone" in out.reason
    assert out.before is not None and out.before.gpu == "GPU A"


def test_a_gpu_judges_a_whole_episode_another_left_unfinished_and_writes_only_its_own(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _fill(a, "GPU A", FAST_WARPS, [BEFORE, AFTER, ALONE[0]])
    kept = a.read_text()
    judge = GpuTimer("GPU B", SLOW_WARPS)
    out = ablate_episode("row_sum", "h", BEFORE, AFTER, judge, AblationCache(b, [a]))
    assert judge.judged == [BEFORE, AFTER, *ALONE]  # A's three rows are not B's
    assert out.status == "ablated" and _effects(out) == [2.5, 1.111]
    assert a.read_text() == kept  # the cache only read is not written
    assert {json.loads(line)["gpu"] for line in b.read_text().splitlines()} == {"GPU B"}
    # resumed on B: nothing judged again
    again = GpuTimer("GPU B", SLOW_WARPS)
    ablate_episode("row_sum", "h", BEFORE, AFTER, again, AblationCache(b, [a]))
    assert again.judged == []


def test_an_episode_another_gpu_finished_is_not_judged_again(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _fill(a, "GPU A", FAST_WARPS, [BEFORE, AFTER, *ALONE])
    judge = GpuTimer("GPU B", SLOW_WARPS)
    out = ablate_episode("row_sum", "h", BEFORE, AFTER, judge, AblationCache(b, [a]))
    assert judge.judged == [] and not b.exists()
    assert out.status == "ablated" and _effects(out) == [1.25, 2.0]
    assert out.before is not None and out.before.gpu == "GPU A"


def test_a_compile_failure_found_without_a_gpu_counts_on_every_gpu(tmp_path):
    b = tmp_path / "b.jsonl"
    _fill(b, "GPU B", SLOW_WARPS, [BEFORE, AFTER, ALONE[1]])
    failed = Measurement(
        key=f"cuda/{PRESCREEN_GPU}/h/{kernel_hash(ALONE[0])}",
        task="row_sum",
        task_hash="h",
        kernel_hash=kernel_hash(ALONE[0]),
        judge="nvcc-prescreen",
        device="cuda",
        gpu=PRESCREEN_GPU,
        passed=False,
        error_class="compile",
    )
    pre = tmp_path / "prescreen.jsonl"
    pre.write_text(failed.model_dump_json() + "\n")
    judge = GpuTimer("GPU B", SLOW_WARPS)
    out = ablate_episode("row_sum", "h", BEFORE, AFTER, judge, AblationCache(b, [pre]))
    assert judge.judged == []  # B's three rows and the prescreen's failure are the episode
    assert out.status == "confounded"
    assert out.reason.startswith("not separable: #0 `adds vectorized_memory` failed alone")
    assert out.changes[1].effect is not None and round(out.changes[1].effect, 3) == 1.111


def test_distill_reads_another_gpus_cache_and_says_so_in_the_provenance(tmp_path):
    from upskills._cli.distill import cli

    write_trace(
        tmp_path / "traces" / "t.jsonl",
        [
            (BEFORE, verdict(BEFORE, True, speedup=2.0, gpu="GPU B")),
            (AFTER, verdict(AFTER, True, speedup=5.0, gpu="GPU B")),
        ],
        notes={1: ["Hints on the offsets and 8 warps should help."]},
    )
    task_hash = "0" * 16  # tracegen's
    b = tmp_path / "b.jsonl"
    cache, timer = AblationCache(b), GpuTimer("GPU B", SLOW_WARPS)
    for s in (BEFORE, AFTER, *ALONE):
        cache.measure(timer, "row_sum", task_hash, s)
    own = tmp_path / "own.jsonl"
    run = CliRunner().invoke(
        cli,
        [str(tmp_path / "traces"), "--skills-dir", str(tmp_path / "skills"), "--no-cases"]
        + ["--ablation-cache", str(own), "--ablation-read", str(b)],
    )
    assert run.exit_code == 0, run.output
    tune = (tmp_path / "skills/gpu-launch-tuning/SKILL.md").read_text()
    assert "Measured as applied alone (ablation)" in tune and "GPU B" in tune
    assert "(1 observation, 0 against)." in tune  # one episode, counted in the singular
    prov = json.loads(
        (tmp_path / "skills/gpu-launch-tuning/references/provenance.json").read_text()
    )
    assert prov["config"]["ablation_read"] == [str(b)]
    assert prov["ablation"] == {"ablated": 1}
    missing = CliRunner().invoke(
        cli, [str(tmp_path / "traces"), "--ablation-read", str(tmp_path / "nowhere.jsonl")]
    )
    assert missing.exit_code != 0 and "nowhere.jsonl" in missing.output


def test_take_round_files_an_h100s_ablation_under_its_own_name(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks" / "device"))
    import take_round as tr  # pyright: ignore[reportMissingImports]

    assert tr.NO_GPU == PRESCREEN_GPU
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "ablations_h200.jsonl").write_text('{"gpu": "NVIDIA H200"}\n')
    out = tmp_path / "out"
    out.mkdir()
    rows = [{"gpu": PRESCREEN_GPU}, {"gpu": "NVIDIA H100 80GB HBM3"}]
    (out / "ablations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    taken, _ = tr.take(out, tmp_path, ablations=True, device_root="/nowhere")
    assert taken == ["ablations_h100.jsonl: 2 new measurement line(s)"]
    assert (results / "ablations_h200.jsonl").read_text() == '{"gpu": "NVIDIA H200"}\n'
    assert tr.distill_command(tmp_path).endswith(
        "--ablation-cache benchmarks/results/ablations_h200.jsonl "
        "--ablation-read benchmarks/results/ablations_h100.jsonl"
    )
    rows.append({"gpu": "NVIDIA H200"})
    (out / "ablations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(tr.TakeError, match="more than one GPU"):
        tr.take(out, tmp_path, ablations=True, device_root="/nowhere")


def test_the_build_step_asks_for_what_its_gpu_has_left(tmp_path):
    """What the device builds before an ablation (``ablation_prescreen.pending``, as
    ``build_extensions.py --ablation --gpu`` calls it) is what the distill after it judges."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "corpus_live"))
    import ablation_prescreen as pre  # pyright: ignore[reportMissingImports]

    write_trace(
        tmp_path / "traces" / "t.jsonl",
        [
            (BEFORE, verdict(BEFORE, True, speedup=2.0, gpu="GPU A")),
            (AFTER, verdict(AFTER, True, speedup=5.0, gpu="GPU A")),
        ],
        task_origin="builtin",
    )
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    cache, timer = AblationCache(a), GpuTimer("GPU A", FAST_WARPS)
    for s in (BEFORE, AFTER, ALONE[0]):
        cache.measure(timer, "row_sum", "0" * 16, s)
    asked = pre.pending(tmp_path / "traces", b, "GPU B", (a,))
    assert [s for _, _, s in asked] == [BEFORE, AFTER, *ALONE]  # the whole episode on B
    assert [s for _, _, s in pre.pending(tmp_path / "traces", a, "GPU A")] == [ALONE[1]]
    cache.measure(timer, "row_sum", "0" * 16, ALONE[1])
    assert pre.pending(tmp_path / "traces", b, "GPU B", (a,)) == []  # A finished it
