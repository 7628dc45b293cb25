"""KernelToolbox without the verifier: arguments, kernel state, summaries, skills, best kernel."""

from __future__ import annotations

import pytest

from upskills.agent.loop import extract_code_block
from upskills.agent.prompt import build_prompts, dict_skill_tool
from upskills.agent.recording import BestKernel
from upskills.agent.toolbox import (
    KernelToolbox,
    ToolOutcome,
    format_hardware,
    kernel_hash,
    summarize_verdict,
)
from upskills.tasks import load_task
from upskills.verify.verdict import ErrorClass, Timing, VariantResult, Verdict

CPU_HW = {"name": "cpu"}
H200 = {
    "name": "NVIDIA H200",
    "sm_count": 132,
    "memory_gb": 141,
    "bandwidth_gbs": 4800,
    "smem_per_block_kb": 227,
    "compute_capability": "9.0",
}


@pytest.fixture
def box() -> KernelToolbox:
    return KernelToolbox(load_task("relu"), device="cpu", hardware=CPU_HW)


def test_write_kernel_stores_source_and_returns_its_hash(box: KernelToolbox) -> None:
    out = box.call("write_kernel", {"source": "class ModelNew: pass\n"})
    assert out.error is None
    assert out.kernel_hash == kernel_hash("class ModelNew: pass\n")
    assert out.kernel_hash in out.output
    assert box.current_source == "class ModelNew: pass\n"


def test_write_kernel_warns_when_the_source_does_not_parse(box: KernelToolbox) -> None:
    out = box.call("write_kernel", {"source": "def f(:\n"})
    assert out.error is None
    assert "does not parse: line 1" in out.output


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("compile", {}, "unknown tool 'compile'"),
        ("write_kernel", {}, "missing `source`"),
        ("write_kernel", {"source": 3}, "must be a string"),
        ("read_task", {"verbose": True}, "unexpected argument(s) verbose"),
        ("check", {}, "no kernel yet"),
        ("benchmark", {}, "no kernel yet"),
        ("submit", {}, "no kernel to submit"),
        ("read_skill", {"name": "x"}, "unknown tool 'read_skill'"),
    ],
)
def test_bad_calls_are_tool_errors_not_exceptions(
    box: KernelToolbox, name: str, args: dict, needle: str
) -> None:
    out = box.call(name, args)
    assert out.error is not None and needle in out.error
    assert out.output.startswith("error:")
    assert out.verdict is None


def test_read_task_states_reference_variants_and_hardware() -> None:
    task = load_task("row_sum")
    text = KernelToolbox(task, device="cuda", hardware=H200).call("read_task").output
    assert task.statement in text and "return x.sum(dim=-1)" in text
    assert "- ragged: M=67, N=1003 [ragged]" in text
    assert (
        "NVIDIA H200 (compute capability 9.0)" in text and "shared memory per block: 227 KB" in text
    )


def test_specs_list_the_kernel_tools_and_read_skill_only_when_attached() -> None:
    task = load_task("relu")
    names = [s.name for s in KernelToolbox(task, hardware=CPU_HW).specs()]
    assert names == ["read_task", "write_kernel", "check", "benchmark", "profile", "submit"]
    tool = dict_skill_tool({"tiling": "Use 2-D tiles."})
    box = KernelToolbox(task, hardware=CPU_HW, skill_tool=tool)
    assert [s.name for s in box.specs()][-1] == "read_skill"
    assert box.call("read_skill", {"name": "tiling"}).output == "Use 2-D tiles."
    missing = box.call("read_skill", {"name": "nope"})
    assert missing.error is not None and "no skill named 'nope'" in missing.error


def _verdict(**kw) -> Verdict:
    base = dict(task="relu", task_hash="h", candidate_hash="c", device="cuda", gpu="NVIDIA H200")
    return Verdict(**{**base, **kw})


def test_summary_of_a_failing_verdict_names_class_and_per_variant_errors() -> None:
    v = _verdict(
        passed=False,
        error_class=ErrorClass.MISMATCH,
        stage="correctness",
        message="ragged: values differ",
        variants=[
            VariantResult(variant="small", seed=0, passed=True, max_abs_err=0.0),
            VariantResult(
                variant="ragged", seed=0, passed=False, max_abs_err=45.9, max_rel_err=0.7
            ),
            VariantResult(variant="ragged", seed=1, passed=False, max_abs_err=12.0),
        ],
    )
    text = summarize_verdict(v)
    assert text.startswith("FAILED (mismatch, stage correctness) on cuda [NVIDIA H200]")
    assert "variant small: ok, max_abs_err=0" in text
    assert "variant ragged: FAIL 2/2 seeds, max_abs_err=45.9, max_rel_err=0.7" in text


def test_summary_of_a_timed_verdict_gives_speedups() -> None:
    t = Timing(median_ms=0.5, p10_ms=0.49, p90_ms=0.52, mean_ms=0.5, reps=100, spread=0.06)
    e = Timing(median_ms=1.0, p10_ms=0.9, p90_ms=1.1, mean_ms=1.0, reps=100, spread=0.2)
    v = _verdict(
        passed=True, timing_status="measured", timing=t, baselines={"eager": e}, speedup_eager=2.0
    )
    assert "0.5000 ms median" in summarize_verdict(v)
    assert "speedup vs eager 2.00x (1.0000 ms)" in summarize_verdict(v)
    cpu = _verdict(passed=True, device="cpu", gpu=None)
    assert summarize_verdict(cpu).splitlines() == ["PASSED on cpu", "timing: unavailable"]


def test_summary_of_a_timed_verdict_says_how_many_calls_were_late_and_how_the_head_start_grew():
    base = {"median_ms": 0.5, "p10_ms": 0.49, "p90_ms": 0.52, "mean_ms": 0.5, "spread": 0.06}
    on_time = Timing(**base, reps=100, late_calls=0, head_start_x=1)
    late = Timing(**base, reps=100, late_calls=7, head_start_x=1)
    grown = Timing(**base, reps=100, late_calls=7, head_start_x=4)
    lines = [
        summarize_verdict(_verdict(passed=True, timing_status="measured", timing=t))
        for t in (on_time, late, grown)
    ]
    assert "enqueued" not in lines[0]
    assert "(7 of 100 calls enqueued after the GPU's head start)" in lines[1]
    assert "(7 of 100 calls enqueued after the GPU's head start, which grew 4x)" in lines[2]


def test_summary_of_a_timed_verdict_says_when_the_candidate_set_l2_aside():
    """A candidate that set L2 aside for persisting lines is told its lines were demoted before
    every flush (so a speedup it expected from them across calls is not there)."""
    base = {"median_ms": 0.5, "p10_ms": 0.49, "p90_ms": 0.52, "mean_ms": 0.5, "spread": 0.06}
    kept = Timing(**base, reps=100, persisting_l2_bytes=30 << 20)
    line = summarize_verdict(_verdict(passed=True, timing_status="measured", timing=kept))
    assert "(30.0 MiB of L2 set aside for persisting lines: demoted before each call's" in line
    plain = Timing(**base, reps=100, persisting_l2_bytes=0)
    assert "set aside" not in summarize_verdict(
        _verdict(passed=True, timing_status="measured", timing=plain)
    )
    # the H200's contexts read 11.25 MiB with no candidate asking: that default is no news
    h200 = 11796480
    default = Timing(**base, reps=100, persisting_l2_bytes=h200, persisting_l2_default_bytes=h200)
    assert "set aside" not in summarize_verdict(
        _verdict(passed=True, timing_status="measured", timing=default)
    )
    raised = Timing(
        **base, reps=100, persisting_l2_bytes=30 << 20, persisting_l2_default_bytes=h200
    )
    line = summarize_verdict(_verdict(passed=True, timing_status="measured", timing=raised))
    assert (
        "(30.0 MiB of L2 set aside for persisting lines, above the context's default 11.25 MiB"
        in line
    )


def test_hardware_lines_for_cpu_and_gpu() -> None:
    assert "Triton's interpreter" in format_hardware(CPU_HW, "auto")
    gpu = format_hardware(H200, "cuda")
    assert "streaming multiprocessors: 132" in gpu and "memory bandwidth: 4800 GB/s" in gpu


def test_system_prompt_states_hardware_format_and_skills() -> None:
    task = load_task("relu")

    class Pack:
        name, description, version, body = "tiling", "How to tile.", "1.0.0", "BODY-TEXT"

    none = build_prompts(task, H200, "cuda")
    assert "NVIDIA H200" in none.system and "class ModelNew" in none.system
    assert "interpreter" not in none.system and "read_skill" not in none.system
    assert set(none.hashes) == {"teacher_system", "teacher_task"}
    assert task.source.strip() in none.task
    on_demand = build_prompts(task, CPU_HW, "cpu", skills=[Pack()], skills_mode="on_demand")
    assert "`tiling`: How to tile." in on_demand.system and "BODY-TEXT" not in on_demand.system
    assert "Triton's interpreter" in on_demand.system and on_demand.skill_tool is not None
    inline = build_prompts(task, CPU_HW, "cpu", skills=[Pack()], skills_mode="inline")
    assert "BODY-TEXT" in inline.system and inline.skill_tool is None


def test_code_block_extraction_prefers_the_last_modelnew_block() -> None:
    text = (
        "plan\n```python\nclass ModelNew: v = 1\n```\n"
        "alt\n```py\nclass ModelNew: v = 2\n```\n```\nx\n```"
    )
    assert extract_code_block(text) == "class ModelNew: v = 2\n"
    assert extract_code_block("```python\nprint(1)\n```") == "print(1)\n"
    assert extract_code_block("no code here") is None


def test_best_kernel_keeps_the_fastest_passing_one() -> None:
    best = BestKernel()

    def outcome(src: str, passed: bool, speedup: float | None) -> ToolOutcome:
        v = _verdict(passed=passed, speedup_eager=speedup)
        return ToolOutcome("", verdict=v, kernel_source=src, kernel_hash=kernel_hash(src))

    assert not best.offer(outcome("a", False, None))
    assert best.offer(outcome("b", True, 1.5)) and best.source == "b"
    assert not best.offer(outcome("c", True, 1.2))
    assert not best.offer(outcome("d", True, None))
    assert best.offer(outcome("e", True, 3.0)) and (best.source, best.speedup) == ("e", 3.0)
