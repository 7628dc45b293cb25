"""Agent mode: a failing kernel gets verifier feedback and another turn; a passing one stops."""

from upskills.lift.config import LiftConfig
from upskills.lift.runner import run_lift
from upskills.lift.store import GenerationRecord, read_records


def test_feedback_turns(lift_env, replay_registered, tmp_path):
    out = tmp_path / "run"
    config = LiftConfig(
        out=str(out),
        students=[str(lift_env["student"])],
        skills=[str(lift_env["skill"])],
        cases=[str(lift_env["cases"] / "relu-ragged.yaml")],
        arms=["baseline", "inline"],
        samples=1,
        mode="agent",
        agent_turns=3,
        device="cpu",
        evaluate=False,
        progress=False,
    )
    run_lift(config)
    calls = {g.arm: g.calls for g in read_records(out / "generations.jsonl", GenerationRecord)}
    # the broken kernel fails every check: 3 turns; the good one passes at once: 1 turn
    assert calls == {"baseline": 3, "gpu-test-skill@1.0.0": 1}
