"""The demo pipeline end to end on mock-teacher traces, with the replay student (CPU).

The replay student is a test double (``tests/lift/mock/replay.py``): its figures test the
pipeline's arithmetic, they are never results.
"""

import json

import pytest
from click.testing import CliRunner

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, verdict, write_trace
from tests.lift.mock import replay
from upskills.llm.base import Message


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
            "--choose",
            "2",
            "--student",
            str(lift_env["student"]),
        ],
    )
    assert result.exit_code == 0, result.output
    run = out / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["splits"] == {"heldout": 4}
    arms = {a["kind"] for a in summary["arms"]}
    assert arms == {"baseline", "inline", "on_demand", "placebo", "excerpt"}
    manifest = json.loads((run / "run.json").read_text())
    excerpt = next(a for a in manifest["arms"] if a["kind"] == "excerpt")
    assert len(excerpt["source_traces"]) == 2 and len(excerpt["block"]) <= 4000
    writes = [c for c in manifest["cases"] if c["rung"] == "write"]
    chooses = [c for c in manifest["cases"] if c["rung"] == "choose"]
    assert [c["id"] for c in writes] == ["leaky_relu_scale-ragged", "relu-ragged"]
    assert len(chooses) == 2 and len({c["task"] for c in chooses}) == 2
    # the pack was distilled from row_sum: its family (row_sum_fp16 too) is never measured
    assert all(c["split"] == "heldout" for c in manifest["cases"])
    assert not {c["task"] for c in manifest["cases"]} & {"row_sum", "row_sum_fp16"}
    assert (run / "report.md").is_file()
    assert (run / "lift_ci.png").is_file() or "plots skipped" in result.output
    assert "upskills demo" in (run / "command.txt").read_text()
    rows = {(a["kind"], a["rung"]): a for a in summary["arms"]}
    inline = rows[("inline", "write")]
    assert inline["samples"] == 2  # one sample per case
    # the replay student solves relu when the skill is inlined, and nothing else
    assert inline["pass_at_k"]["1"] == 0.5
    assert rows[("baseline", "write")]["pass_at_k"]["1"] == 0.0
    # choose: the rate the replay's fixed scoring rule earns on the verifier's labels, next to
    # chance (mean 1/k)
    for kind, skill in (("baseline", False), ("inline", True), ("placebo", False)):
        expected, margins = [], []
        for case in chooses:
            lines = [c["line"] for c in case["choices"]]
            system = '<skill name="any-pack">' if skill else ""
            scores = replay.score([Message(role="system", content=system)], "", lines)
            expected.append(case["choices"][scores.index(max(scores))]["correct"])
            right = [v for v, c in zip(scores, case["choices"], strict=True) if c["correct"]]
            wrong = [v for v, c in zip(scores, case["choices"], strict=True) if not c["correct"]]
            margins.append(max(right) - max(wrong))
        row = rows[(kind, "choose")]
        assert row["pass_at_k"]["1"] == sum(expected) / len(expected)
        assert row["margin_nats"] == pytest.approx(sum(margins) / len(margins))
        chance = sum(1 / len(c["choices"]) for c in chooses) / len(chooses)
        assert row["chance"] == chance
    margin_rows = [r for r in summary["lifts"] if r["metric"] == "margin_nats"]
    assert margin_rows and all(r["subset"] != "tag:rung:write" for r in margin_rows)
    out_text = result.output
    assert "choose" in out_text and "chance" in out_text and "lift vs baseline" in out_text


def test_the_demo_measures_the_pack_that_teaches_most(tmp_path):
    """Packs distilled from the same traces tie on traces; the one with most lessons wins."""
    from tests.distill.test_cuda_traces import CUDA_ROW_SUM
    from upskills.demo import _pick_pack
    from upskills.distill import DistillConfig, distill
    from upskills.tasks import load_task

    h = load_task("row_sum").hash
    for i in range(2):
        v = verdict(CUDA_ROW_SUM, True, task_hash=h, speedup=1.8, gpu="H200")
        write_trace(tmp_path / "traces" / f"t{i}.jsonl", [(CUDA_ROW_SUM, v)], task_hash=h)
    skills = tmp_path / "skills"
    result = distill([tmp_path / "traces"], skills, None, DistillConfig())
    body = {
        p.name: len(json.loads((p.path / "references/lessons.json").read_text())["skill_body"])
        for p in result.packs
    }
    assert len(set(body.values())) > 1 and "gpu-launch-tuning" in body  # a real choice
    picked = _pick_pack(skills, sorted(body), None).name
    assert body[picked] == max(body.values())
    assert picked == min(n for n, k in body.items() if k == max(body.values()))
