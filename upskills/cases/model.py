"""TestCase: one executable case a student is measured on, stored as YAML under ``testcases/``.

A case is self-contained: it carries the task's reference source and hash, the exact prompt the
student sees (task statement, reference, format instructions; never skill text), the shape
variants and dtypes it is judged on, tolerances, the technique tags it probes, its origin and
its split. Each YAML file begins with a ``# yaml-language-server: $schema=...`` comment naming
the committed JSON Schema (``upskills/schemas/testcase.schema.json``), so editors validate it and
the data itself holds only the case's fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from upskills.tasks.model import ShapeVariant, Task

SCHEMA_HEADER = "# yaml-language-server: $schema=../../upskills/schemas/testcase.schema.json"
"""First line of every case file (relative to ``testcases/<suite>/``)."""


Rung = Literal["write", "choose", "fill", "repair"]
"""Case ladder rungs, easiest to score first: choose, fill, repair, write."""
RUNGS: tuple[str, ...] = ("choose", "fill", "repair", "write")
"""Every rung, in report order."""
FILL_MARKER = "# >>> MISSING LINE <<<"
"""Marks the removed line in a ``fill`` case's template."""


class Choice(BaseModel):
    """One candidate line of a ``choose`` case, labelled by the verifier."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    line: str
    """The differing line (the span scored), without its newline."""
    correct: bool
    """Whether the kernel with this line passed the verifier."""
    bug: str | None = None
    """Bug class that made it (None for the verified original)."""
    message: str = ""
    """The verifier's message on the kernel with this line (truncated)."""


class CaseError(ValueError):
    """A case file is malformed (the message names the file and field) or a folder is missing."""


class TestCase(BaseModel):
    """An executable test case."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    id: str
    """Case id, unique within its suite (``row_sum``, ``row_sum-ragged``)."""
    task: str
    """Task name (a built-in name or the loaded problem's stem)."""
    task_hash: str
    """Content hash of the task the case was built from (``Task.hash``)."""
    task_source: str
    """The reference module's full source, so the case runs without the task suite."""
    statement: str = ""
    """The task's one-line statement."""
    prompt: str
    """The exact user prompt a student sees (no skill text)."""
    prompt_sha256: str = ""
    """sha256 (16 hex) of the package prompt template the prompt was rendered from."""
    variants: list[str] = Field(default_factory=list)
    """Shape variants the case is judged on (names of the task's variants)."""
    task_variants: list[ShapeVariant] = Field(default_factory=list)
    """All of the task's shape variants, so the task can be rebuilt from the case alone."""
    task_tags: list[str] = Field(default_factory=list)
    """The task's own category tags."""
    ragged: bool = False
    """True when the case probes only ragged shapes."""
    dtypes: list[str] = Field(default_factory=list)
    """Input dtypes."""
    atol: float | None = None
    """Absolute tolerance override (None: the verifier's dtype-aware default)."""
    rtol: float | None = None
    """Relative tolerance override (None: the verifier's dtype-aware default)."""
    tags: list[str] = Field(default_factory=list)
    """Category tags and technique tags (``technique:masking``) the case probes."""
    origin: list[str] = Field(default_factory=list)
    """Where the case came from: ``trace:<id>`` for each trace of its task, or ``builtin``."""
    split: Literal["train", "heldout"]
    """train: its task fed a skill in this distillation; heldout: it did not."""
    known_good: str | None = None
    """A kernel source known to pass (a trace's final kernel), proving the case solvable."""

    rung: Rung = "write"
    """Ladder rung: ``write`` a kernel, ``choose`` among candidates, ``fill`` a line, ``repair``."""
    family: str = ""
    """Family hash of ``task_source`` (``upskills.cases.family``); recomputed at lift time."""
    choices: list[Choice] = Field(default_factory=list)
    """``choose``: candidate lines at one place of a verified kernel, each verifier-labelled."""
    kernel_prefix: str = ""
    """``choose``/``fill``: the kernel text before the differing line."""
    kernel_suffix: str = ""
    """``choose``/``fill``: the kernel text after the differing line."""
    bug: str | None = None
    """``fill``/``repair``: the bug class the case is built around."""

    def candidate_source(self, line: str) -> str:
        """The whole kernel with ``line`` at the differing place (choose and fill cases)."""
        return self.kernel_prefix + line + "\n" + self.kernel_suffix

    def to_task(self) -> Task:
        """The task this case was built from, rebuilt from the case alone (same hash)."""
        return Task(
            name=self.task,
            statement=self.statement,
            tags=list(self.task_tags),
            dtypes=list(self.dtypes),
            source=self.task_source,
            variants=list(self.task_variants),
            origin="testcase",
            atol=self.atol,
            rtol=self.rtol,
        )


class _CaseDumper(yaml.SafeDumper):
    """Writes multi-line strings (sources, prompts) as literal blocks, so files read as code."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_CaseDumper.add_representer(str, _str)


def dump_case(case: TestCase) -> str:
    """YAML text of a case, with the schema header line."""
    data = case.model_dump(mode="json")
    body = yaml.dump(data, Dumper=_CaseDumper, sort_keys=False, allow_unicode=True, width=100)
    return SCHEMA_HEADER + "\n" + body


def read_case(path: str | Path) -> TestCase:
    """Load one case file.

    Raises:
        CaseError: not YAML, not a mapping, or a field is wrong (file, line and field named).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise CaseError(f"{path}{line}: invalid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise CaseError(f"{path}: a case file must be a YAML mapping")
    try:
        return TestCase.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise CaseError(f"{path}: field '{field}': {first['msg']}") from exc


def load_cases(path: str | Path) -> list[TestCase]:
    """Load every ``*.yaml`` case under a folder (recursively) or one file, sorted by id.

    Raises:
        CaseError: no such file or folder, or a malformed case.
    """
    path = Path(path)
    if path.is_file():
        return [read_case(path)]
    if not path.is_dir():
        raise CaseError(f"no test case file or folder at {path}")
    cases = [read_case(p) for p in sorted(path.rglob("*.yaml"))]
    return sorted(cases, key=lambda c: (c.id, c.task_hash))
