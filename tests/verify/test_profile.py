"""The profile analysis: bytes and FLOPs from meta builds, roofline arithmetic, ncu CSV, GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskills.tasks import load_task
from upskills.verify.profile import (
    CEILINGS_ENV,
    Ceilings,
    analyze,
    format_profile,
    load_ceilings,
    parse_ncu_csv,
    resolve_ceilings,
    task_work,
)
from upskills.verify.verdict import Timing

ROOT = Path(__file__).resolve().parents[2]
H200_CEILINGS = ROOT / "benchmarks" / "results" / "ceilings_h200.json"
# Test double: made-up ceilings and timings for the arithmetic, never a measurement.
FAKE_CEILINGS = Ceilings(
    gpu="fake", copy_gb_per_s=4000.0, matmul_float16_tflops=800.0, source="test double"
)


def fake_timing(median_ms: float) -> Timing:
    """A Timing test double (not measured)."""
    return Timing(
        median_ms=median_ms,
        p10_ms=median_ms,
        p90_ms=median_ms,
        mean_ms=median_ms,
        reps=1,
        spread=0.0,
    )


def test_vector_add_moves_three_vectors_and_counts_no_flops() -> None:
    work = task_work(load_task("vector_add"))
    n = 67108864
    assert work.bytes == 3 * n * 4
    assert work.flops == 0 and work.dtype == "float32" and work.variant == "main"


def test_gemm_fp16_counts_2mnk_flops_and_three_matrices() -> None:
    work = task_work(load_task("gemm_fp16"))
    m = n = k = 4096
    assert work.flops == 2 * m * n * k
    assert work.bytes == (m * k + k * n + m * n) * 2 and work.dtype == "float16"


def test_parameters_count_as_read_bytes() -> None:
    # gemm_bias_relu: x [M, K] input, weight [N, K] and bias [N] parameters, out [M, N]
    work = task_work(load_task("gemm_bias_relu"))
    m = n = k = 4096
    assert work.bytes == (m * k + n * k + n + m * n) * 2
    assert work.flops == 2 * m * n * k


def test_causal_attention_counts_half_and_says_so() -> None:
    work = task_work(load_task("causal_attention"))
    b, h, s, d = 4, 16, 4096, 64
    assert work.flops == 4 * b * h * s * s * d / 2
    assert any("causal" in note for note in work.notes)


def test_an_op_without_a_meta_kernel_falls_back_to_cpu_with_a_note() -> None:
    work = task_work(load_task("histogram"))
    assert work.bytes > 0 and any("no meta kernel" in note for note in work.notes)


def test_memory_bound_report_math() -> None:
    task = load_task("vector_add")
    work = task_work(task)
    rep = analyze(task, work, fake_timing(0.25), FAKE_CEILINGS, device="cuda", gpu="fake")
    assert rep.bound == "memory" and rep.compute_floor_ms is None
    assert rep.floor_ms == pytest.approx(work.bytes / 4000e9 * 1e3)
    assert rep.achieved_gbs == pytest.approx(work.bytes / 0.25e-3 / 1e9)
    assert rep.bandwidth_share == pytest.approx(rep.achieved_gbs / 4000.0)
    assert rep.achieved_tflops is None and rep.flops_share is None  # elementwise: no FLOP/s
    text = format_profile(rep)
    assert "memory-bound" in text and f"{100 * rep.bandwidth_share:.1f}% of copy" in text


def test_compute_bound_report_math() -> None:
    task = load_task("gemm_fp16")
    work = task_work(task)
    rep = analyze(task, work, fake_timing(0.5), FAKE_CEILINGS, device="cuda", gpu="fake")
    flops = 2 * 4096**3
    assert rep.bound == "compute"
    assert rep.compute_floor_ms == pytest.approx(flops / 800e12 * 1e3)
    assert rep.floor_ms == rep.compute_floor_ms > rep.memory_floor_ms  # type: ignore[operator]
    assert rep.achieved_tflops == pytest.approx(flops / 0.5e-3 / 1e12)
    assert rep.flops_share == pytest.approx(rep.achieved_tflops / 800.0)
    assert "compute-bound" in format_profile(rep)


def test_missing_dtype_ceiling_uses_half_precision_and_notes_it() -> None:
    task = load_task("conv2d_3x3")  # fp32
    rep = analyze(task, task_work(task), fake_timing(1.0), FAKE_CEILINGS, device="cuda")
    assert rep.matmul_tflops == 800.0 and any("optimistic" in n for n in rep.notes)


def test_untimed_report_has_floors_but_no_shares() -> None:
    task = load_task("vector_add")
    rep = analyze(task, task_work(task), None, FAKE_CEILINGS, device="cpu")
    assert rep.floor_ms is not None and rep.median_ms is None
    assert rep.achieved_gbs is None and rep.bandwidth_share is None


def test_ceilings_file_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = load_ceilings(H200_CEILINGS)
    assert shipped.copy_gb_per_s == 4200.2 and shipped.matmul_float16_tflops == 711.7
    assert shipped.source == str(H200_CEILINGS)
    monkeypatch.setenv(CEILINGS_ENV, str(H200_CEILINGS))
    got, notes = resolve_ceilings(None, "cuda", gpu="NVIDIA A100")
    assert got is not None and got.copy_gb_per_s == 4200.2
    assert notes and "NVIDIA H200" in notes[0]  # a file for another GPU is noted
    monkeypatch.delenv(CEILINGS_ENV)
    none, notes = resolve_ceilings(None, "cpu")
    assert none is None and CEILINGS_ENV in notes[0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"gpu": "x"}))
    with pytest.raises(ValueError, match="not a ceilings file"):
        load_ceilings(bad)


# Captured shape of `ncu --csv --metrics ...` output (ncu 2023+ "details" page): ncu's own
# ==PROF== lines and the program's output come first; the values are illustrative.
NCU_HEADER = (
    "ID,Process ID,Process Name,Host Name,Kernel Name,Context,Stream,Block Size,Grid Size,"
    "Device,CC,Section Name,Metric Name,Metric Unit,Metric Value"
).split(",")
_KERNEL = ["4242", "python3.12", "127.0.0.1", "add_kernel", "1", "7", "(128, 1, 1)"]
_KERNEL += ["(65536, 1, 1)", "0", "9.0", "Command line profiler metrics"]
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
NCU_ROWS = [
    ("0", "gpu__time_duration.sum", "usecond", "300.00"),
    ("0", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "90.00"),
    ("0", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "10.00"),
    ("0", "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "80.00"),
    ("0", STALL.format("long_scoreboard"), "inst", "20.00"),
    ("0", STALL.format("wait"), "inst", "2.00"),
    ("0", "launch__registers_per_thread", "register/thread", "1,024"),
    ("0", "dram__bytes_read.sum", "byte", "268,435,456"),
    ("0", "dram__bytes_write.sum", "byte", "134,217,728"),
    ("0", "lts__t_sector_hit_rate.pct", "%", "10.00"),
    ("1", "gpu__time_duration.sum", "msecond", "0.10"),
    ("1", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "50.00"),
    ("1", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "30.00"),
    ("1", "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "40.00"),
    ("1", STALL.format("long_scoreboard"), "inst", "4.00"),
    ("1", STALL.format("barrier"), "inst", "8.00"),
    ("1", "dram__bytes_read.sum", "Mbyte", "1.50"),
    ("1", "dram__bytes_write.sum", "Kbyte", "500.00"),
    ("1", "lts__t_sector_hit_rate.pct", "%", "90.00"),
]
NCU_CSV = "\n".join(
    [
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
        '==PROF== Profiling "add_kernel" - 0: 0%....50%....100% - 9 passes',
        '==PROF== Profiling "add_kernel" - 1: 0%....50%....100% - 9 passes',
        "==PROF== Disconnected from process 4242",
        ",".join(f'"{h}"' for h in NCU_HEADER),
        *(",".join(f'"{v}"' for v in [i, *_KERNEL, m, u, x]) for i, m, u, x in NCU_ROWS),
    ]
)


def test_ncu_csv_is_summarised_weighted_by_kernel_time() -> None:
    got = parse_ncu_csv(NCU_CSV)
    # kernel 0 runs 300 us, kernel 1 100 us (msecond converted): weights 3:1
    assert [k["duration_us"] for k in got["kernels"]] == [300.0, 100.0]
    assert got["duration_us"] == 400.0
    assert got["memory_throughput_pct"] == pytest.approx((3 * 90 + 50) / 4)
    assert got["compute_throughput_pct"] == pytest.approx((3 * 10 + 30) / 4)
    assert got["achieved_occupancy_pct"] == pytest.approx((3 * 80 + 40) / 4)
    assert got["registers_per_thread"] == 1024.0  # "1,024": thousands separator
    stalls = [s["reason"] for s in got["top_stalls"]]
    assert stalls == ["long_scoreboard", "barrier", "wait"]  # 16, 8 (one kernel), 2
    assert got["top_stalls"][0]["cycles_per_issue"] == pytest.approx((3 * 20 + 4) / 4)
    # DRAM bytes are summed over the kernels, whatever unit each row came in
    assert got["dram_read_mb"] == pytest.approx(268.435456 + 1.5, abs=1e-3)  # MB, 3 decimals
    assert got["dram_write_mb"] == pytest.approx(134.217728 + 0.5, abs=1e-3)
    assert got["l2_hit_rate_pct"] == pytest.approx((3 * 10 + 90) / 4)


def test_the_profile_says_how_much_more_than_the_minimum_dram_moved() -> None:
    task = load_task("vector_add")
    work = task_work(task)
    rep = analyze(task, work, fake_timing(0.25), FAKE_CEILINGS, device="cuda", gpu="fake")
    rep.ncu = parse_ncu_csv(NCU_CSV)
    moved = (268.435456 + 1.5 + 134.217728 + 0.5) * 1e6
    line = next(x for x in format_profile(rep).splitlines() if x.startswith("- DRAM traffic"))
    assert "269.935 MB read, 134.718 MB written" in line
    assert f"({moved / work.bytes:.2f}x the minimum bytes)" in line
    assert line.endswith("L2 hit rate 30%")
    del rep.ncu["dram_write_mb"]  # a counter ncu did not report: no line rather than a guess
    assert "DRAM traffic" not in format_profile(rep)


def test_ncu_output_without_kernels_parses_to_nothing() -> None:
    assert parse_ncu_csv("==PROF== Disconnected from process 1\n==WARNING== No kernels\n") == {}


@pytest.mark.gpu
def test_profile_a_good_kernel_on_cuda(tmp_path: Path) -> None:
    from upskills.verify import CheckOptions, Verifier
    from upskills.verify.profile import profile_verdict

    task = load_task("softmax_rows")
    source = (ROOT / "tests" / "kernels" / "good" / "softmax_rows.py").read_text()
    with Verifier("cuda", CheckOptions(seeds=1, baselines=False)) as verifier:
        verdict = verifier.check(task, source)
    assert verdict.passed and verdict.timing is not None
    rep = profile_verdict(task, source, verdict, ceilings=H200_CEILINGS, ncu=False)
    assert rep.bound == "memory" and rep.median_ms == verdict.timing.median_ms
    assert rep.bandwidth_share is not None and 0 < rep.bandwidth_share <= 1.2


@pytest.mark.gpu
def test_ncu_counts_a_one_pass_kernels_dram_traffic_near_the_minimum() -> None:
    """Real counters: a softmax that reads each row once moves about the minimum bytes."""
    import shutil

    from upskills.verify import CheckOptions, Verifier
    from upskills.verify.profile import profile_verdict

    if shutil.which("ncu") is None:
        pytest.skip("Nsight Compute (ncu) is not on PATH")
    task = load_task("softmax_rows")
    source = (ROOT / "tests" / "kernels" / "good" / "softmax_rows.py").read_text()
    with Verifier("cuda", CheckOptions(seeds=1, baselines=False)) as verifier:
        verdict = verifier.check(task, source)
    assert verdict.passed
    rep = profile_verdict(task, source, verdict, ceilings=H200_CEILINGS, ncu=True)
    assert rep.ncu is not None, rep.notes
    moved = (rep.ncu["dram_read_mb"] + rep.ncu["dram_write_mb"]) * 1e6
    # ncu flushes the caches before each replay (nothing read from a warm L2); output lines
    # still dirty in L2 when the kernel ends (at most its 50 MB) are not yet DRAM writes
    assert 0.85 * rep.bytes <= moved <= 1.3 * rep.bytes, (moved, rep.bytes)
    assert 0 <= rep.ncu["l2_hit_rate_pct"] <= 100
    assert "DRAM traffic (ncu)" in format_profile(rep)
