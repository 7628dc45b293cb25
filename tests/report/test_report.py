import copy
import json
import math

import pytest
from click.testing import CliRunner

from tests.report.conftest import OUTCOMES, write_run
from upskills._cli.main import main
from upskills.report import write_report
from upskills.report.render import plots_available


def _lift(report, arm, reference="baseline", metric="pass_1", subset="all"):
    return next(
        r
        for r in report.lifts
        if (r.arm, r.reference, r.metric, r.subset) == (arm, reference, metric, subset)
    )


def test_numbers_match_hand_computation(tmp_path):
    run = write_run(tmp_path / "run")
    report = write_report(run)
    arms = {a.arm: a for a in report.arms}
    assert report.device == "cuda" and report.gpu == "NVIDIA H200"
    assert arms["baseline"].pass_at_k["1"] == pytest.approx(4 / 9)
    assert arms["skill@1.0.0"].pass_at_k["1"] == pytest.approx(7 / 9)
    assert arms["baseline"].pass_at_k["3"] == pytest.approx(2 / 3)
    assert arms["skill@1.0.0"].pass_at_k["3"] == pytest.approx(1.0)
    assert arms["skill@1.0.0"].fast_1 == pytest.approx(4 / 9)
    assert arms["baseline"].fast_1 == pytest.approx(4 / 9)
    assert arms["skill@1.0.0"].speedup_geomean == pytest.approx(2 ** (4 / 7))
    assert arms["skill@1.0.0"].failures == {"mismatch": 2}
    assert arms["baseline"].mean_output_tokens == 100 and arms["baseline"].mean_latency_s == 2.0

    lift = _lift(report, "skill@1.0.0")
    # per-case diffs +1, +1/3, -1/3; clusters A = {c1, c2}, B = {c3}
    assert lift.lift.mean == pytest.approx(1 / 3)
    # 2 clusters: cluster sums 4/3 (2 cases) and -1/3 (1), ratio mean 1/3, residuals +-2/3;
    # var = 2/1 * (8/9) / 3**2 = 16/81, half-width t975(1) * 4/9 = 5.65: clipped to [-1, 1]
    assert lift.lift.method == "t-few"
    assert lift.lift.ci_low == pytest.approx(-1.0) and lift.lift.ci_high == pytest.approx(1.0)
    assert lift.lift.p_value == pytest.approx(1.0)
    assert (lift.lift.better, lift.lift.worse, lift.lift.n_clusters) == (2, 1, 2)
    assert (lift.repairs, lift.regressions) == (1, 0)
    fast = _lift(report, "skill@1.0.0", metric="fast_1")
    assert fast.lift.mean == pytest.approx(0.0)  # (+1, 0, -1) / 3
    vs_placebo = _lift(report, "skill@1.0.0", reference="placebo")
    assert vs_placebo.lift.mean == pytest.approx(1 / 3)
    tag = _lift(report, "skill@1.0.0", subset="tag:x")
    assert tag.lift.mean == pytest.approx(1 / 3) and tag.lift.n_cases == 2  # (+1 - 1/3) / 2
    assert _lift(report, "skill@1.0.0", subset="split:heldout").lift.n_cases == 3


def test_files_hold_the_numbers(tmp_path):
    run = write_run(tmp_path / "run")
    write_report(run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["splits"] == {"heldout": 3}
    assert summary["command"] == "upskills lift --synthetic"
    md = (run / "report.md").read_text()
    assert "+33.3 pp [-100.0, +100.0]" in md  # the lift, always with its interval
    assert (
        "| s | all | skill@1.0.0 | heldout | 3 | 9/9 | 77.8% | 100.0% | — | 44.4% | 1.49x "
        "| +33.3 pp [-100.0, +100.0] | 1.000 (1.000) |"
    ) in md
    assert "heldout: 3 cases" in md
    if plots_available():
        for png in ("lift_ci.png", "speedups.png"):
            assert (run / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_report_says_plots_were_skipped(tmp_path, monkeypatch):
    from upskills.report import render

    monkeypatch.setattr(render, "plots_available", lambda: False)
    run = write_run(tmp_path / "run")
    res = CliRunner().invoke(main, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert render.PLOTS_SKIPPED in res.output and "and plots" not in res.output
    assert not list(run.glob("*.png"))
    md = (run / "report.md").read_text()
    assert render.PLOTS_SKIPPED in md and "## Plots" not in md
    res = CliRunner().invoke(main, ["report", str(run), "--json"])
    assert json.loads(res.output)["notes"][-1] == render.PLOTS_SKIPPED


def test_pending_and_cpu_notes(tmp_path):
    run = write_run(tmp_path / "run", device="cpu")
    lines = (run / "evaluations.cpu.jsonl").read_text().splitlines()
    (run / "evaluations.cpu.jsonl").write_text("\n".join(lines[:-3]) + "\n")  # c3 of placebo
    report = write_report(run)
    assert any("3 generated samples not evaluated" in n for n in report.notes)
    assert any("no timings" in n for n in report.notes)
    placebo = next(a for a in report.arms if a.arm == "placebo")
    assert placebo.cases == 2 and placebo.fast_1 is None
    assert all(r.metric == "pass_1" for r in report.lifts)
    vs = _lift(report, "skill@1.0.0", reference="placebo")
    assert vs.lift.n_cases == 2  # only cases complete in both arms are paired


def test_baseline_run_comparison(tmp_path):
    other_outcomes = copy.deepcopy(OUTCOMES)
    other_outcomes["skill@1.0.0"]["c3"] = [1.0, 1.0, 1.0]
    other = write_run(tmp_path / "old", other_outcomes)
    run = write_run(tmp_path / "new")
    report = write_report(run, baseline=other)
    row = _lift(report, "skill@1.0.0", reference="old:skill@1.0.0")
    assert row.lift.mean == pytest.approx(-1 / 9)  # c3: 2/3 - 1
    assert (row.regressions, row.repairs, row.lift.worse) == (0, 0, 1)
    same = _lift(report, "baseline", reference="old:baseline")
    assert same.lift.mean == 0.0 and same.lift.p_value == 1.0


def test_cli_report(tmp_path):
    from upskills._cli.main import main

    run = write_run(tmp_path / "run")
    result = CliRunner(env={"COLUMNS": "220"}).invoke(main, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert "skill@1.0.0" in result.output and "+33.3 pp" in result.output
    assert (run / "report.md").is_file()
    bad = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert bad.exit_code != 0 and "not a lift run folder" in bad.output


def test_nan_free_summary(tmp_path):
    run = write_run(tmp_path / "run")
    report = write_report(run)
    one_task = [r for r in report.lifts if r.lift.n_clusters == 1]
    assert one_task  # tag:y holds one task: no interval, stored as null, never NaN
    for r in report.lifts:
        if r.lift.n_clusters == 1:
            assert (r.lift.ci_low, r.lift.ci_high, r.lift.method) == (None, None, "none")
        else:
            assert r.lift.ci_low is not None and not math.isnan(r.lift.ci_low)
    assert "NaN" not in (run / "summary.json").read_text()


def test_report_out_folder_keeps_the_run_folder_clean(tmp_path):
    from upskills._cli.main import main

    run = write_run(tmp_path / "run")
    out = tmp_path / "report-cpu"
    result = CliRunner(env={"COLUMNS": "220"}).invoke(main, ["report", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} >= {"report.md", "summary.json"}
    assert json.loads((out / "summary.json").read_text())["arms"]
    assert not (run / "report.md").exists()


def test_a_run_with_nothing_evaluated_reports_no_rate(tmp_path):
    """Generated but not evaluated (a GPU call cut short): "n/a", never 0% of nothing."""
    run = write_run(tmp_path / "run", device="cpu")
    (run / "evaluations.cpu.jsonl").write_text("")
    report = write_report(run)
    assert all(a.cases == 0 and a.pass_at_k["1"] is None for a in report.arms)
    assert any("27 generated samples not evaluated" in n for n in report.notes)
    assert not any("floor" in n for n in report.notes)
    table = (run / "report.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| s | all | baseline"))
    assert "| n/a" in row and "0.0%" not in row
