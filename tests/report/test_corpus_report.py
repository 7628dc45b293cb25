import json

import pytest
from click.testing import CliRunner

from upskills._cli.main import main
from upskills.report.corpus import build_corpus_report, task_work, trace_row
from upskills.tasks import load_task
from upskills.trace import TraceWriter, read_trace
from upskills.trace.events import Note, RunEnd, RunStart, ToolCall, ToolResult
from upskills.verify.verdict import ErrorClass, Timing, Verdict

ENV = {"gpu": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0"}


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, mean_ms=ms, reps=100, spread=0.0)


def _verdict(task, kernel, error=None, ms=None, eager_ms=None, compile_ms=None):
    timed = ms is not None
    return Verdict(
        task=task.name,
        task_hash=task.hash,
        candidate_hash=kernel,
        device="cuda",
        gpu="NVIDIA H200",
        passed=error is None,
        error_class=error,
        timing_status="measured" if timed else "skipped",
        timing=_timing(ms) if timed else None,
        baselines={"eager": _timing(eager_ms), "compile": _timing(compile_ms)} if timed else {},
        speedup_eager=eager_ms / ms if timed else None,
        speedup_compile=compile_ms / ms if timed else None,
    )


def _trace(path, name, steps, end="solved", task_hash=None):
    """Write a trace; each step is (tool, kernel hash, verdict or None)."""
    task = load_task(name)
    with TraceWriter(path) as w:
        tid = w.trace_id
        w.write(
            RunStart(
                trace_id=tid,
                task=name,
                task_hash=task_hash or task.hash,
                agent_role="external",
                agent_name="test-agent",
                environment=ENV,
            )
        )
        w.write(Note(trace_id=tid, text="plan"))
        for i, (tool, kernel, verdict) in enumerate(steps):
            w.write(ToolCall(trace_id=tid, tool_name=tool, call_id=str(i)))
            w.write(
                ToolResult(
                    trace_id=tid,
                    tool_name=tool,
                    call_id=str(i),
                    kernel_hash=kernel,
                    verdict=verdict,
                )
            )
        if end:
            w.write(RunEnd(trace_id=tid, outcome=end))
    return path


def _vector_add_trace(path):
    t = load_task("vector_add")
    return _trace(
        path,
        "vector_add",
        [
            ("write_kernel", "k1", None),
            ("check", "k1", _verdict(t, "k1", ErrorClass.MISMATCH)),
            ("write_kernel", "k2", None),
            ("check", "k2", _verdict(t, "k2")),
            ("benchmark", "k2", _verdict(t, "k2", ms=0.5, eager_ms=0.6, compile_ms=0.4)),
            ("write_kernel", "k3", None),
            ("benchmark", "k3", _verdict(t, "k3", ms=0.3, eager_ms=0.6, compile_ms=0.4)),
            ("write_kernel", "k3", None),  # re-writing k3 is not a new attempt
            ("submit", "k3", _verdict(t, "k3", ms=0.25, eager_ms=0.6, compile_ms=0.375)),
        ],
    )


def test_task_work_counts_inputs_params_and_outputs_once():
    n = 67108864  # vector_add main: x, y read, out written, float32
    assert task_work(load_task("vector_add")) == (3 * n * 4, None)
    # layernorm: x read and out written (8192 x 8192 fp32) plus weight and bias [8192]
    assert task_work(load_task("layernorm"))[0] == 2 * 8192 * 8192 * 4 + 2 * 8192 * 4
    nbytes, flops = task_work(load_task("gemm_fp16"))
    assert (nbytes, flops) == (3 * 4096 * 4096 * 2, 2 * 4096**3)
    nbytes, flops = task_work(load_task("batched_matmul"))
    g = load_task("batched_matmul").main_variant().globals
    assert flops == 2 * g["B"] * g["M"] * g["N"] * g["K"]
    _, flops = task_work(load_task("causal_attention"))  # B=4 H=16 S=4096 D=64, causal
    assert flops == 2 * 2 * 4 * 16 * 4096 * 4096 * 64 / 2


def test_task_work_falls_back_to_cpu_without_a_meta_kernel():
    task = load_task("histogram")  # bincount has no meta kernel: output size depends on data
    small = [v.model_copy(update={"main": v.name == "small"}) for v in task.variants]
    task = task.model_copy(update={"variants": small})
    assert task_work(task) == (65536 * 8 + 256 * 8, None)


def test_row_numbers_match_hand_computation(tmp_path):
    row = trace_row(read_trace(_vector_add_trace(tmp_path / "va.jsonl")))
    assert row.attempts == 3
    assert row.history == ["FAIL mismatch", "PASS 1.20x", "PASS 2.40x"]
    assert row.repaired_failures == 1
    assert (row.final_kernel, row.final_from, row.median_ms) == ("k3", "submit", 0.25)
    assert row.speedup_eager == pytest.approx(2.4) and row.speedup_compile == pytest.approx(1.5)
    assert row.bound == "memory" and row.bytes == 805306368 and row.flops is None
    assert row.gbs == pytest.approx(805306368 / 0.25e-3 / 1e9)  # 3221.225 GB/s
    assert row.pct_copy == pytest.approx(100 * 3221.225472 / 4300)
    assert row.tflops is None and row.notes == []


def test_without_submit_the_fastest_passing_kernel_is_final(tmp_path):
    t = load_task("gemm_fp16")
    steps = [
        ("benchmark", "a", _verdict(t, "a", ms=0.2, eager_ms=0.19, compile_ms=0.2)),
        ("benchmark", "b", _verdict(t, "b", ms=0.4, eager_ms=0.19, compile_ms=0.2)),
        ("check", "c", _verdict(t, "c", ErrorClass.COMPILE)),
    ]
    path = _trace(tmp_path / "g.jsonl", "gemm_fp16", steps, end="budget", task_hash="stale")
    row = trace_row(read_trace(path), peak_tflops=1000.0)
    assert row.history == ["PASS 0.95x", "PASS 0.47x", "FAIL compile"]
    assert row.repaired_failures == 0 and row.outcome == "budget"
    assert (row.final_kernel, row.final_from) == ("a", "best")
    assert row.bound == "compute" and row.gbs is None
    assert row.tflops == pytest.approx(2 * 4096**3 / 0.2e-3 / 1e12)  # 687.19 TFLOP/s
    assert row.pct_peak == pytest.approx(row.tflops / 10)
    assert row.notes == [f"task changed since the trace (stale -> {t.hash})"]


def test_totals_shortfalls_and_files_from_the_cli(tmp_path):
    _vector_add_trace(tmp_path / "t" / "va.jsonl")
    t = load_task("gemm_fp16")
    gemm = [("benchmark", "a", _verdict(t, "a", ms=0.2, eager_ms=0.19, compile_ms=0.2))]
    _trace(tmp_path / "t" / "g.jsonl", "gemm_fp16", gemm, end=None)
    out, js = tmp_path / "r" / "corpus.md", tmp_path / "r" / "corpus.json"
    args = ["traces", "report", str(tmp_path / "t"), "--out", str(out), "--json", str(js)]
    res = CliRunner().invoke(main, [*args, "--copy-bandwidth-gbs", "4000"])
    assert res.exit_code == 0, res.output
    data = json.loads(js.read_text())
    assert data["copy_bandwidth_gbs"] == 4000 and data["peak_tflops"] == 790
    assert data["gpus"] == ["NVIDIA H200"] and data["agents"] == ["external/test-agent"]
    assert data["versions"] == {"torch": ["2.11.0"], "triton": ["3.6.0"]}
    assert data["totals"] == {
        "tasks": 2,
        "solved": 1,
        "with_repaired_failure": 1,
        "at_least_eager": 1,
        "memory_bound": 1,
        "memory_bound_at_80pct_copy": 1,  # 3221 GB/s is 80.5% of 4000
        "gemm": 1,
        "gemm_within_1.2x_matmul": 1,  # 0.95x >= 1 / 1.2
    }
    assert data["shortfalls"] == [
        "gemm_fp16: not solved (no run_end); slower than eager (0.950x) (attempts: PASS 0.95x)"
    ]
    md = out.read_text()
    assert f"`upskills traces report {tmp_path / 't'} --out {out} --json {js}" in md
    assert "copy bandwidth 4000 GB/s" in md and "NVIDIA H200" in md
    row = "| vector_add | elementwise | 3 | FAIL mismatch -> PASS 1.20x -> PASS 2.40x | 1 |"
    assert row + " k3 (submit) | 0.2500 | 2.40x | 1.50x | 3221 GB/s | 81% copy |" in md
    assert "687 TFLOP/s | 87% peak |" in md
    assert "- Tasks solved: 1/2" in md


def test_a_trace_without_run_start_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    with TraceWriter(path) as w:
        w.write(Note(trace_id=w.trace_id, text="no start"))
    with pytest.raises(ValueError, match="bad.jsonl: no run_start"):
        build_corpus_report([path], "cmd")
    res = CliRunner().invoke(main, ["traces", "report", str(path), "--out", str(tmp_path / "x")])
    assert res.exit_code != 0 and "no run_start" in res.output
