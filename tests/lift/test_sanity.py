"""Sanity run: known-good kernels replayed score 100%, broken ones 0% (CPU verifier)."""

import json

import pytest

from upskills.lift.config import LiftConfig
from upskills.lift.runner import run_lift
from upskills.lift.store import EvaluationRecord, GenerationRecord, read_records
from upskills.report import write_report
from upskills.report.render import plots_available


def test_replayed_known_kernels_score_exactly(lift_env, replay_registered, tmp_path):
    out = tmp_path / "run"
    config = LiftConfig(
        out=str(out),
        students=[str(lift_env["student"])],
        skills=[str(lift_env["skill"])],
        cases=[str(lift_env["cases"])],
        traces=[str(lift_env["traces"])],
        samples=2,
        device="cpu",
        progress=False,
    )
    run_lift(config)
    gens = read_records(out / "generations.jsonl", GenerationRecord)
    evals = {e.key: e for e in read_records(out / "evaluations.cpu.jsonl", EvaluationRecord)}
    assert len(gens) == 5 * 2 * 2 and len(evals) == 20
    # seeds identical across arms for the same case and sample
    seeds = {(g.case, g.sample): set() for g in gens}
    for g in gens:
        seeds[(g.case, g.sample)].add(g.seed)
    assert all(len(s) == 1 for s in seeds.values())
    assert len({next(iter(s)) for s in seeds.values()}) == 4

    report = write_report(out)
    by_arm = {a.arm: a for a in report.arms}
    assert set(by_arm) == {
        "baseline",
        "gpu-test-skill@1.0.0",
        "gpu-test-skill@1.0.0+read",
        "placebo",
        "excerpt",
    }
    assert by_arm["gpu-test-skill@1.0.0"].pass_at_k["1"] == 1.0
    assert by_arm["gpu-test-skill@1.0.0+read"].pass_at_k["1"] == 1.0
    assert by_arm["gpu-test-skill@1.0.0+read"].activation_rate == 1.0
    assert by_arm["gpu-test-skill@1.0.0+read"].reads == {"SKILL.md": 4}
    for arm in ("baseline", "placebo", "excerpt"):
        assert by_arm[arm].pass_at_k["1"] == 0.0
        assert by_arm[arm].pass_at_k["2"] == 0.0
        assert by_arm[arm].failures == {"mismatch": 4}
    lift = next(
        r
        for r in report.lifts
        if r.arm == "gpu-test-skill@1.0.0" and r.reference == "baseline" and r.subset == "all"
    )
    # 2 tasks, both repaired: Newcombe's paired interval, wide at n = 2 (not a point)
    assert lift.lift.method == "newcombe"
    assert (lift.lift.mean, lift.lift.ci_high) == (1.0, 1.0)
    assert lift.lift.ci_low == pytest.approx(0.06999, abs=1e-4)
    assert (lift.repairs, lift.regressions, lift.lift.worse) == (2, 0, 0)
    assert lift.lift.p_value == pytest.approx(0.5)  # 2 tasks: exact sign-flip, 2 of 4 patterns
    refs = {r.reference for r in report.lifts if r.arm == "gpu-test-skill@1.0.0"}
    assert refs == {"baseline", "placebo", "excerpt"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["splits"] == {"heldout": 2}
    md = (out / "report.md").read_text()
    assert "+100.0 pp [+7.0, +100.0]" in md
    if plots_available():
        assert (out / "lift_ci.png").stat().st_size > 1000
        assert (out / "speedups.png").stat().st_size > 1000
    # placebo block matches the inline skill block's token count within 5%
    manifest = json.loads((out / "run.json").read_text())
    blocks = {a["kind"]: a["block_tokens"] for a in manifest["arms"]}
    assert abs(blocks["placebo"] - blocks["inline"]) <= 0.05 * blocks["inline"]
    assert manifest["token_counter"] == "estimate:chars/4"


def test_two_workers_give_the_same_verdicts(lift_env, replay_registered, tmp_path):
    from click.testing import CliRunner

    from upskills._cli.main import main

    out = tmp_path / "run"
    config = LiftConfig(
        out=str(out),
        students=[str(lift_env["student"])],
        skills=[str(lift_env["skill"])],
        cases=[str(lift_env["cases"])],
        arms=["baseline", "inline"],
        samples=1,
        device="cpu",
        evaluate=False,
        progress=False,
    )
    run_lift(config)
    args = ["lift", "eval", str(out), "--device", "cpu", "--workers", "2", "--no-progress"]
    result = CliRunner().invoke(main, args)  # a worker process per shard of cases
    assert result.exit_code == 0, result.output
    assert "evaluations.cpu.jsonl" in result.output
    evals = read_records(out / "evaluations.cpu.jsonl", EvaluationRecord)
    assert not list(out.glob("*.part*.jsonl"))
    got = {e.key.split("/", 1)[1]: (e.passed, e.error_class) for e in evals}
    assert got == {
        "baseline/relu-ragged/0": (False, "mismatch"),
        "baseline/vector_add-ragged/0": (False, "mismatch"),
        "gpu-test-skill@1.0.0/relu-ragged/0": (True, None),
        "gpu-test-skill@1.0.0/vector_add-ragged/0": (True, None),
    }
