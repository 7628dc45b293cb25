"""A synthetic lift run on disk (records written directly; no model, no verifier)."""

from __future__ import annotations

from pathlib import Path

from upskills.lift.arms import Arm
from upskills.lift.config import CaseInfo, LiftConfig, RunManifest
from upskills.lift.store import EvaluationRecord, GenerationRecord, RecordWriter, sample_key
from upskills.tasks.model import Task

CASES = [("c1", "A", ["x"]), ("c2", "A", ["y"]), ("c3", "B", ["x"])]
"""(case id, task, tags)."""

# outcome per arm and case: a speedup (float) for a correct sample, None for a failure
OUTCOMES = {
    "baseline": {"c1": [None] * 3, "c2": [1.5, None, None], "c3": [3.0, 3.0, 3.0]},
    "skill@1.0.0": {"c1": [2.0, 2.0, 2.0], "c2": [4.0, 0.5, None], "c3": [1.0, 1.0, None]},
    "placebo": {"c1": [None] * 3, "c2": [1.5, None, None], "c3": [3.0, 3.0, 3.0]},
}


def write_run(out: Path, outcomes: dict = OUTCOMES, device: str = "cuda") -> Path:
    task = Task(name="t", statement="s", source="class Model: pass\n")
    arms = [
        Arm(name="baseline", kind="baseline"),
        Arm(name="skill@1.0.0", kind="inline", skill="skill@1.0.0", block="B", block_tokens=10),
        Arm(name="placebo", kind="placebo", skill="skill@1.0.0", block="P", block_tokens=10),
    ]
    manifest = RunManifest(
        config=LiftConfig(out=str(out), students=["s"], cases=["x"], samples=3),
        arms=arms,
        cases=[
            CaseInfo(
                id=c, task=t, task_hash=t, split="heldout", tags=tags, prompt="p", task_def=task
            )
            for c, t, tags in CASES
        ],
        students=[{"name": "s"}],
        prompt_hashes={},
        token_counter="estimate:chars/4",
        created="2026-01-01T00:00:00+00:00",
        upskills_version="0.1.0",
    )
    out.mkdir(parents=True)
    (out / "run.json").write_text(manifest.model_dump_json())
    (out / "command.txt").write_text("upskills lift --synthetic\n")
    with (
        RecordWriter(out / "generations.jsonl") as g,
        RecordWriter(out / f"evaluations.{device}.jsonl") as e,
    ):
        for arm, per_case in outcomes.items():
            for case, task_name, _ in CASES:
                for i, speed in enumerate(per_case[case]):
                    key = sample_key("s", arm, case, i)
                    g.write(
                        GenerationRecord(
                            key=key,
                            student="s",
                            arm=arm,
                            case=case,
                            task=task_name,
                            split="heldout",
                            sample=i,
                            seed=i,
                            prompt_hash="h",
                            output_tokens=100,
                            input_tokens=1000,
                            latency_s=2.0,
                        )
                    )
                    e.write(
                        EvaluationRecord(
                            key=key,
                            passed=speed is not None,
                            error_class=None if speed is not None else "mismatch",
                            speedup_eager=speed if device == "cuda" else None,
                            device=device,
                            gpu="NVIDIA H200" if device == "cuda" else None,
                        )
                    )
    return out
