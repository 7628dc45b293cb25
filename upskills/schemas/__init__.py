"""JSON Schemas of the on-disk artifacts, generated from the pydantic models.

``python -m upskills.schemas`` rewrites ``upskills/schemas/*.json``; a test fails when a committed
schema is stale. Models register here by dotted path so importing this module stays cheap.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

SCHEMAS: dict[str, str] = {
    "trace_event": "upskills.trace.events:TraceEvent",
    "verdict": "upskills.verify.verdict:Verdict",
    "task": "upskills.tasks.model:Task",
    "testcase": "upskills.cases.model:TestCase",
    "lesson": "upskills.distill.lessons:Lesson",
    "student": "upskills.lift.student:Student",
    "lift_generation": "upskills.lift.store:GenerationRecord",
    "lift_evaluation": "upskills.lift.store:EvaluationRecord",
    "lift_run": "upskills.lift.config:RunManifest",
    "lift_report": "upskills.report.model:Report",
    "session_state": "upskills.agent.session:SessionState",
}
"""Schema file stem -> ``module:attribute`` of a pydantic model or annotated union."""

SCHEMA_DIR = Path(__file__).parent
"""Where the generated schemas live (package data)."""


def schema_for(target: str) -> dict[str, Any]:
    """The JSON Schema (serialization mode, OTel aliases) of ``module:attribute``."""
    module, attr = target.split(":")
    obj = getattr(importlib.import_module(module), attr)
    return TypeAdapter(obj).json_schema(by_alias=True, mode="serialization")


def render(target: str) -> str:
    """The schema as committed text (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(schema_for(target), indent=2, sort_keys=True) + "\n"


def write_all(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Regenerate every registered schema file; returns the paths written."""
    written = []
    for stem, target in sorted(SCHEMAS.items()):
        path = directory / f"{stem}.schema.json"
        path.write_text(render(target), encoding="utf-8")
        written.append(path)
    return written
