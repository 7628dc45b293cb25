"""On a GPU: the sanity run evaluated on CUDA has timings, speedups and fast_1 lifts."""

import pytest

from upskills.lift.config import LiftConfig
from upskills.lift.evaluate import evaluate_run
from upskills.lift.runner import run_lift
from upskills.lift.store import EvaluationRecord, read_records
from upskills.report import write_report


@pytest.mark.gpu
def test_replayed_kernels_on_cuda(lift_env, replay_registered, tmp_path):
    out = tmp_path / "run"
    config = LiftConfig(
        out=str(out),
        students=[str(lift_env["student"])],
        skills=[str(lift_env["skill"])],
        cases=[str(lift_env["cases"])],
        traces=[str(lift_env["traces"])],
        arms=["baseline", "inline", "placebo"],
        samples=2,
        device="cuda",
        progress=False,
    )
    run_lift(config)
    evals = read_records(out / "evaluations.cuda.jsonl", EvaluationRecord)
    assert len(evals) == 12 and all(e.device == "cuda" and e.gpu for e in evals)
    passed = [e for e in evals if e.passed]
    assert len(passed) == 4  # the inline arm: 2 cases x 2 samples
    assert all(e.speedup_eager is not None and e.speedup_eager > 0 for e in passed)
    # the same generations judged on CPU as well: same correctness, no timings
    evaluate_run(out, "cpu", progress=False)
    cpu = {e.key: e for e in read_records(out / "evaluations.cpu.jsonl", EvaluationRecord)}
    assert {k: e.passed for k, e in cpu.items()} == {e.key: e.passed for e in evals}
    report = write_report(out)  # reports the CUDA evaluation by default
    assert report.device == "cuda"
    arms = {a.arm: a for a in report.arms}
    assert arms["gpu-test-skill@1.0.0"].pass_at_k["1"] == 1.0
    assert arms["gpu-test-skill@1.0.0"].speedup_geomean is not None
    assert arms["baseline"].fast_1 == 0.0
    assert any(r.metric == "fast_1" for r in report.lifts)
