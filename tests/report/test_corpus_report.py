import json
import math

import pytest
from click.testing import CliRunner

from upskills._cli.main import main
from upskills.report.corpus import (
    CorpusCeilings,
    CorpusReport,
    build_corpus_report,
    task_row,
    task_work,
)
from upskills.report.corpus_ceilings import CopyAtSize, CopyBySize, corpus_ceilings
from upskills.report.corpus_markdown import render_corpus_markdown
from upskills.report.corpus_plot import plotted_rows
from upskills.tasks import load_task
from upskills.tasks.model import Task
from upskills.trace import TraceWriter, read_trace
from upskills.trace.events import Note, RunEnd, RunStart, ToolCall, ToolResult
from upskills.verify.verdict import ErrorClass, Timing, Verdict

START_ENV = {"gpu": "unknown", "torch": "2.13.0+cpu", "triton": "3.9.0"}
"""run_start environment: the machine that drove the session, not the one that judged."""
JUDGE_ENV = {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "triton": "3.6.0", "cuda": "13.0"}
"""Verdict environment: the machine that judged."""
CUDA_SRC = "from torch.utils.cpp_extension import load_inline\nload_inline(cuda_sources='')\n"
TRITON_SRC = "import triton\n\n@triton.jit\ndef k():\n    pass\n"

RELU_SOURCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
"""
KB_RELU = Task(
    name="19_ReLU",
    statement="ReLU (float32)",
    tags=["elementwise"],
    dtypes=["float32"],
    source=RELU_SOURCE,
    origin=".kb/KernelBench/level1/19_ReLU.py",
)
"""A KernelBench task that ``load_task`` cannot resolve by name: only state.json has it."""


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, mean_ms=ms, reps=100, spread=0.0)


def _verdict(task, kernel, error=None, ms=None, eager_ms=None, compile_ms=None, env=None):
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
        env=JUDGE_ENV if env is None else env,
    )


def _trace(path, task, steps, end="solved", task_hash=None, ts=None, state=False, best=None):
    """Write a trace; each step is (tool, kernel hash, verdict or None[, kernel source]).

    ``state=True`` writes it as a session folder: ``path`` is the folder, the trace its
    ``trace.jsonl`` beside a ``state.json`` that embeds ``task``. ``best``: the kernel hash the
    run_end names as the session's best (its source: ``"# kernel <hash>"``).
    """
    if state:
        path.mkdir(parents=True)
        (path / "state.json").write_text(json.dumps({"task": task.model_dump()}))
        path = path / "trace.jsonl"
    with TraceWriter(path) as w:
        tid = w.trace_id
        w.write(
            RunStart(
                trace_id=tid,
                task=task.name,
                task_hash=task_hash or task.hash,
                agent_role="external",
                agent_name="test-agent",
                environment=START_ENV,
                **({"ts": ts} if ts else {}),
            )
        )
        w.write(Note(trace_id=tid, text="plan"))
        for i, (tool, kernel, verdict, *source) in enumerate(steps):
            w.write(ToolCall(trace_id=tid, tool_name=tool, call_id=str(i)))
            w.write(
                ToolResult(
                    trace_id=tid,
                    tool_name=tool,
                    call_id=str(i),
                    kernel_hash=kernel,
                    kernel_source=source[0] if source else None,
                    verdict=verdict,
                )
            )
        if end:
            source = f"# kernel {best}" if best else None
            w.write(
                RunEnd(trace_id=tid, outcome=end, best_kernel_hash=best, best_kernel_source=source)
            )
    return path


def _vector_add_trace(path):
    t = load_task("vector_add")
    return _trace(
        path,
        t,
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
    row = task_row([read_trace(_vector_add_trace(tmp_path / "va.jsonl"))])
    assert row.attempts == 3 and row.sessions == 1 and row.origin == "builtin"
    assert row.history == [["FAIL mismatch", "PASS 1.20x", "PASS 2.40x"]]
    assert (row.repaired_failures, row.unchanged_failures) == (1, 0)
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
    path = _trace(tmp_path / "g.jsonl", t, steps, end="budget", task_hash="stale")
    row = task_row([read_trace(path)], peak_tflops=1000.0)
    assert row.history == [["PASS 0.95x", "PASS 0.47x", "FAIL compile"]]
    assert row.repaired_failures == 0 and row.outcome == "budget"
    assert (row.final_kernel, row.final_from) == ("a", "best")
    assert row.bound == "compute" and row.gbs is None
    assert row.tflops == pytest.approx(2 * 4096**3 / 0.2e-3 / 1e12)  # 687.19 TFLOP/s
    assert row.pct_peak == pytest.approx(row.tflops / 10)
    assert row.notes == [f"task changed since the trace (stale -> {t.hash})"]


def test_sessions_of_one_task_are_one_row_and_a_rejected_kernel_passed_unchanged(tmp_path):
    t = load_task("vector_add")
    # The folder that sorts first started second: sessions are ordered by run_start time.
    second = [
        ("check", "k1", _verdict(t, "k1")),
        ("benchmark", "k1", _verdict(t, "k1", ms=0.3, eager_ms=0.6, compile_ms=0.4)),
        ("submit", "k1", _verdict(t, "k1", ms=0.25, eager_ms=0.6, compile_ms=0.5)),
    ]
    first = [
        ("check", "k1", _verdict(t, "k1")),
        ("benchmark", "k1", _verdict(t, "k1", ms=0.5, eager_ms=0.6, compile_ms=0.4)),
        ("submit", "k1", _verdict(t, "k1", ErrorClass.GUARD)),  # the verifier's bug
    ]
    _trace(tmp_path / "c" / "a-s2", t, second, ts="2026-11-30T21:00:00+00:00", state=True)
    _trace(tmp_path / "c" / "b", t, first, "unsolved", ts="2026-11-30T20:00:00+00:00", state=True)
    rep = build_corpus_report([tmp_path / "c"], "cmd")
    assert len(rep.rows) == 1 and rep.totals["tasks"] == 1 and rep.totals["sessions"] == 2
    row = rep.rows[0]
    assert [p.split("/")[-2] for p in row.traces] == ["b", "a-s2"]
    assert row.history == [["FAIL guard"], ["PASS 2.40x"]]
    assert (row.outcome, row.session_outcomes) == ("solved", ["unsolved", "solved"])
    assert (row.repaired_failures, row.unchanged_failures, row.attempts) == (0, 1, 1)
    assert (row.final_kernel, row.final_from, row.median_ms) == ("k1", "submit", 0.25)
    assert row.speedup_compile == pytest.approx(2.0)
    assert row.notes == [
        "session 1, submit: FAIL guard of k1, failed then passed unchanged: not the kernel's fault"
    ]
    assert rep.totals["solved"] == 1 and rep.totals["with_unchanged_failure"] == 1
    assert rep.totals["with_repaired_failure"] == 0
    # 805306368 bytes / 0.25 ms = 3221 GB/s = 74.9% of 4300; history keeps the sessions apart
    assert rep.shortfalls == [
        "vector_add: 74.9% of copy bandwidth (attempts: FAIL guard | PASS 2.40x)"
    ]


def test_a_failure_is_cleared_only_by_a_pass_as_far_along(tmp_path):
    t = load_task("vector_add")
    steps = [
        ("benchmark", "k1", _verdict(t, "k1", ms=0.5, eager_ms=0.6, compile_ms=0.4)),
        ("submit", "k1", _verdict(t, "k1", ErrorClass.GUARD)),
    ]
    a = _trace(tmp_path / "a.jsonl", t, steps, "unsolved", ts="2026-11-30T20:00:00+00:00")
    again = [("check", "k1", _verdict(t, "k1")), ("write_kernel", "k2", None)]
    b = _trace(tmp_path / "b.jsonl", t, again, None, ts="2026-11-30T21:00:00+00:00")
    row = task_row([read_trace(a), read_trace(b)])
    assert row.history == [["FAIL guard"], ["PASS", "UNCHECKED"]]
    assert (row.unchanged_failures, row.repaired_failures) == (0, 0)  # a check is not a submit
    assert (row.outcome, row.final_from, row.final_kernel) == (None, "best", "k1")
    # a kernel that failed a benchmark and passed the next one, in one session
    flaky = [
        ("benchmark", "k1", _verdict(t, "k1", ErrorClass.GUARD)),
        ("benchmark", "k1", _verdict(t, "k1", ms=0.3, eager_ms=0.6, compile_ms=0.4)),
    ]
    row = task_row([read_trace(_trace(tmp_path / "c.jsonl", t, flaky))])
    assert row.history == [["FAIL guard, then PASS 2.00x"]]
    assert (row.unchanged_failures, row.repaired_failures) == (1, 0)
    # another kernel passing after a failure in an earlier session is a repair
    broken = [("check", "k1", _verdict(t, "k1", ErrorClass.MISMATCH))]
    fixed = [("check", "k2", _verdict(t, "k2"))]
    d = _trace(tmp_path / "d.jsonl", t, broken, "unsolved", ts="2026-11-30T20:00:00+00:00")
    e = _trace(tmp_path / "e.jsonl", t, fixed, "solved", ts="2026-11-30T21:00:00+00:00")
    row = task_row([read_trace(d), read_trace(e)])
    assert (row.unchanged_failures, row.repaired_failures) == (0, 1)


def test_a_kernelbench_task_is_sized_from_the_state_json(tmp_path):
    with pytest.raises(Exception):  # noqa: B017 - any failure: the name alone does not resolve
        load_task("19_ReLU")
    steps = [("submit", "r", _verdict(KB_RELU, "r", ms=0.001, eager_ms=0.002, compile_ms=0.001))]
    path = _trace(tmp_path / "kb1_19_relu", KB_RELU, steps, state=True)
    row = task_row([read_trace(path)])
    assert (row.task, row.origin, row.tags, row.bound) == (
        "19_ReLU", "kernelbench", ["elementwise"], "memory"
    )  # fmt: skip
    assert row.bytes == 2 * 16 * 1024 * 4 and row.flops is None  # x read, out written, fp32
    assert row.gbs == pytest.approx(131072 / 1e-6 / 1e9)  # 131.072 GB/s
    assert row.notes == []
    # a state.json without a valid task is reported, and the name is tried instead
    (tmp_path / "kb1_19_relu" / "state.json").write_text('{"task": {"name": "19_ReLU"}}')
    row = task_row([read_trace(path)])
    assert row.bytes is None and row.origin is None
    assert "no valid embedded task" in row.notes[0] and "task not loadable" in row.notes[1]


def test_geomeans_over_solved_tasks_by_language_and_origin(tmp_path):
    va, sm, gemm = load_task("vector_add"), load_task("softmax_rows"), load_task("gemm_fp16")

    def solved(task, eager, compiled, source):
        v = _verdict(task, "k", ms=1.0, eager_ms=eager, compile_ms=compiled)
        return [("submit", "k", v, source)]

    _trace(tmp_path / "c" / "va.jsonl", va, solved(va, 2.0, 0.5, CUDA_SRC))
    _trace(tmp_path / "c" / "sm.jsonl", sm, solved(sm, 4.0, 2.0, TRITON_SRC))
    _trace(tmp_path / "c" / "kb", KB_RELU, solved(KB_RELU, 0.5, 1.0, TRITON_SRC), state=True)
    # unsolved: its 100x must not count
    _trace(tmp_path / "c" / "g.jsonl", gemm, solved(gemm, 100.0, 100.0, CUDA_SRC), "budget")
    rep = build_corpus_report([tmp_path / "c"], "cmd")
    got = {(g.by, g.group): (g.tasks, g.vs_eager, g.vs_compile) for g in rep.geomeans}
    assert got == {
        ("all", "all"): (3, pytest.approx(4 ** (1 / 3)), pytest.approx(1.0)),  # (2*4*0.5)^(1/3)
        ("language", "cuda"): (1, pytest.approx(2.0), pytest.approx(0.5)),
        ("language", "triton"): (2, pytest.approx(math.sqrt(2)), pytest.approx(math.sqrt(2))),
        ("origin", "builtin"): (2, pytest.approx(math.sqrt(8)), pytest.approx(1.0)),
        ("origin", "kernelbench"): (1, pytest.approx(0.5), pytest.approx(1.0)),
    }
    assert [r.language for r in rep.rows] == ["cuda", "triton", "triton", "cuda"]  # g, kb, sm, va
    from upskills.report.corpus_markdown import render_corpus_markdown

    md = render_corpus_markdown(rep)
    assert "final kernels: 1.59x vs eager, 1.00x vs torch.compile (3 tasks)" in md
    assert "  - language triton: 1.41x vs eager, 1.41x vs torch.compile (2 tasks)" in md
    assert "  - origin kernelbench: 0.50x vs eager, 1.00x vs torch.compile (1 tasks)" in md


def test_the_environment_is_the_verdicts_not_run_start(tmp_path):
    t = load_task("vector_add")
    other = {"gpu": "NVIDIA H100", "torch": "2.10.0+cu128", "triton": "3.5.0", "cuda": "12.8"}
    steps = [
        ("check", "k", _verdict(t, "k")),
        ("benchmark", "k", _verdict(t, "k", ms=1.0, eager_ms=1.0, compile_ms=1.0)),
        ("check", "j", _verdict(t, "j", env=other)),
    ]
    rep = build_corpus_report([_trace(tmp_path / "t.jsonl", t, steps)], "cmd")
    envs = [e.model_dump() for e in rep.environments]
    assert envs == [{**other, "verdicts": 1}, {**JUDGE_ENV, "verdicts": 2}]
    from upskills.report.corpus_markdown import render_corpus_markdown

    md = render_corpus_markdown(rep)
    assert (
        "- Judged on: NVIDIA H100, torch 2.10.0+cu128, triton 3.5.0, CUDA 12.8 (1 verdicts); "
        "NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0, CUDA 13.0 (2 verdicts)"
    ) in md
    assert "2.13.0+cpu" not in md and "3.9.0" not in md


def _ceilings_file(path, **extra):
    data = {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "copy_gb_per_s": 4000.0}
    path.write_text(json.dumps({**data, "copy_ms": 2.0, **extra}))
    return path


def test_ceilings_come_from_a_file_and_flags_override_them(tmp_path):
    f = _ceilings_file(
        tmp_path / "ceil.json", matmul_float16_tflops=500.0, matmul_bfloat16_tflops=600.0
    )
    got = corpus_ceilings(f)
    assert (got.copy_bandwidth_gbs, got.peak_tflops) == (4000.0, 500.0)  # fp16, not bf16
    assert (got.file, got.gpu, got.overridden) == (str(f), "NVIDIA H200", [])
    got = corpus_ceilings(f, peak_tflops=1000.0)
    assert (got.copy_bandwidth_gbs, got.peak_tflops, got.overridden) == (4000.0, 1000.0, ["peak"])
    assert corpus_ceilings().model_dump() == {
        "copy_bandwidth_gbs": 4300.0, "peak_tflops": 790.0, "file": None, "gpu": None,
        "overridden": [], "copy_by_size": None,
    }  # fmt: skip
    with pytest.raises(ValueError, match="no matmul_float16_tflops"):
        corpus_ceilings(_ceilings_file(tmp_path / "nofp16.json", matmul_bfloat16_tflops=600.0))
    with pytest.raises(ValueError, match="not a ceilings file"):
        corpus_ceilings(tmp_path / "missing.json")


MIB = 1 << 20


def test_a_copy_s_share_at_a_size_is_interpolated_in_log_bytes():
    by_size = CopyBySize(
        file="c.json",
        ceiling_gbs=3000.0,
        sizes=[
            CopyAtSize(bytes=32 * MIB, gb_per_s=2000.0),
            CopyAtSize(bytes=128 * MIB, gb_per_s=2800.0),
        ],
    )
    assert by_size.share_at(16 * MIB) is None  # below the smallest copy: not said
    assert by_size.share_at(32 * MIB) == pytest.approx(2000 / 3000)
    assert by_size.share_at(64 * MIB) == pytest.approx(2400 / 3000)  # halfway in log(bytes)
    assert by_size.share_at(1 << 40) == pytest.approx(2800 / 3000)  # above: the largest's


def test_the_copy_by_size_comes_from_a_ceilings_file_of_the_same_gpu(tmp_path):
    sizes = [{"bytes": 256 * MIB, "median_ms": 0.1, "gb_per_s": 3000.0}]
    own = _ceilings_file(tmp_path / "own.json", matmul_float16_tflops=700.0, copy_by_size=sizes)
    got = corpus_ceilings(own)
    assert got.copy_by_size is not None and got.copy_by_size.ceiling_gbs == 4000.0
    assert got.copy_by_size.share_at(256 * MIB) == pytest.approx(0.75)
    plain = _ceilings_file(tmp_path / "plain.json", matmul_float16_tflops=700.0)
    assert corpus_ceilings(plain).copy_by_size is None
    later = _ceilings_file(tmp_path / "later.json", copy_by_size=sizes)
    assert corpus_ceilings(plain, copy_by_size_file=later).copy_by_size is not None
    with pytest.raises(ValueError, match="no copy_by_size"):
        corpus_ceilings(plain, copy_by_size_file=plain)
    h100 = tmp_path / "h100.json"
    h100.write_text(
        json.dumps({"gpu": "NVIDIA H100", "copy_gb_per_s": 3000.0, "copy_by_size": sizes})
    )
    with pytest.raises(
        ValueError, match="its copies ran on NVIDIA H100, the ceilings on NVIDIA H200"
    ):
        corpus_ceilings(plain, copy_by_size_file=h100)
    bad = _ceilings_file(tmp_path / "bad.json", copy_by_size=[{"bytes": -1, "gb_per_s": 1.0}])
    with pytest.raises(ValueError, match="malformed copy_by_size"):
        corpus_ceilings(plain, copy_by_size_file=bad)


def test_a_memory_bound_shortfall_says_its_share_of_a_copy_of_its_own_bytes(tmp_path, monkeypatch):
    monkeypatch.delenv("UPSKILLS_CEILINGS", raising=False)
    monkeypatch.chdir(tmp_path)
    _vector_add_trace(tmp_path / "t" / "va.jsonl")  # 3 x 2^26 fp32, 805.3 MB in 0.25 ms
    _ceilings_file(tmp_path / "ceil.json", matmul_float16_tflops=790.0)
    sizes = [
        {"bytes": 256 * MIB, "median_ms": 0.1, "gb_per_s": 3000.0},
        {"bytes": 1024 * MIB, "median_ms": 0.3, "gb_per_s": 3600.0},
    ]
    _ceilings_file(tmp_path / "sizes.json", copy_by_size=sizes)
    args = ["traces", "report", "t", "--ceilings", "ceil.json", "--copy-by-size", "sizes.json"]
    res = CliRunner().invoke(main, [*args, "--out", "r.md", "--json", "r.json"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "r.json").read_text())
    row = data["rows"][0]
    assert row["bytes"] == 3 * (1 << 26) * 4
    pct = 100 * row["bytes"] / 0.25e-3 / 1e9 / 4000  # 80.5% of the large copy
    share = (3000 + math.log(3) / math.log(4) * 600) / 4000  # 768 MiB: between the two copies
    assert row["pct_copy"] == pytest.approx(pct)
    assert row["pct_copy_at_size"] == pytest.approx(pct / share)  # 92.7%
    totals = data["totals"]
    assert totals["memory_bound_at_85pct_copy"] == 0  # the bar is unchanged
    assert (totals["memory_bound_sized"], totals["memory_bound_at_85pct_copy_at_size"]) == (1, 1)
    assert data["shortfalls"] == [
        "vector_add: 80.5% of copy bandwidth (92.7% of a copy of its own 805 MB) "
        "(attempts: FAIL mismatch -> PASS 1.20x -> PASS 2.40x)"
    ]
    md = (tmp_path / "r.md").read_text()
    assert "--copy-by-size sizes.json" in md
    assert "A copy at 2 sizes from `sizes.json`" in md
    assert "- Memory-bound at >= 85% of a copy of their own bytes (same timer): 1/1" in md


def test_a_gemm_below_the_issue_bar_is_a_shortfall(tmp_path):
    t = load_task("gemm_fp16")
    slow = [("submit", "a", _verdict(t, "a", ms=0.2, eager_ms=0.17, compile_ms=0.17))]
    _trace(tmp_path / "t" / "g.jsonl", t, slow)
    rep = build_corpus_report([tmp_path / "t"], "cmd")
    assert rep.totals["gemm"] == 1 and rep.totals["gemm_at_0.9x_matmul"] == 0  # 0.85x < 0.9
    assert "GEMM below 0.9x torch.matmul" in rep.shortfalls[0]


def test_totals_shortfalls_and_files_from_the_cli(tmp_path, monkeypatch):
    monkeypatch.delenv("UPSKILLS_CEILINGS", raising=False)
    monkeypatch.chdir(tmp_path)
    _vector_add_trace(tmp_path / "t" / "va.jsonl")
    t = load_task("gemm_fp16")
    gemm = [("benchmark", "a", _verdict(t, "a", ms=0.2, eager_ms=0.19, compile_ms=0.2))]
    _trace(tmp_path / "t" / "g.jsonl", t, gemm, end=None)
    _ceilings_file(tmp_path / "ceil.json", matmul_float16_tflops=790.0)
    args = ["traces", "report", "t", "--out", "r/corpus.md", "--json", "r/corpus.json"]
    res = CliRunner().invoke(main, [*args, "--ceilings", "ceil.json"])
    assert res.exit_code == 0, res.output
    assert "1/2 tasks solved (2 sessions)" in res.output
    data = json.loads((tmp_path / "r" / "corpus.json").read_text())
    assert data["ceilings"] == {
        "copy_bandwidth_gbs": 4000.0, "peak_tflops": 790.0, "file": "ceil.json",
        "gpu": "NVIDIA H200", "overridden": [], "copy_by_size": None,
    }  # fmt: skip
    assert data["agents"] == ["external/test-agent"]
    assert data["totals"] == {
        "tasks": 2,
        "sessions": 2,
        "solved": 1,
        "with_repaired_failure": 1,
        "with_unchanged_failure": 0,
        "solved_at_least_eager": 1,
        "solved_at_least_compile": 1,
        "memory_bound": 1,
        "memory_bound_at_85pct_copy": 0,  # 3221 GB/s is 80.5% of 4000
        "gemm": 1,
        "gemm_at_0.9x_matmul": 1,  # 0.95x >= 0.9
        "final_times_from_recheck": 0,
        "recheck_with_ratio": 0,
        "recheck_within_tolerance": 0,
    }
    assert data["shortfalls"] == [
        "gemm_fp16: not solved (no run_end); slower than eager (0.950x) (attempts: PASS 0.95x)",
        # 80.5% of copy: below the 85% bar
        "vector_add: 80.5% of copy bandwidth (attempts: FAIL mismatch -> PASS 1.20x -> PASS 2.40x)",
    ]
    md = (tmp_path / "r" / "corpus.md").read_text()
    cmd = "upskills traces report t --ceilings ceil.json --out r/corpus.md --json r/corpus.json`"
    assert f"- Command: `{cmd}" in md
    assert "copy bandwidth 4000 GB/s" in md and "from `ceil.json`, measured on NVIDIA H200." in md
    row = "| vector_add | builtin | - | elementwise | 1 | 3 "
    row += "| FAIL mismatch -> PASS 1.20x -> PASS 2.40x | 1 / 0 |"
    assert row + " k3 (submit) | 0.2500 | 2.40x | 1.50x | 3221 GB/s | 81% copy |" in md
    assert "687 TFLOP/s | 87% peak |" in md
    assert "- Tasks solved: 1/2 (2 sessions)" in md
    # the plot beside it: the solved task only (gemm_fp16 has no run_end), linked from the text
    assert (tmp_path / "r" / "corpus.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](corpus.png)" in md
    report = CorpusReport.model_validate(data)
    assert [r.task for r in plotted_rows(report)] == ["vector_add"]
    # an override is recorded on the command line and named in the header
    res = CliRunner().invoke(main, [*args, "--ceilings", "ceil.json", "--peak-tflops", "1000"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "r" / "corpus.md").read_text()
    assert "--json r/corpus.json --peak-tflops 1000`" in md and "peak overridden" in md
    assert "687 TFLOP/s | 69% peak |" in md
    # without a file the built-in ceilings are used and recorded
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    md = (tmp_path / "r" / "corpus.md").read_text()
    assert "--copy-bandwidth-gbs 4300 --peak-tflops 790`" in md and "built-in values" in md
    res = CliRunner().invoke(main, [*args, "--ceilings", "missing.json"])
    assert res.exit_code != 0 and "not a ceilings file" in res.output


def test_a_trace_without_run_start_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    with TraceWriter(path) as w:
        w.write(Note(trace_id=w.trace_id, text="no start"))
    with pytest.raises(ValueError, match="bad.jsonl: no run_start"):
        build_corpus_report([path], "cmd")
    res = CliRunner().invoke(main, ["traces", "report", str(path), "--out", str(tmp_path / "x")])
    assert res.exit_code != 0 and "no run_start" in res.output


def _recheck_file(path, *rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_recheck_gives_the_final_kernel_its_times(tmp_path, monkeypatch):
    monkeypatch.delenv("UPSKILLS_CEILINGS", raising=False)
    _vector_add_trace(tmp_path / "t" / "va.jsonl")
    again = {"candidate_hash": "k3", "passed": True, "median_ms": 0.2, "speedup": 3.0}
    rows = _recheck_file(
        tmp_path / "re.jsonl",
        {"session": "old", "passed": True, "median_ms": 0.01},  # no hash: never attributed
        {"candidate_hash": "k2", "passed": True, "median_ms": 0.1, "speedup": 6.0},  # not final
        again | {"speedup_compile": 1.875, "gpu": "NVIDIA H200"},
    )
    rep = build_corpus_report([tmp_path / "t"], "cmd", recheck_files=[rows])
    (row,) = rep.rows
    assert (row.final_kernel, row.times_from, row.median_ms) == ("k3", "recheck", 0.2)
    assert (row.speedup_eager, row.speedup_compile) == (3.0, 1.875)
    assert row.gbs == pytest.approx(805306368 / 0.2e-3 / 1e9)
    assert rep.totals["final_times_from_recheck"] == 1
    md = render_corpus_markdown(rep)
    assert "- Kernel times: 1 of 1 final kernels from their re-check in `" in md
    assert "| k3 (submit, re-check) | 0.2000 | 3.00x | 1.88x |" in md
    # a re-check that failed keeps the trace's times and says so
    failed = _recheck_file(tmp_path / "f.jsonl", {"candidate_hash": "k3", "passed": False})
    (row,) = build_corpus_report([tmp_path / "t"], "cmd", recheck_files=[failed]).rows
    assert (row.times_from, row.median_ms) == ("trace", 0.25)
    assert row.notes == ["the re-check of k3 did not pass: trace times kept"]
    refused = _recheck_file(
        tmp_path / "g.jsonl", {"candidate_hash": "k3", "passed": False, "guard": "timed_result"}
    )
    (row,) = build_corpus_report([tmp_path / "t"], "cmd", recheck_files=[refused]).rows
    assert row.notes == ["the re-check of k3 did not pass (guard timed_result): trace times kept"]
    # two files: the last one's row for a kernel wins
    (row,) = build_corpus_report([tmp_path / "t"], "cmd", recheck_files=[failed, rows]).rows
    assert (row.times_from, row.median_ms) == ("recheck", 0.2)
    # a re-check on another GPU than the ceilings' is said
    other = _recheck_file(tmp_path / "o.jsonl", again | {"gpu": "NVIDIA A100"})
    ceilings = CorpusCeilings(gpu="NVIDIA H200")
    (row,) = build_corpus_report([tmp_path / "t"], "cmd", ceilings, [other]).rows
    assert row.notes[-1] == "re-checked on NVIDIA A100, ceilings measured on NVIDIA H200"
    # without a re-check file, nothing changes and the header does not mention one
    rep = build_corpus_report([tmp_path / "t"], "cmd")
    assert rep.rows[0].times_from == "trace" and "Kernel times" not in render_corpus_markdown(rep)


def test_the_report_counts_rechecks_that_reproduce_the_recorded_speedup(tmp_path, monkeypatch):
    monkeypatch.delenv("UPSKILLS_CEILINGS", raising=False)
    _vector_add_trace(tmp_path / "t" / "va.jsonl")
    base = {"candidate_hash": "k3", "passed": True, "median_ms": 0.2, "speedup": 3.0}

    def report(folder="t", **row):  # noqa: ANN001, ANN003, ANN202 - a re-check row's fields
        f = _recheck_file(tmp_path / "re.jsonl", base | row)
        return build_corpus_report([tmp_path / folder], "cmd", recheck_files=[f])

    close = report(ratio=1.04)
    assert close.rows[0].recheck_ratio == 1.04
    assert (close.totals["recheck_with_ratio"], close.totals["recheck_within_tolerance"]) == (1, 1)
    line = "- Re-checked within 5% of the recorded speedup: 1/1 with a recorded speedup, of 1"
    assert line + " re-checked\n" in render_corpus_markdown(close)
    far = report(ratio=1.136)
    assert far.totals["recheck_within_tolerance"] == 0
    assert "0/1 with a recorded speedup, of 1 re-checked (outside: vector_add 1.136)" in (
        render_corpus_markdown(far)
    )
    # outside the tolerance, a note gives the recorded benchmark verdicts' times and spreads
    (note,) = [n for n in far.rows[0].notes if n.startswith("re-check ")]
    assert note == (
        "re-check 1.136 of the recorded speedup, re-checked at 0.2 ms; "
        "the kernel's benchmark verdicts: 2x at 0.3 ms, spread 0.00"
    )
    assert not [n for n in close.rows[0].notes if n.startswith("re-check ")]
    # the re-check's row has no ratio (its session never benchmarked the kernel): the report
    # compares with the kernel's benchmark verdict in the traces (k3: 2.0x)
    other = report()
    assert other.rows[0].recheck_ratio == 1.5 and other.totals["recheck_with_ratio"] == 1
    assert any("benchmark verdict in another session (2x)" in n for n in other.rows[0].notes)
    # no benchmark verdict of the kernel anywhere: nothing to compare
    t = load_task("vector_add")
    _trace(
        tmp_path / "u" / "va.jsonl",
        t,
        [("submit", "k3", _verdict(t, "k3", ms=0.25, eager_ms=0.6, compile_ms=0.375))],
    )
    unknown = report("u")
    assert unknown.totals["recheck_with_ratio"] == 0
    assert "(no recorded speedup to compare: vector_add)" in render_corpus_markdown(unknown)


def test_a_bad_recheck_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _vector_add_trace(tmp_path / "t" / "va.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"candidate_hash": "k3", "passed": true}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: bad re-check row"):
        build_corpus_report([tmp_path / "t"], "cmd", recheck_files=[bad])
    args = ["traces", "report", "t", "--out", "r.md", "--recheck"]
    res = CliRunner().invoke(main, [*args, "missing.jsonl"])
    assert res.exit_code != 0 and "cannot read re-check file" in res.output
    _recheck_file(tmp_path / "good.jsonl", {"candidate_hash": "k3", "passed": True})
    res = CliRunner().invoke(main, [*args, "good.jsonl", "--recheck", "good.jsonl"])
    assert res.exit_code == 0, res.output
    assert "--recheck good.jsonl --recheck good.jsonl --out r.md" in (tmp_path / "r.md").read_text()
    (tmp_path / "r.md").unlink()
    res = CliRunner().invoke(main, [*args, "bad.jsonl"])
    assert res.exit_code != 0 and "bad.jsonl:2: bad re-check row" in res.output
    assert not (tmp_path / "r.md").exists()


def test_the_recheck_times_the_final_kernel_the_report_shows(tmp_path):
    """recheck.py --finals re-checks the report's final kernel: the best *submitted* one, not the
    session whose benchmark verdict was best (the seventh session re-checked the wrong GEMM)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "corpus_live"))
    from recheck import finals, recorded_speedup  # pyright: ignore[reportMissingImports]

    t = load_task("gemm_fp16")
    v = lambda k, ms: _verdict(t, k, ms=ms, eager_ms=0.19, compile_ms=0.19)  # noqa: E731
    s2 = _trace(
        tmp_path / "gemm_fp16-s2",
        t,
        [("benchmark", "a", v("a", 0.2030)), ("submit", "a", v("a", 0.2035))],
        ts="2026-12-01T00:00:00+00:00",
        state=True,
        best="a",
    )
    s3 = _trace(
        tmp_path / "gemm_fp16-s3",
        t,
        [("benchmark", "b", v("b", 0.2071)), ("submit", "b", v("b", 0.1934))],
        ts="2026-12-01T01:00:00+00:00",
        state=True,
        best="b",
    )
    other = load_task("vector_add")
    _trace(
        tmp_path / "vector_add",
        other,
        [("submit", "c", _verdict(other, "c", ms=0.3, eager_ms=0.6, compile_ms=0.4))],
        state=True,
        best="c",
    )
    folders = sorted(p.parent for p in tmp_path.glob("*/state.json"))
    report = build_corpus_report([f / "trace.jsonl" for f in folders], command="test")
    assert {r.task: r.final_kernel for r in report.rows} == {"gemm_fp16": "b", "vector_add": "c"}
    assert [f.name for f in finals(folders)] == ["gemm_fp16-s3", "vector_add"]
    # what the re-check compares with: the final kernel's benchmark verdict, not its submission
    assert recorded_speedup(read_trace(s3)) == pytest.approx(0.19 / 0.2071, rel=1e-3)
    assert recorded_speedup(read_trace(s2)) == pytest.approx(0.19 / 0.2030, rel=1e-3)
    # the same kernel timed again in a later session (gemm_fp16-s5: s3's kernel after the
    # timer's mend): the report shows its latest submission, so the re-check takes that session
    # and its benchmark, not s3's older one
    s5 = _trace(
        tmp_path / "gemm_fp16-s5",
        t,
        [("benchmark", "b", v("b", 0.1846)), ("submit", "b", v("b", 0.1845))],
        ts="2026-12-01T02:00:00+00:00",
        state=True,
        best="b",
    )
    folders = sorted(p.parent for p in tmp_path.glob("*/state.json"))
    report = build_corpus_report([f / "trace.jsonl" for f in folders], command="test")
    gemm = next(r for r in report.rows if r.task == "gemm_fp16")
    assert (gemm.final_kernel, gemm.median_ms) == ("b", pytest.approx(0.1845))
    assert [f.name for f in finals(folders)] == ["gemm_fp16-s5", "vector_add"]
    assert recorded_speedup(read_trace(s5)) == pytest.approx(0.19 / 0.1846, rel=1e-3)


def test_a_recheck_without_a_ratio_is_compared_with_the_latest_benchmark():
    """Of a kernel's benchmark verdicts, the latest is its record (the report shows its latest
    submission): an earlier verdict from before a mend of the timer does not decide."""
    from upskills.report.corpus import TaskRow
    from upskills.report.corpus_recheck import Recheck, use_recheck

    t = load_task("gemm_fp16")
    old = _verdict(t, "b", ms=0.2071, eager_ms=0.19, compile_ms=0.19)
    new = _verdict(t, "b", ms=0.1846, eager_ms=0.19, compile_ms=0.19)
    recheck = Recheck(candidate_hash="b", passed=True, median_ms=0.1844, speedup=0.19 / 0.1844)
    row = TaskRow(task="gemm_fp16", task_hash=t.hash, final_kernel="b")
    use_recheck(row, recheck, None, [old, new])
    assert row.recheck_ratio == pytest.approx(0.1846 / 0.1844, rel=1e-3)
    assert not any("re-check 1." in n for n in row.notes)
    row = TaskRow(task="gemm_fp16", task_hash=t.hash, final_kernel="b")
    use_recheck(row, recheck, None, [new, old])  # given the other way round: old is latest
    assert row.recheck_ratio == pytest.approx(0.2071 / 0.1844, rel=1e-3)
    assert any("re-check 1.123 of the recorded speedup" in n for n in row.notes)


def test_a_recheck_after_another_flush_is_not_compared_with_the_recorded_speedup():
    """A re-check timed after a read flush measures another thing than the recorded verdict
    (timed after the write flush): its times are used, its ratio is not counted either way."""
    from upskills.report.corpus import TaskRow
    from upskills.report.corpus_recheck import Recheck, use_recheck

    t = load_task("gemm_fp16")
    recorded = _verdict(t, "b", ms=0.1846, eager_ms=0.19, compile_ms=0.19)
    assert recorded.timing is not None and recorded.timing.flush == "write"
    row = TaskRow(task="gemm_fp16", task_hash=t.hash, final_kernel="b")
    read = Recheck(
        candidate_hash="b", passed=True, median_ms=0.16, speedup=1.1, ratio=1.07, flush="read"
    )
    use_recheck(row, read, None, [recorded])
    assert row.recheck_ratio is None and row.median_ms == pytest.approx(0.16)
    assert any("not compared" in n for n in row.notes)
    row = TaskRow(task="gemm_fp16", task_hash=t.hash, final_kernel="b")
    use_recheck(row, read.model_copy(update={"flush": "write"}), None, [recorded])
    assert row.recheck_ratio == pytest.approx(1.07)  # the same method: compared


def test_a_recheck_compared_with_an_earlier_recheck_keeps_its_ratio():
    """A read-flush re-check compared (``recheck.py --recorded``) with an earlier read-flush
    re-check is a reproduction of like with like: its ratio counts, though the trace's verdict
    was timed after the write flush. Compared against a write-flush record, it does not."""
    from upskills.report.corpus import TaskRow
    from upskills.report.corpus_recheck import Recheck, use_recheck

    t = load_task("gemm_fp16")
    recorded = _verdict(t, "b", ms=0.1846, eager_ms=0.19, compile_ms=0.19)
    again = Recheck(
        candidate_hash="b",
        passed=True,
        median_ms=0.16,
        speedup=1.1,
        ratio=1.02,
        flush="read",
        recorded_from="recheck_run25_read.jsonl",
        recorded_flush="read",
    )
    row = TaskRow(task="gemm_fp16", task_hash=t.hash, final_kernel="b")
    use_recheck(row, again, None, [recorded])
    assert row.recheck_ratio == pytest.approx(1.02)
    assert any("recheck_run25_read.jsonl (read flush)" in n for n in row.notes)
    row = TaskRow(task="gemm_fp16", task_hash=t.hash, final_kernel="b")
    use_recheck(row, again.model_copy(update={"recorded_flush": "write"}), None, [recorded])
    assert row.recheck_ratio is None and any("not compared" in n for n in row.notes)


def test_without_matplotlib_the_report_says_the_plot_was_skipped(tmp_path, monkeypatch):
    import upskills.report.corpus as corpus

    monkeypatch.setattr(corpus, "plots_available", lambda: False)
    _vector_add_trace(tmp_path / "t" / "va.jsonl")
    corpus.write_corpus_report([tmp_path / "t"], tmp_path / "r.md")
    md = (tmp_path / "r.md").read_text()
    assert not (tmp_path / "r.png").exists() and "## Plot" not in md
    assert "plots skipped: matplotlib is not installed" in md


def test_a_corpus_with_nothing_solved_still_gets_a_plot(tmp_path):
    from upskills.report.corpus_plot import plot_corpus

    report = CorpusReport(command="upskills traces report t")
    assert plotted_rows(report) == []
    plot_corpus(report, tmp_path / "empty.png")
    assert (tmp_path / "empty.png").read_bytes()[:4] == b"\x89PNG"
