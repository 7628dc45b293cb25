"""The corpus re-check script (benchmarks/corpus_live/recheck.py): the command it runs for a
session's final kernel and the row it makes of the verdict (the GPU run is stood in for)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.bench.test_round_script import load_script
from tests.trace.conftest import make_verdict
from upskills.trace import TraceWriter
from upskills.trace.events import RunEnd, RunStart, ToolResult, Totals


def _session(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"task": {"name": "row_sum"}}))
    with TraceWriter(folder / "trace.jsonl") as w:
        tid = w.trace_id
        w.write(RunStart(trace_id=tid, task="row_sum", task_hash="abc", agent_role="external"))
        w.write(
            ToolResult(
                trace_id=tid,
                tool_name="benchmark",
                call_id="b",
                verdict=make_verdict(True, speedup=2.0),
                kernel_source="final",
                kernel_hash="hf",
            )
        )
        w.write(
            RunEnd(
                trace_id=tid,
                outcome="solved",
                best_speedup=2.0,
                best_kernel_hash="hf",
                best_kernel_source="final",
                totals=Totals(),
            )
        )
    return folder


def test_recheck_runs_upskills_check_and_compares_speedups(tmp_path, monkeypatch):
    mod = load_script("recheck")
    folder = _session(tmp_path / "row_sum-s2")
    seen: list[list[str]] = []

    def fake_run(cmd, **kwargs):  # noqa: ANN001, ANN202 - stands in for the GPU check
        seen.append(cmd)
        kernel = Path(cmd[5]).read_text()
        verdict = {
            "passed": kernel == "final",
            "speedup_eager": 1.92,
            "speedup_compile": 1.1,
            "gpu": "NVIDIA H200",
            "timing": {"median_ms": 0.1},
            "baselines": {"eager": {"median_ms": 0.19}},
            "candidate_hash": "hf",
        }
        return subprocess.CompletedProcess(cmd, 0, json.dumps(verdict), "")

    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    row = mod.recheck(folder, "0", 60.0, fresh=True)
    assert seen[0][2:5] == ["upskills", "check", "row_sum"] and "--fresh-baselines" in seen[0]
    assert row["fresh_baselines"] is True and row["passed"] is True
    assert (row["recorded_speedup"], row["speedup"], row["eager_ms"]) == (2.0, 1.92, 0.19)
    assert row["ratio"] == 0.96 and row["within_5pct"] is True
    plain = mod.recheck(folder, "0", 60.0)
    assert "--fresh-baselines" not in seen[1] and "fresh_baselines" not in plain
    untimed = mod.recheck(folder, "0", 60.0, timing=False, fresh=True)
    assert "--no-timing" in seen[2] and "--fresh-baselines" not in seen[2]
    assert "fresh_baselines" not in untimed
