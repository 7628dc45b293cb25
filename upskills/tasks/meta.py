"""Task metadata files: the built-in ``suite.yaml`` and per-file ``<name>.yaml`` sidecars.

Both use one schema per task (:class:`TaskMeta`): ``statement``, ``tags``, ``dtypes``,
``variants`` and optional ``atol``/``rtol``. A suite file maps task names to entries under
``tasks:``; a sidecar is a single entry. Errors name the file, the YAML line and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from upskills.tasks.model import CATEGORIES, ShapeVariant
from upskills.tasks.source import KNOWN_DTYPES, TaskError


class TaskMeta(BaseModel):
    """Metadata of one task, as written in ``suite.yaml`` or a sidecar ``<name>.yaml``."""

    model_config = ConfigDict(extra="forbid")

    statement: str | None = None
    """One line: what the kernel computes, naming dtypes (default: docstring or file name)."""
    tags: list[str] | None = None
    """Category tags from ``CATEGORIES`` (default: inferred from the file name)."""
    dtypes: list[str] | None = None
    """Torch dtype names, inputs first (default: those the source names, else ``float32``)."""
    variants: list[ShapeVariant] = Field(default_factory=list)
    """Shape variants; when given, exactly one has ``main: true``."""
    atol: float | None = None
    """Absolute tolerance override for the verifier."""
    rtol: float | None = None
    """Relative tolerance override for the verifier."""
    domains: list[str] = Field(default_factory=list)
    """Adversarial input domains the reference defines (``upskills.verify.domains.DOMAINS``)."""
    ranges: dict[str, list[int]] = Field(default_factory=dict)
    """Size global -> ``[low, high]``: where the verifier draws a random shape per check."""

    @field_validator("domains")
    @classmethod
    def _known_domains(cls, value: list[str]) -> list[str]:
        from upskills.tasks.model import INPUT_DOMAINS

        for domain in value:
            if domain not in INPUT_DOMAINS:
                raise ValueError(f"unknown domain {domain!r}; known: {', '.join(INPUT_DOMAINS)}")
        return value

    @field_validator("ranges")
    @classmethod
    def _valid_ranges(cls, value: dict[str, list[int]]) -> dict[str, list[int]]:
        for name, pair in value.items():
            if len(pair) != 2 or not 1 <= pair[0] <= pair[1]:
                raise ValueError(f"range of {name!r} must be [low, high] with 1 <= low <= high")
        return value

    @field_validator("statement")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or "\n" in value.strip()):
            raise ValueError("statement must be a single non-empty line")
        return value.strip() if value is not None else None

    @field_validator("tags")
    @classmethod
    def _known_tags(cls, value: list[str] | None) -> list[str] | None:
        for tag in value or []:
            if tag not in CATEGORIES:
                raise ValueError(f"unknown tag {tag!r}; known tags: {', '.join(CATEGORIES)}")
        return value

    @field_validator("dtypes")
    @classmethod
    def _known_dtypes(cls, value: list[str] | None) -> list[str] | None:
        for dtype in value or []:
            if dtype not in KNOWN_DTYPES:
                raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(KNOWN_DTYPES)}")
        return value

    @field_validator("variants")
    @classmethod
    def _one_main(cls, value: list[ShapeVariant]) -> list[ShapeVariant]:
        if not value:
            return value
        names = [v.name for v in value]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate variant names: {', '.join(duplicates)}")
        mains = [v.name for v in value if v.main]
        if not mains:
            raise ValueError("no main variant: mark exactly one variant `main: true`")
        if len(mains) > 1:
            raise ValueError(f"more than one main variant: {', '.join(mains)}")
        return value


class SuiteFile(BaseModel):
    """A ``suite.yaml``: metadata for the tasks of one folder, keyed by file stem."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this file's layout."""
    tasks: dict[str, TaskMeta]
    """Task name (the ``<name>.py`` beside this file) -> its metadata."""


M = TypeVar("M", bound=BaseModel)

SUITE_REQUIRED = ("statement", "tags", "dtypes", "variants")
"""Fields every ``suite.yaml`` entry must give (a sidecar may leave them to the defaults)."""


def read_suite(path: Path) -> dict[str, TaskMeta]:
    """Read and validate a ``suite.yaml``.

    Args:
        path: the YAML file.

    Returns:
        Task name -> metadata, in file order.

    Raises:
        TaskError: invalid YAML, an unknown key, an unknown tag or dtype, a task without
            a main variant, or a missing required field; the message gives file, line, field.
    """
    data, root = _load_yaml(path)
    suite = _validate(SuiteFile, data, root, path)
    for name, meta in suite.tasks.items():
        missing = [f for f in SUITE_REQUIRED if not getattr(meta, f)]
        if missing:
            line = _line_of(root, ("tasks", name))
            raise TaskError(f"task {name!r}: missing or empty {', '.join(missing)}", path, line)
    return suite.tasks


def read_sidecar(path: Path) -> TaskMeta:
    """Read and validate a sidecar ``<name>.yaml`` (one :class:`TaskMeta`, all fields optional).

    Raises:
        TaskError: invalid YAML or an invalid field, naming file, line and field.
    """
    data, root = _load_yaml(path)
    return _validate(TaskMeta, data if data is not None else {}, root, path)


def _load_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse ``path`` to data and to its node tree (the tree gives line numbers)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskError(f"cannot read: {exc.strerror}", path) from None
    try:
        return yaml.safe_load(text), yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise TaskError(f"invalid YAML: {getattr(exc, 'problem', exc)}", path, line) from None


def _validate(model: type[M], data: Any, root: yaml.Node | None, path: Path) -> M:
    """Validate ``data`` as ``model``; turn the first pydantic error into a TaskError."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        field = ".".join(str(p) for p in loc) or "(top level)"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = f"unknown key {loc[-1]!r}"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise TaskError(f"field {field}: {message}{more}", path, _line_of(root, loc)) from None


def _line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest YAML node on the path ``loc`` (None when unknown)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    child = key if part == loc[-1] else value
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                child = node.value[part]
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line
