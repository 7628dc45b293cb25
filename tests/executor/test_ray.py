"""The Ray executor on a local Ray cluster with 2 CPU actors: same verdicts as the local
executor, and no lost or duplicated unit when actors are killed mid-run."""

from __future__ import annotations

import threading
import time

import pytest

ray = pytest.importorskip("ray")

from upskills.executor import UnitResult, run_units, verdict_signature  # noqa: E402
from upskills.executor.ray_executor import RayExecutor  # noqa: E402
from upskills.lift.store import read_records  # noqa: E402


@pytest.fixture(scope="module")
def ray_executor():
    """One executor (2 CPU actors, kept warm) on a private local cluster."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    ex = RayExecutor("cpu", actors=2)
    try:
        yield ex
    finally:
        ex.close()
        ray.shutdown()


def _killer(ex: RayExecutor, want, times: int) -> threading.Thread:
    """Kill, ``times`` times, the actor holding a unit for which ``want(key)`` is true."""

    def loop() -> None:
        killed: set[str] = set()
        deadline = time.monotonic() + 120
        while len(killed) < times and time.monotonic() < deadline:
            for key, actor in list(ex.in_flight.items()):
                if want(key) and actor.label not in killed:
                    time.sleep(0.3)  # let the call reach the actor
                    killed.add(actor.label)
                    ray.kill(actor.handle, no_restart=True)
                    break
            time.sleep(0.02)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_ray_verdicts_equal_local_verdicts(ray_executor, units, local_results):
    got = {r.key: r for r in ray_executor.run(units)}
    assert sorted(got) == sorted(local_results)
    for key, result in got.items():
        assert verdict_signature(result.verdict) == verdict_signature(local_results[key].verdict)
    # the comparison is not vacuous: passes, two failure kinds and per-trial seeds are compared
    assert {r.verdict.error_class for r in got.values()} >= {None, "mismatch", "runtime"}
    assert all(r.verdict.variants for r in got.values() if r.verdict.passed)
    assert len({r.worker for r in got.values()}) == 2  # both actors judged


def test_actor_killed_mid_run_loses_and_duplicates_nothing(
    ray_executor, units, local_results, tmp_path
):
    out = tmp_path / "results.jsonl"
    died = ray_executor.stats.actors_died
    slow = {u.key for u in units if u.key.startswith(("softmax", "row_sum", "transpose"))}
    thread = _killer(ray_executor, lambda key: key in slow, times=1)
    results = run_units(units, ray_executor, out)
    thread.join(timeout=5)
    assert ray_executor.stats.actors_died == died + 1
    lines = read_records(out, UnitResult)
    assert len(out.read_text().splitlines()) == len(units)  # no duplicate line
    assert sorted(r.key for r in lines) == sorted(u.key for u in units)  # no lost unit
    retried = [r for r in results if r.attempts == 2]
    assert len(retried) == 1  # the unit the dead actor held ran again elsewhere
    for r in results:
        assert verdict_signature(r.verdict) == verdict_signature(local_results[r.key].verdict)
    assert len(ray_executor._actors) == 2  # the dead actor was replaced


def test_unit_that_kills_two_actors_is_a_crash(ray_executor, units, local_results):
    victim = "row_sum_fp16__drops_tail"
    some = [u for u in units if u.key in (victim, "transpose_2d", "syntax")]
    thread = _killer(ray_executor, lambda key: key == victim, times=2)
    got = {r.key: r for r in ray_executor.run(some)}
    thread.join(timeout=5)
    assert got[victim].verdict.error_class == "crash"
    assert got[victim].attempts == 2
    assert "died while judging this candidate, 2 times" in got[victim].verdict.message
    for key in ("transpose_2d", "syntax"):
        assert verdict_signature(got[key].verdict) == verdict_signature(local_results[key].verdict)


def test_lift_eval_through_ray(ray_executor, tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "lift" / "mock"))
    import replay

    from tests.lift.conftest import lift_env as make_env
    from upskills.lift.config import LiftConfig
    from upskills.lift.evaluate import evaluate_with
    from upskills.lift.runner import run_lift
    from upskills.lift.store import EvaluationRecord
    from upskills.llm import register_provider

    register_provider("replay", replay.provider)
    env = make_env.__wrapped__(tmp_path)
    out = tmp_path / "run"
    config = LiftConfig(
        out=str(out),
        students=[str(env["student"])],
        skills=[str(env["skill"])],
        cases=[str(env["cases"])],
        arms=["baseline", "inline"],
        samples=1,
        device="cpu",
        evaluate=False,
        progress=False,
    )
    run_lift(config)
    evaluate_with(out, "cpu", ray_executor, progress=False)
    evals = read_records(out / "evaluations.cpu.jsonl", EvaluationRecord)
    got = {e.key.split("/", 1)[1]: (e.passed, e.error_class) for e in evals}
    assert got == {  # what the local executor gives (tests/lift/test_sanity.py)
        "baseline/relu-ragged/0": (False, "mismatch"),
        "baseline/vector_add-ragged/0": (False, "mismatch"),
        "gpu-test-skill@1.0.0/relu-ragged/0": (True, None),
        "gpu-test-skill@1.0.0/vector_add-ragged/0": (True, None),
    }
    evaluate_with(out, "cpu", ray_executor, progress=False)  # resume: nothing left to do
    assert len((out / "evaluations.cpu.jsonl").read_text().splitlines()) == 4
