"""Agent mode: a failing kernel gets verifier feedback and another turn; a passing one stops."""

from upskills.lift.config import LiftConfig
from upskills.lift.runner import run_lift
from upskills.lift.store import GenerationRecord, read_records


def _run(lift_env, tmp_path, arms):
    """Agent mode over the ragged relu case with the replay student (3 turns, CPU)."""
    out = tmp_path / "run"
    config = LiftConfig(
        out=str(out),
        students=[str(lift_env["student"])],
        skills=[str(lift_env["skill"])],
        cases=[str(lift_env["cases"] / "relu-ragged.yaml")],
        arms=arms,
        samples=1,
        mode="agent",
        agent_turns=3,
        device="cpu",
        evaluate=False,
        progress=False,
    )
    run_lift(config)
    return out


def test_feedback_turns(lift_env, replay_registered, tmp_path):
    out = _run(lift_env, tmp_path, ["baseline", "inline"])
    calls = {g.arm: g.calls for g in read_records(out / "generations.jsonl", GenerationRecord)}
    # the broken kernel fails every check: 3 turns; the good one passes at once: 1 turn
    assert calls == {"baseline": 3, "gpu-test-skill@1.0.0": 1}


def test_students_run_the_teachers_agent_loop_and_leave_traces(
    lift_env, replay_registered, tmp_path
):
    """One agent loop: a student's agent-mode sample is a run of ``upskills.agent.run_agent``
    (role ``student``) with a trace in the teachers' format; the record names it, and its
    kernel is the run's submitted (best passing) kernel, else the last one it wrote."""
    from upskills.trace import read_trace
    from upskills.trace.attempts import attempts_of
    from upskills.trace.events import RunEnd, RunStart, ToolResult

    out = _run(lift_env, tmp_path, ["baseline", "inline", "on_demand"])
    gens = {g.arm: g for g in read_records(out / "generations.jsonl", GenerationRecord)}
    assert set(gens) == {"baseline", "gpu-test-skill@1.0.0", "gpu-test-skill@1.0.0+read"}
    outcomes = {}
    for arm, g in gens.items():
        assert g.trace is not None, arm
        trace = read_trace(out / g.trace, strict=True)
        start, end = trace.events[0], trace.events[-1]
        assert isinstance(start, RunStart) and start.agent_role == "student"
        assert isinstance(end, RunEnd)
        outcomes[arm] = end.outcome
        kernels = [a.kernel_source for a in attempts_of(trace.events) if a.kernel_source]
        assert g.kernel_source == (end.best_kernel_source or kernels[-1])
        reads = [
            e for e in trace.events if isinstance(e, ToolResult) and e.tool_name == "read_skill"
        ]
        assert len(g.skill_reads) == len([r for r in reads if r.error is None])
    assert outcomes == {
        "baseline": "budget",
        "gpu-test-skill@1.0.0": "solved",
        "gpu-test-skill@1.0.0+read": "solved",
    }
    assert gens["gpu-test-skill@1.0.0+read"].skill_reads  # the on-demand arm read the skill
    assert not gens["baseline"].skill_reads
