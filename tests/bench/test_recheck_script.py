"""The corpus re-check script (benchmarks/corpus_live/recheck.py): the command it runs for a
session's final kernel and the row it makes of the verdict (the GPU run is stood in for)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.bench.test_round_script import load_script
from tests.trace.conftest import write_sample_trace


def _session(folder: Path) -> Path:
    """A solved row_sum session whose final kernel ("good") was benchmarked at 1.7x."""
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"task": {"name": "row_sum"}}))
    write_sample_trace(folder / "trace.jsonl")
    return folder


def test_recheck_runs_upskills_check_and_compares_speedups(tmp_path, monkeypatch):
    mod = load_script("recheck")
    folder = _session(tmp_path / "row_sum-s2")
    seen: list[list[str]] = []

    def fake_run(cmd, **kwargs):  # noqa: ANN001, ANN202 - stands in for the GPU check
        seen.append(cmd)
        kernel = Path(cmd[5]).read_text()
        verdict = {
            "passed": kernel == "good",
            "speedup_eager": 1.632,
            "speedup_compile": 1.1,
            "gpu": "NVIDIA H200",
            "timing": {"median_ms": 0.1},
            "baselines": {"eager": {"median_ms": 0.19}},
            "candidate_hash": "h2",
            "stage_seconds": {"baselines": 41.5, "timing": 2.1},
        }
        return subprocess.CompletedProcess(cmd, 0, json.dumps(verdict), "")

    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    row = mod.recheck(folder, "0", 60.0, fresh=True)
    assert seen[0][2:5] == ["upskills", "check", "row_sum"] and "--fresh-baselines" in seen[0]
    assert row["fresh_baselines"] is True and row["passed"] is True
    assert (row["recorded_speedup"], row["speedup"], row["eager_ms"]) == (1.7, 1.632, 0.19)
    assert row["ratio"] == 0.96 and row["within_5pct"] is True
    # where the check's time went, and the process's whole wall time beside it
    assert row["stage_seconds"] == {"baselines": 41.5, "timing": 2.1}
    assert isinstance(row["wall_s"], float) and 0 <= row["wall_s"] < 60
    plain = mod.recheck(folder, "0", 60.0)
    assert "--fresh-baselines" not in seen[1] and "fresh_baselines" not in plain
    untimed = mod.recheck(folder, "0", 60.0, timing=False, fresh=True)
    assert "--no-timing" in seen[2] and "--fresh-baselines" not in seen[2]
    assert "fresh_baselines" not in untimed


def test_an_unknown_task_name_is_an_error_not_a_skip(tmp_path):
    mod = load_script("recheck")
    folder = _session(tmp_path / "row_sum-s2")
    assert mod.by_tasks([folder], ["row_sum"]) == [folder]
    with pytest.raises(ValueError, match="row_sum-s2; the tasks here are row_sum"):
        mod.by_tasks([folder], ["row_sum", "row_sum-s2"])


def test_finals_prefers_the_session_whose_benchmark_timed_the_final_kernel(tmp_path):
    """Two sessions end with the same kernel; only the second benchmarked it (the first's
    benchmark never gave a time, as when it ran out of memory): the re-check needs the second,
    or it has no recorded speedup to compare with."""
    mod = load_script("recheck")
    timed = _session(tmp_path / "row_sum-s2")
    untimed = tmp_path / "row_sum"
    untimed.mkdir()
    (untimed / "state.json").write_text((timed / "state.json").read_text())
    timing = {
        "median_ms": 0.1,
        "p10_ms": 0.1,
        "p90_ms": 0.1,
        "mean_ms": 0.1,
        "reps": 50,
        "spread": 0.0,
    }
    sample = (timed / "trace.jsonl").read_text().splitlines()
    for folder, benchmarked in ((timed, True), (untimed, False)):
        lines = []
        for line in sample:
            event = json.loads(line)
            if event.get("verdict"):
                event["verdict"]["candidate_hash"] = event["kernel_hash"]
            if event.get("gen_ai.tool.name") == "benchmark":
                if benchmarked:
                    if event.get("verdict"):
                        event["verdict"]["timing"] = timing
                else:
                    event["gen_ai.tool.name"] = "check"  # judged, not timed
                    if event.get("verdict"):
                        event["verdict"]["speedup_eager"] = None
            if event["event"] == "run_end" and not benchmarked:
                event["best_speedup"] = None
            lines.append(json.dumps(event))
        (folder / "trace.jsonl").write_text("\n".join(lines) + "\n")
    assert mod.recorded_speedup(mod.read_trace(untimed / "trace.jsonl")) is None
    assert mod.recorded_speedup(mod.read_trace(timed / "trace.jsonl")) == 1.7
    assert mod.finals([untimed, timed]) == [timed]
