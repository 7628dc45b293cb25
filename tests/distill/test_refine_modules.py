"""``upskills refine`` from a lift run's train failures, and ``lift --ablate-modules``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from upskills.tasks import load_task

MOCK = Path(__file__).parents[1] / "lift" / "mock"

SKILL = """---
name: {name}
description: Masking ragged tails in elementwise Triton kernels (a test pack).
license: Apache-2.0
metadata:
  version: "1.0.0"
---

# Test pack

## Masking

Mask every load and store with `offs < n`, and launch `triton.cdiv(n, BLOCK)` programs.

## Extra advice

{extra}

## Checklist

- [ ] Ragged sizes are masked.
"""


def _pack(root: Path, name: str = "gpu-test-skill", extra: str = "Keep kernels simple.") -> Path:
    folder = root / "skills" / name
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL.format(name=name, extra=extra))
    return folder


def _run_with_failures(root: Path) -> Path:
    """A lift run folder written record by record (fixture data, not a measurement): the skill
    arm fails the train case ``relu`` with an interface error, twice; held-out ``vector_add``
    failures must not be read."""
    from upskills.lift.arms import Arm
    from upskills.lift.config import CaseInfo, LiftConfig, RunManifest
    from upskills.lift.store import EvaluationRecord, GenerationRecord, RecordWriter

    run = root / "run"
    run.mkdir()
    cases = [
        CaseInfo(
            id=n, task=n, task_hash=load_task(n).hash, split=s, prompt="p", task_def=load_task(n)
        )
        for n, s in (("relu", "train"), ("vector_add", "heldout"))
    ]
    manifest = RunManifest(
        config=LiftConfig(out=str(run), students=["s.yaml"], cases=["c"], samples=2),
        arms=[Arm(name="gpu-test-skill@1.0.0", kind="inline", skill="gpu-test-skill@1.0.0")],
        cases=cases,
        students=[],
        prompt_hashes={},
        token_counter="estimate",
        created="",
        upskills_version="0",
    )
    (run / "run.json").write_text(manifest.model_dump_json())
    with (
        RecordWriter(run / "generations.jsonl") as g,
        RecordWriter(run / "evaluations.cpu.jsonl") as e,
    ):
        for case, cls in (("relu", "interface"), ("vector_add", "guard")):
            for i in range(2):
                key = f"s/gpu-test-skill@1.0.0/{case}/{i}"
                g.write(
                    GenerationRecord(
                        key=key,
                        student="s",
                        arm="gpu-test-skill@1.0.0",
                        case=case,
                        task=case,
                        split="train" if case == "relu" else "heldout",
                        sample=i,
                        seed=i,
                        prompt_hash="x",
                    )
                )
                e.write(
                    EvaluationRecord(
                        key=key,
                        passed=False,
                        error_class=cls,
                        device="cpu",
                        message="ModelNew.forward() takes 1 positional argument but 2 were given",
                    )
                )
    return run


def test_refine_addresses_train_failures_with_the_exact_interface(tmp_path):
    from upskills.lift.refine import refine
    from upskills.skills.pack import load_pack, resolve_pack

    _pack(tmp_path)
    run = _run_with_failures(tmp_path)
    result = refine("gpu-test-skill", run, tmp_path / "skills")
    assert result.new_version == "1.1.0" and result.train_samples == 2
    assert [(f.error_class, f.count) for f in result.failures] == [("interface", 2)]
    pack = load_pack(tmp_path / "skills" / "gpu-test-skill")
    assert pack.version == "1.1.0"
    section = pack.body.split("## Lessons from student failures")[1].split("## Checklist")[0]
    assert "`relu`: `class ModelNew(nn.Module):  def __init__(self)" in section
    assert "def forward(self, x: torch.Tensor)" in section
    assert "guard" not in section  # held-out failures are never read
    assert resolve_pack("gpu-test-skill@1.0.0", tmp_path / "skills").version == "1.0.0"
    assert "SKILL.md diff" in (pack.path / "references" / "refinement.md").read_text()
    assert "--cases" in result.rerun_command and "gpu-test-skill@1.1.0" in result.rerun_command
    again = refine("gpu-test-skill", run, tmp_path / "skills")  # a re-run replaces the section
    body = load_pack(tmp_path / "skills" / "gpu-test-skill").body
    assert again.new_version == "1.2.0" and body.count("## Lessons from student failures") == 1


@pytest.fixture
def planted_student(tmp_path):
    """TEST DOUBLE student: the known-good relu kernel, unless its prompt holds the planted
    harmful advice, in which case the broken one (so that advice measurably hurts)."""
    sys.path.insert(0, str(MOCK))
    import replay

    from upskills.llm import register_provider
    from upskills.llm.mock import MockProvider

    def answer(messages, tools):
        kernel = replay.BROKEN if "PLANTED" in messages[0].content else replay.GOOD
        return f"```python\n{kernel['relu']}```\n"

    register_provider("planted", lambda model, **kw: MockProvider(fn=answer, model=model))
    path = tmp_path / "planted.yaml"
    path.write_text("name: planted\nprovider: planted\nmodel: m\nsampling: {max_new_tokens: 8}\n")
    return path


def test_ablate_modules_flags_a_planted_harmful_section(tmp_path, planted_student):
    import yaml

    from upskills.lift.ablate_modules import ablate_modules
    from upskills.lift.config import LiftConfig

    pack = _pack(tmp_path, extra="PLANTED: launch n // BLOCK programs, tails take care of it.")
    task = load_task("relu")
    cases = tmp_path / "cases"
    cases.mkdir()
    case = {
        "id": "relu-ragged",
        "task": "relu",
        "task_hash": task.hash,
        "task_source": task.source,
        "prompt": "TASK: relu",
        "variants": ["ragged"],
        "split": "heldout",
    }
    (cases / "relu.yaml").write_text(yaml.safe_dump(case))
    config = LiftConfig(
        out=str(tmp_path / "out"),
        students=[str(planted_student)],
        skills=[str(pack)],
        cases=[str(cases)],
        samples=1,
        arms=["baseline", "inline"],
        device="cpu",
        progress=False,
    )
    report = ablate_modules(config)
    by = {s.heading: s for s in report.sections}
    assert report.full_pass_rate == 0.0 and report.baseline_pass_rate == 1.0
    assert by["Extra advice"].verdict == "hurts" and by["Extra advice"].delta == -1.0
    assert by["Masking"].verdict == "neutral" and by["Checklist"].verdict == "neutral"
    assert report.harmful == ["Extra advice"]
    assert "hurts" in (tmp_path / "out" / "modules.md").read_text()
