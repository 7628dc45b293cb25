"""Kill the lift run with SIGKILL during each phase, resume: identical results, no duplicates."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DRIVE = Path(__file__).parent / "mock" / "drive.py"


def _cmd(env, out):
    return [
        sys.executable,
        str(DRIVE),
        "lift",
        "--students",
        str(env["student"]),
        "--skills",
        str(env["skill"]),
        "--cases",
        str(env["cases"]),
        "--traces",
        str(env["traces"]),
        "--samples",
        "2",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--no-report",
    ]


def _run(cmd, delay="0"):
    env = dict(os.environ, UPSKILLS_TEST_REPLAY_DELAY=delay)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _kill_when(cmd, path: Path, lines: int, delay: str) -> None:
    env = dict(os.environ, UPSKILLS_TEST_REPLAY_DELAY=delay)
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 240
        while _lines(path) < lines:
            assert proc.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its verifier workers
        proc.wait()


def _records(path: Path, drop: tuple[str, ...] = ()) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)), "duplicate keys"
    return sorted(
        ({k: v for k, v in r.items() if k not in drop} for r in rows), key=lambda r: r["key"]
    )


def test_sigkill_in_each_phase_then_resume(lift_env, tmp_path):
    ref, gen_kill, eval_kill = tmp_path / "ref", tmp_path / "gk", tmp_path / "ek"
    done = _run(_cmd(lift_env, ref))
    assert done.returncode == 0, done.stderr[-3000:]
    # the check seeds come from the run folder's secret salt: the same salt, the same verdicts
    salt = (ref / "check_salt").read_text()
    assert len(salt.strip()) == 64
    for run in (gen_kill, eval_kill):
        run.mkdir()
        (run / "check_salt").write_text(salt)

    # generation phase: killed after 5 of 20 samples (each answer takes 0.2 s)
    _kill_when(_cmd(lift_env, gen_kill), gen_kill / "generations.jsonl", 5, "0.2")
    assert 5 <= _lines(gen_kill / "generations.jsonl") < 20
    assert not (gen_kill / "evaluations.cpu.jsonl").exists()
    resumed = _run(_cmd(lift_env, gen_kill))
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    # evaluation phase: killed after the first verdict is written
    _kill_when(_cmd(lift_env, eval_kill), eval_kill / "evaluations.cpu.jsonl", 1, "0")
    assert _lines(eval_kill / "generations.jsonl") == 20
    assert _lines(eval_kill / "evaluations.cpu.jsonl") < 20
    resumed = _run(_cmd(lift_env, eval_kill))
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    want_gen = _records(ref / "generations.jsonl")
    want_eval = _records(ref / "evaluations.cpu.jsonl", drop=("duration_s",))
    assert len(want_gen) == 20 and len(want_eval) == 20
    for run in (gen_kill, eval_kill):
        assert _records(run / "generations.jsonl") == want_gen
        assert _records(run / "evaluations.cpu.jsonl", drop=("duration_s",)) == want_eval
