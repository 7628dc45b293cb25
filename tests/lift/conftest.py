"""Fixtures: a tiny lift experiment on disk (skill pack, traces, held-out cases, students)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

MOCK = Path(__file__).parent / "mock"
sys.path.insert(0, str(MOCK))

import replay  # noqa: E402

SKILL_MD = """---
name: gpu-test-skill
description: Masking ragged tails in elementwise Triton kernels (a test pack).
license: Apache-2.0
metadata:
  version: "1.0.0"
---

# Skill body

Mask every load and store with `offs < n`, and launch `triton.cdiv(n, BLOCK)` programs so the
tail block is covered.
"""


def _case(task_name: str) -> dict:
    from upskills.tasks import load_task

    task = load_task(task_name)
    return {
        "id": f"{task_name}-ragged",
        "task": task.name,
        "task_hash": task.hash,
        "task_source": task.source,
        "statement": task.statement,
        "prompt": f"TASK: {task.name}\n{task.statement}\n\n```python\n{task.source}```\n",
        "variants": ["ragged"],
        "ragged": True,
        "dtypes": list(task.dtypes),
        "tags": ["elementwise", "technique:masking"],
        "origin": ["builtin"],
        "split": "heldout",
    }


@pytest.fixture
def lift_env(tmp_path: Path) -> dict[str, Path]:
    """A skill pack, a trace for the excerpt arm, two held-out cases and a replay student."""
    import yaml

    skill = tmp_path / "skills" / "gpu-test-skill"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "references" / "provenance.json").write_text(
        json.dumps({"traces": [{"trace_id": "trace-aaa", "task": "row_sum", "task_hash": "x"}]})
    )
    traces = tmp_path / "traces"
    traces.mkdir()
    events = [
        {"event": "run_start", "trace_id": "trace-aaa", "task": "row_sum"},
        {"event": "model_call", "trace_id": "trace-aaa", "response_text": "masking the tail"},
        {"event": "run_end", "trace_id": "trace-aaa", "outcome": "solved"},
    ]
    (traces / "row_sum.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("relu", "vector_add"):
        data = _case(name)
        (cases / f"{data['id']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    students = tmp_path / "students"
    students.mkdir()
    (students / "replay.yaml").write_text(
        "name: replay\nprovider: replay\nmodel: known-kernels\n"
        "sampling: {temperature: 0.7, max_new_tokens: 64}\n"
    )
    return {
        "root": tmp_path,
        "skill": skill,
        "traces": traces,
        "cases": cases,
        "student": students / "replay.yaml",
    }


@pytest.fixture
def replay_registered():
    from upskills.llm import register_provider

    register_provider("replay", replay.provider)
    return replay
