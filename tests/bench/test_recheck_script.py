"""The corpus re-check script (benchmarks/corpus_live/recheck.py): the command it runs for a
session's final kernel and the row it makes of the verdict (the GPU run is stood in for)."""

from __future__ import annotations

import json
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


def test_recheck_runs_upskills_check_batch_and_compares_speedups(tmp_path, monkeypatch):
    mod = load_script("recheck")
    folder = _session(tmp_path / "row_sum-s2")
    empty = tmp_path / "row_sum-s3"  # a session that ended without a kernel
    empty.mkdir()
    (empty / "state.json").write_text((folder / "state.json").read_text())
    (empty / "trace.jsonl").write_text(
        "\n".join((folder / "trace.jsonl").read_text().splitlines()[:1]) + "\n"
    )
    seen: list[tuple[list[str], list[dict]]] = []

    def fake_batch(cmd, env):  # noqa: ANN001, ANN202 - stands in for the GPU process
        entries = [
            json.loads(line)
            for line in Path(cmd[cmd.index("--batch") + 1]).read_text().splitlines()
        ]
        seen.append((cmd, entries))
        assert env["CUDA_VISIBLE_DEVICES"] == "1"
        for entry in entries:
            verdict = {
                "passed": Path(entry["candidate"]).read_text() == "good",
                "speedup_eager": 1.632,
                "speedup_compile": 1.1,
                "gpu": "NVIDIA H200",
                "timing": {"median_ms": 0.1, "clock_ms": 0.098},
                "baselines": {"eager": {"median_ms": 0.19}},
                "candidate_hash": "h2",
                "duration_s": 11.5,
                "stage_seconds": {"baselines": 0.01, "timing": 2.1},
            }
            yield json.dumps({"key": entry["key"], "verdict": verdict}) + "\n"

    monkeypatch.setattr(mod, "batch_lines", fake_batch)
    rows = list(mod.recheck_batch([folder, empty], "1", 60.0, fresh=frozenset({"row_sum"})))
    cmd, entries = seen[0]
    assert cmd[2:5] == ["upskills", "check", "--batch"] and "--seeds" not in cmd
    assert entries == [
        {
            "key": "row_sum-s2",
            "task": "row_sum",
            "candidate": entries[0]["candidate"],
            "timing": True,
            "fresh_baselines": True,
        }
    ]
    assert rows[0] == {"session": "row_sum-s3", "task": "row_sum", "gpu_index": "1"} | {
        "error": "no final kernel in the trace"
    }
    row = rows[1]
    assert row["fresh_baselines"] is True and row["passed"] is True
    assert (row["recorded_speedup"], row["speedup"], row["eager_ms"]) == (1.7, 1.632, 0.19)
    assert row["ratio"] == 0.96 and row["within_5pct"] is True
    # where the check's time went, and the judge's own per-call clock beside the events
    assert row["stage_seconds"] == {"baselines": 0.01, "timing": 2.1} and row["wall_s"] == 11.5
    assert (row["median_ms"], row["clock_ms"]) == (0.1, 0.098)
    untimed = list(mod.recheck_batch([folder], "1", 60.0, timing=False, fresh=frozenset({"all"})))
    cmd, entries = seen[1]
    assert "--seeds" in cmd and entries[0]["timing"] is False
    assert entries[0]["fresh_baselines"] is False and "fresh_baselines" not in untimed[0]


def _read_flush_batch(cmds: list[list[str]]):  # noqa: ANN202 - a batch_lines stand-in
    """Stands in for the GPU process: row_sum-s2 passes at 1.71x after a read flush."""

    def fake_batch(cmd, env):  # noqa: ANN001, ANN202
        cmds.append(cmd)
        verdict = {
            "passed": True,
            "speedup_eager": 1.71,
            "timing": {"median_ms": 0.1, "flush": "read"},
            "candidate_hash": "h2",
        }
        yield json.dumps({"key": "row_sum-s2", "verdict": verdict}) + "\n"

    return fake_batch


def test_a_recheck_after_a_read_flush_says_so_and_claims_no_reproduction(tmp_path, monkeypatch):
    mod = load_script("recheck")
    folder = _session(tmp_path / "row_sum-s2")
    cmds: list[list[str]] = []
    monkeypatch.setattr(mod, "batch_lines", _read_flush_batch(cmds))
    (row,) = mod.recheck_batch([folder], "0", 60.0, flush="read")
    assert cmds[0][cmds[0].index("--flush") + 1] == "read"
    assert row["flush"] == "read" and row["recorded_speedup"] == 1.7
    assert row["recorded_flush"] == "write"
    assert "ratio" not in row and "within_5pct" not in row  # recorded after the write flush
    monkeypatch.setattr(mod, "recorded", lambda trace: (1.7, "read"))  # a record read-flushed
    (row,) = mod.recheck_batch([folder], "0", 60.0, flush="read")
    assert row["ratio"] == round(1.71 / 1.7, 4) and row["within_5pct"] is True


def test_a_recheck_is_compared_with_an_earlier_recheck_when_given_one(tmp_path, monkeypatch):
    """``--recorded``: the earlier re-check's speedup and flush are what a row is compared with."""
    mod = load_script("recheck")
    folder = _session(tmp_path / "row_sum-s2")
    earlier = tmp_path / "run25_read.jsonl"
    earlier.write_text(
        json.dumps({"session": "row_sum-s2", "passed": True, "speedup": 1.8, "flush": "read"})
        + "\n"
        + json.dumps({"session": "other", "passed": False, "speedup": 9.0})
        + "\n"
    )
    records = mod.earlier_records(earlier)
    assert records == {"row_sum-s2": (1.8, "read")}  # a failed row is no record
    monkeypatch.setattr(mod, "batch_lines", _read_flush_batch([]))
    (row,) = mod.recheck_batch([folder], "0", 60.0, flush="read", records=(earlier.name, records))
    assert (row["recorded_speedup"], row["recorded_flush"]) == (1.8, "read")
    assert row["recorded_from"] == "run25_read.jsonl"
    assert row["ratio"] == round(1.71 / 1.8, 4) and row["within_5pct"] is False
    earlier.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match="not a re-check row"):
        mod.earlier_records(earlier)


def test_a_batch_that_stops_early_leaves_an_error_row_per_unjudged_kernel(tmp_path, monkeypatch):
    mod = load_script("recheck")
    a, b = _session(tmp_path / "row_sum-s2"), _session(tmp_path / "row_sum-s4")

    def dies_after_one(cmd, env):  # noqa: ANN001, ANN202
        yield json.dumps({"key": "row_sum-s2", "error": "unknown task"}) + "\n"
        yield "Traceback (most recent call last):\n"

    monkeypatch.setattr(mod, "batch_lines", dies_after_one)
    rows = list(mod.recheck_batch([a, b], "0", 60.0))
    assert [(r["session"], r["error"]) for r in rows] == [
        ("row_sum-s2", "unknown task"),
        ("row_sum-s4", "the batch ended before this check"),
    ]


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


def test_a_session_whose_task_file_is_not_here_stops_the_recheck_before_anything_runs(
    tmp_path, monkeypatch, capsys
):
    """The twenty-first device session's re-check ran without the KernelBench checkout: each of
    its 15 KernelBench sessions became an error row after the builds. Now nothing runs."""
    mod = load_script("recheck")
    here = _session(tmp_path / "corpus" / "row_sum-s2")
    kb = _session(tmp_path / "corpus" / "kb1_19_relu")
    problem = tmp_path / "kb" / "19_ReLU.py"
    state = {"task": {"name": "19_ReLU", "origin": str(problem)}}
    (kb / "state.json").write_text(json.dumps(state))
    assert mod.missing_task_files([here, kb]) == [str(problem)]

    def no_batch(cmd, env):  # noqa: ANN001, ANN202
        raise AssertionError("a check ran")

    monkeypatch.setattr(mod, "batch_lines", no_batch)
    out = tmp_path / "recheck.jsonl"
    argv = [str(tmp_path / "corpus"), "--gpus", "0", "--out", str(out)]
    with pytest.raises(SystemExit) as stop:
        mod.main(argv)
    assert stop.value.code == 2 and not out.exists()
    assert f"1 session(s) load their task from a file that is not here ({problem})" in (
        capsys.readouterr().err
    )
    problem.parent.mkdir()
    problem.write_text("# the problem's file")
    assert mod.missing_task_files([here, kb]) == []
