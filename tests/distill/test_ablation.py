"""Causal attribution: a two-change diff is split, each change measured alone and credited.

Timing on this CPU machine is impossible, so the "two changes with different effects" tests
inject ``RuleTimer``: a test double that passes every kernel and reports a time computed from
its source by fixed rules. Everything after the judge (splitting, building the intermediate
kernels, the cache, the attribution, the lessons and the rendering) is the code path that
``upskills distill --ablate --device cuda`` runs with the real verifier. The last test runs that
real verifier on the CPU (slow): correctness only, so the effect stays confounded.
"""

from __future__ import annotations

import json

import pytest

from tests.distill.tracegen import (
    ROW_SUM_HINTED,
    ROW_SUM_HINTED_TUNED,
    ROW_SUM_MASKED,
    ROW_SUM_TUNED,
    verdict,
    write_trace,
)
from upskills.distill import DistillConfig, distill
from upskills.distill.ablate import AblationCache, Measurement, ablate_episode, kernel_hash
from upskills.distill.changeset import apply_changes, split_changes
from upskills.distill.episodes import summarize_trace
from upskills.distill.lessons import mine_trace


class RuleTimer:
    """TEST DOUBLE (never a measurement): passes every kernel; its time is 1 ms times the
    factor of every rule whose marker is in the source."""

    name = "test-double:rule-timer"
    device = "cuda"

    def __init__(self, rules: dict[str, float], fail: tuple[str, ...] = ()) -> None:
        self.rules, self.fail, self.calls = rules, fail, 0

    def __call__(self, task: str, task_hash: str, source: str) -> Measurement:
        self.calls += 1
        ms = 1.0
        for marker, factor in self.rules.items():
            if marker in source:
                ms *= factor
        failed = any(marker in source for marker in self.fail)
        return Measurement(
            key="",
            task=task,
            task_hash=task_hash,
            kernel_hash=kernel_hash(source),
            judge=self.name,
            device="cuda",
            gpu="Test Double GPU",
            passed=not failed,
            error_class="mismatch" if failed else None,
            median_ms=None if failed else ms,
            speedup_eager=None if failed else 2.0 / ms,
            speedup_compile=None if failed else 1.5 / ms,
        )


RULES = {"num_warps=8": 0.5, "tl.multiple_of": 0.8}
"""num_warps=8 alone: 2x faster; the hints alone: 1.25x; both: 2.5x."""


def test_split_finds_the_two_changes_and_rebuilds_each_alone():
    changes = split_changes(ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED)
    assert [c.techniques for c in changes] == [("vectorized_memory",), ("launch_config",)]
    assert changes[1].retunes == ("num_warps=8 (new)",)
    assert apply_changes(ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, [changes[0]]) == ROW_SUM_HINTED
    assert apply_changes(ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, [changes[1]]) == ROW_SUM_TUNED


def test_hunks_that_must_go_together_are_one_change():
    after = (
        ROW_SUM_MASKED.replace(
            "def row_sum_kernel(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):",
            "def row_sum_kernel(x_ptr, out_ptr, N, stride, scale, BLOCK: tl.constexpr):",
        )
        .replace(
            "    tl.store(out_ptr + row, tl.sum(acc, axis=0))",
            "    total = tl.sum(acc, axis=0) * scale\n    tl.store(out_ptr + row, total)",
        )
        .replace("x.stride(0), BLOCK=128)", "x.stride(0), 1.0, BLOCK=128)")
    )
    changes = split_changes(ROW_SUM_MASKED, after)
    assert len(changes) == 1  # a new parameter, its use and the call passing it
    assert len(changes[0].hunks) == 3


CUDA_BEFORE = r'''
from torch.utils.cpp_extension import load_inline

SRC = """
__global__ void bias_act(const float* x, const float* b, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i] + b[i], 0.f);
}

void launch(const float* x, const float* b, float* y, int n) {
  bias_act<<<(n + 255) / 256, 256>>>(x, b, y, n);
}
"""
ext = load_inline("k", cpp_sources="", cuda_sources=SRC, functions=["launch"])
'''


def test_a_cuda_helper_and_its_caller_in_a_string_are_one_change():
    """C++ in a string is text to Python's syntax tree: the hunk that adds a ``__device__``
    helper and the hunk that calls it went apart, and the caller alone did not compile
    (``identifier "gelu_erf" is undefined``, the nvcc prescreen of 2026-12-04). A retune of the
    block size elsewhere in the same string stays a change of its own."""
    after = CUDA_BEFORE.replace(
        "__global__ void bias_act(",
        "__device__ float gelu_erf(float v) {\n  return 0.5f * v * (1.f + erff(v * 0.7071f));\n}\n"
        "\n__global__ void bias_act(",
    ).replace("y[i] = fmaxf(x[i] + b[i], 0.f);", "y[i] = gelu_erf(x[i] + b[i]);")
    after = after.replace("(n + 255) / 256, 256>>>", "(n + 511) / 512, 512>>>")
    changes = split_changes(CUDA_BEFORE, after)
    assert len(changes) == 2
    helper = next(c for c in changes if any("gelu_erf(float v)" in line for line in c.added))
    assert any("y[i] = gelu_erf(" in line for line in helper.added)  # the call went with it
    retune = next(c for c in changes if c is not helper)
    assert [line.strip() for line in retune.added] == [
        "bias_act<<<(n + 511) / 512, 512>>>(x, b, y, n);"
    ]
    # and a helper removed in one hunk goes with the hunk that stops calling it
    back = split_changes(after, CUDA_BEFORE)
    assert len(back) == 2
    assert any(
        any("gelu_erf(float v)" in line for line in c.removed)
        and any("y[i] = gelu_erf(" in line for line in c.removed)
        for c in back
    )


def test_an_import_goes_with_the_hunks_that_use_the_name_it_binds():
    """An attempt that moves to CUDA adds ``from torch.utils.cpp_extension import load_inline``
    in one hunk and calls it in another: apart, the caller's intermediate failed to import
    (``NameError: name 'load_inline' is not defined``, the nvcc prescreen of 2026-12-04). An
    unrelated change stays its own."""
    before = "import torch\n\n\ndef f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 2\n"
    after = before.replace(
        "import torch\n", "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
    )
    after = after.replace("return x * 2", 'return load_inline("k", cpp_sources="", functions=[])')
    after = after.replace("return x + 1", "return x + 2")
    changes = split_changes(before, after)
    assert len(changes) == 2
    cuda = next(c for c in changes if any("load_inline(" in line for line in c.added))
    assert any(line.startswith("from torch.utils.cpp_extension") for line in cuda.added)
    other = next(c for c in changes if c is not cuda)
    assert [line.strip() for line in other.added] == ["return x + 2"]


def test_ablation_credits_each_change_with_its_own_effect(tmp_path):
    judge = RuleTimer(RULES)
    cache = AblationCache(tmp_path / "ablations.jsonl")
    out = ablate_episode("row_sum", "h", ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, judge, cache)
    assert out.status == "ablated" and out.reason == ""
    effects = {tuple(c.techniques): round(c.effect or 0, 3) for c in out.changes}
    assert effects == {("vectorized_memory",): 1.25, ("launch_config",): 2.0}
    assert out.interaction == ""  # 1.25 x 2.0 == 2.5, the whole effect
    assert judge.calls == 4  # before, after, and each change alone
    # resumable: a second run reads the cache and judges nothing
    again = RuleTimer(RULES)
    cached = ablate_episode(
        "row_sum", "h", ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, again, AblationCache(cache.path)
    )
    assert again.calls == 0 and cached == out


def test_a_change_that_fails_alone_stays_confounded(tmp_path):
    out = ablate_episode(
        "row_sum",
        "h",
        ROW_SUM_MASKED,
        ROW_SUM_HINTED_TUNED,
        RuleTimerFailingAlone(RULES),
        AblationCache(None),
    )
    assert out.status == "confounded"
    want = "not separable: #0 `adds vectorized_memory` failed alone (needs the other changes)"
    assert out.reason == want
    assert [c.credited for c in out.changes] == [False, True]


def test_the_reason_tells_a_change_that_failed_alone_from_one_not_timed(tmp_path):
    """Read from a cache that holds one change alone (failed) and lacks the other: the reason
    says which failed and which was not timed (it said both "fail alone")."""
    path = tmp_path / "ablations.jsonl"
    ablate_episode(
        "row_sum",
        "h",
        ROW_SUM_MASKED,
        ROW_SUM_HINTED_TUNED,
        RuleTimerFailingAlone(RULES),
        AblationCache(path),
    )
    changes = split_changes(ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED)
    tuned_alone = kernel_hash(apply_changes(ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, [changes[1]]))
    kept = [line for line in path.read_text().splitlines() if tuned_alone not in line]
    (tmp_path / "partial.jsonl").write_text("\n".join(kept) + "\n")
    out = ablate_episode(
        "row_sum",
        "h",
        ROW_SUM_MASKED,
        ROW_SUM_HINTED_TUNED,
        None,
        AblationCache(tmp_path / "partial.jsonl"),
    )
    assert out.reason == (
        "not separable: #0 `adds vectorized_memory` failed alone (needs the other changes); "
        "#1 `num_warps=8 (new)` not timed alone"
    )


class RuleTimerFailingAlone(RuleTimer):
    """TEST DOUBLE: as RuleTimer, but the hinted kernel fails unless num_warps=8 is set too."""

    def __call__(self, task: str, task_hash: str, source: str) -> Measurement:
        m = super().__call__(task, task_hash, source)
        if "tl.multiple_of" in source and "num_warps=8" not in source:
            return m.model_copy(update={"passed": False, "median_ms": None, "speedup_eager": None})
        return m


def _two_change_trace(path, task_origin=None):
    write_trace(
        path,
        [
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=2.0, gpu="NVIDIA H200")),
            (
                ROW_SUM_HINTED_TUNED,
                verdict(ROW_SUM_HINTED_TUNED, True, speedup=5.0, gpu="NVIDIA H200"),
            ),
        ],
        notes={1: ["Hints on the offsets and 8 warps should help."]},
        task_origin=task_origin,
    )


def test_without_ablation_a_two_change_effect_is_confounded_and_credited_to_neither(tmp_path):
    _two_change_trace(tmp_path / "t.jsonl")
    perf = [x for x in mine_trace(summarize_trace(tmp_path / "t.jsonl")) if x.kind == "perf"]
    assert [x.technique for x in perf] == ["confounded"]
    e = perf[0].effect
    assert e.attribution == "confounded" and (e.speedup_before, e.speedup_after) == (2.0, 5.0)
    assert e.changes == ["adds vectorized_memory", "num_warps=8 (new)"]


def test_distill_with_ablation_writes_each_effect_separately(tmp_path):
    for i in range(2):
        _two_change_trace(tmp_path / "traces" / f"t{i}.jsonl")
    config = DistillConfig(ablate=True, ablation_cache=str(tmp_path / "abl.jsonl"))
    result = distill([tmp_path / "traces"], tmp_path / "skills", None, config, RuleTimer(RULES))
    assert result.ablations == {"ablated": 2}
    tune = (tmp_path / "skills/gpu-launch-tuning/SKILL.md").read_text()
    assert (
        "### Launch configuration: 2.00x -> 4.00x eager, 1.50x -> 3.00x torch.compile, "
        "Test Double GPU (ablated)" in tune
    )
    mem = (tmp_path / "skills/gpu-memory-access/SKILL.md").read_text()
    assert "### Vectorized loads and stores: 2.00x -> 2.50x eager" in mem
    assert "confounded" not in tune.split("## Performance")[1].split("## Sizing")[0].replace(
        "`confounded` that", ""
    )
    # without --ablate, the cache made on the "GPU" is read back: same attribution, no judge
    again = distill(
        [tmp_path / "traces"],
        tmp_path / "skills2",
        None,
        DistillConfig(ablation_cache=str(tmp_path / "abl.jsonl")),
    )
    assert again.ablations == {"ablated": 2}
    no_cache = distill([tmp_path / "traces"], tmp_path / "skills3", None)
    assert no_cache.ablations == {"confounded": 2}


def _judged_as(tmp_path, origin: str):
    """Distill a two-change trace whose task came from ``origin``, with a judge that records
    the task it is handed: ``(tasks seen, result, config)``."""
    seen: list[str] = []

    class Recorder(RuleTimer):
        def __call__(self, task, task_hash, source):  # noqa: ANN001, ANN204
            seen.append(task)
            return super().__call__(task, task_hash, source)

    _two_change_trace(tmp_path / "traces" / "t.jsonl", task_origin=origin)
    config = DistillConfig(ablate=True, ablation_cache=str(tmp_path / "abl.jsonl"))
    result = distill([tmp_path / "traces"], tmp_path / "skills", None, config, Recorder(RULES))
    return seen, result, config


def test_a_task_loaded_from_a_file_is_judged_from_that_file(tmp_path):
    """KernelBench sessions name the task by its file's stem; the ablation must load the file
    (the H200 run stopped on ``unknown task '39_L2Norm_'``), and a file that is gone makes the
    episode confounded, not the run fail."""
    seen, result, config = _judged_as(tmp_path, "kb/level1/47_Sum.py")
    assert seen and set(seen) == {"kb/level1/47_Sum.py"}
    assert result.ablations == {"ablated": 1}

    class Missing(RuleTimer):
        def __call__(self, task, task_hash, source):  # noqa: ANN001, ANN204
            raise FileNotFoundError(task)

    (tmp_path / "abl.jsonl").unlink()
    result = distill([tmp_path / "traces"], tmp_path / "skills4", None, config, Missing(RULES))
    assert result.ablations == {"confounded": 1}


def test_a_builtin_task_is_judged_by_its_name_not_its_origin(tmp_path):
    """A session records a built-in task's origin as ``builtin``: the judge must be handed the
    task's name (it was handed ``builtin``, and no built-in episode could be ablated)."""
    seen, result, _ = _judged_as(tmp_path, "builtin")
    assert seen and set(seen) == {"row_sum"}
    assert result.ablations == {"ablated": 1}


def test_a_session_that_recorded_no_origin_is_judged_from_its_state_json(tmp_path):
    """The first corpus rounds' sessions (2026-11-30) recorded no ``task_origin`` in their
    ``run_start``: a KernelBench episode of theirs was handed to the judge by its name, which no
    loader knows, so the H100 ablation of 2026-12-07 left 47_Sum's six kernels unjudged while
    the plan listed them. The session folder's ``state.json`` names the file."""
    seen: list[str] = []

    class Recorder(RuleTimer):
        def __call__(self, task, task_hash, source):  # noqa: ANN001, ANN204
            seen.append(task)
            return super().__call__(task, task_hash, source)

    folder = tmp_path / "traces" / "kb1_47"
    _two_change_trace(folder / "trace.jsonl")
    state = {"task": {"name": "row_sum", "origin": "kb/level1/47_Sum.py"}}
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    config = DistillConfig(ablate=True, ablation_cache=str(tmp_path / "abl.jsonl"))
    result = distill([tmp_path / "traces"], tmp_path / "skills", None, config, Recorder(RULES))
    assert seen and set(seen) == {"kb/level1/47_Sum.py"}
    assert result.ablations == {"ablated": 1}
    # a state.json that names no origin leaves the task's name, as before
    seen.clear()
    (folder / "state.json").write_text('{"task": {}}', encoding="utf-8")
    (tmp_path / "abl.jsonl").unlink()
    distill([tmp_path / "traces"], tmp_path / "skills2", None, config, Recorder(RULES))
    assert set(seen) == {"row_sum"}


def test_a_kernelbench_sessions_lessons_take_their_conditions_from_its_embedded_task(tmp_path):
    """A KernelBench task's name loads nothing, so its lessons had no dtypes or tags; the
    session's ``state.json`` embeds the task, and no ``.kb/`` checkout is needed to read it."""
    from upskills.tasks import load_task

    folder = tmp_path / "kb1_47"
    attempts = [
        (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=2.0, gpu="NVIDIA H200")),
        (ROW_SUM_HINTED_TUNED, verdict(ROW_SUM_HINTED_TUNED, True, speedup=5.0, gpu="NVIDIA H200")),
    ]
    write_trace(folder / "trace.jsonl", attempts, task="47_Sum", task_origin=".kb/47_Sum.py")

    def pre():
        lessons = mine_trace(summarize_trace(folder / "trace.jsonl"))
        assert lessons
        return {(tuple(x.preconditions.dtypes), tuple(x.preconditions.tags)) for x in lessons}

    assert pre() == {((), ())}  # no file, no state.json: nothing is known of the task
    task = load_task("row_sum").model_copy(update={"name": "47_Sum", "dtypes": ["float16"]})
    state = {"task": task.model_dump(mode="json")}
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    from upskills.distill import lessons

    lessons._embedded_meta.cache_clear()
    assert pre() == {(("float16",), tuple(task.tags))}


@pytest.mark.slow
def test_cpu_verifier_checks_each_change_but_credits_none(tmp_path):
    from upskills.distill.ablate import VerifierJudge

    judge = VerifierJudge("cpu", seeds=1)
    try:
        out = ablate_episode(
            "row_sum", "h", ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, judge, AblationCache(None)
        )
    finally:
        judge.close()
    assert out.status == "confounded" and "no timing on cpu" in out.reason
    assert all(c.alone is not None and c.alone.passed for c in out.changes)
    assert not any(c.credited for c in out.changes)


def test_each_judged_kernel_is_reported_as_it_is_judged(tmp_path, capsys):
    """A long ablation (about 22 s a kernel on a GPU) says on stderr what each kernel got, so a
    call cut by its time limit shows where it stood; a kernel read from the cache is not judged
    and not reported."""
    judge = RuleTimer(RULES, fail=("num_warps=8",))
    cache = AblationCache(tmp_path / "abl.jsonl", progress=True)
    for source in (ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, ROW_SUM_MASKED):
        cache.measure(judge, "row_sum", "h", source)
    cache.close()
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("ablation: judged ")]
    assert judge.calls == 2 and len(lines) == 2
    assert lines[0].startswith(f"ablation: judged row_sum {kernel_hash(ROW_SUM_MASKED)} on ")
    assert all(" on cuda Test Double GPU: " in x and x.endswith(" s)") for x in lines)
    assert ": passed, 1 ms, 2.00x eager (" in lines[0]
    failed = f"{kernel_hash(ROW_SUM_HINTED_TUNED)} on cuda Test Double GPU: failed (mismatch) ("
    assert failed in lines[1]
    # read again from the file: nothing judged, nothing reported
    again = AblationCache(tmp_path / "abl.jsonl", progress=True)
    again.measure(judge, "row_sum", "h", ROW_SUM_HINTED_TUNED)
    assert judge.calls == 2 and "ablation: judged " not in capsys.readouterr().err


def test_only_the_distillers_own_verifier_reports_progress():
    """The CLI's ablation (no judge handed in) reports; the prescreen's recorder and the tests'
    doubles, handed in, judge nothing worth a line."""
    from upskills.distill.attribution import Attribution

    config = DistillConfig(ablate=True)
    assert Attribution(config).cache.progress
    assert not Attribution(config, RuleTimer(RULES)).cache.progress
    assert not Attribution(DistillConfig()).cache.progress
