"""The demo pipeline end to end on mock-teacher traces, with the replay student (CPU)."""

import json

from click.testing import CliRunner

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, verdict, write_trace
from tests.lift.mock import replay


def _traces(folder):
    from upskills.tasks import load_task

    h = load_task("row_sum").hash
    for i in range(2):
        write_trace(
            folder / f"t{i}.jsonl",
            [
                (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False, task_hash=h)),
                (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, task_hash=h)),
            ],
            trace_id=f"{i:032x}",
        )
    return folder


def test_demo_distills_runs_and_reports(tmp_path, replay_registered, lift_env):
    from upskills._cli.main import main

    traces = _traces(tmp_path / "traces")
    out = tmp_path / "demo"
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        main,
        [
            "demo",
            "--traces",
            str(traces),
            "--out",
            str(out),
            "--cases",
            "2",
            "--student",
            str(lift_env["student"]),
        ],
    )
    assert result.exit_code == 0, result.output
    run = out / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["splits"] == {"heldout": 2}
    arms = {a["kind"] for a in summary["arms"]}
    assert arms == {"baseline", "inline", "on_demand", "placebo", "excerpt"}
    manifest = json.loads((run / "run.json").read_text())
    excerpt = next(a for a in manifest["arms"] if a["kind"] == "excerpt")
    assert len(excerpt["source_traces"]) == 2 and len(excerpt["block"]) <= 4000
    assert [c["id"] for c in manifest["cases"]] == ["leaky_relu_scale-ragged", "relu-ragged"]
    assert all(c["split"] == "heldout" and c["task"] != "row_sum" for c in manifest["cases"])
    assert (run / "report.md").is_file()
    assert (run / "lift_ci.png").is_file() or "plots skipped" in result.output
    assert "upskills demo" in (run / "command.txt").read_text()
    relu = [a for a in summary["arms"] if a["kind"] == "inline"][0]
    assert relu["samples"] == 2  # one sample per case
    # the replay student solves relu when the skill is inlined, and nothing else
    assert relu["pass_at_k"]["1"] == 0.5
    assert replay.SKILL_NAME
