"""SkillPack: an Agent Skills folder on disk, loaded, resolved by version, and validated.

Layout of a skills folder (see docs/design/skills.md)::

    skills/<name>/SKILL.md                  the current version (frontmatter + body)
    skills/<name>/references/compact.md     compact variant for small students
    skills/<name>/references/provenance.json
    skills/<name>/references/lessons.json   the typed lessons behind the pack
    skills/<name>/scripts/*.py              runnable kernel templates
    skills/.versions/<name>/<version>/<name>/   every version ever written, whole

Old versions sit in a hidden sibling store so each pack folder holds exactly one version, can be
copied anywhere as-is, and ``upskills skills validate skills/`` sees only current packs.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from upskills.skills.provenance import Provenance
from upskills.skills.tokens import (
    COMPACT_TOKEN_BUDGET,
    SKILL_TOKEN_BUDGET,
    estimate_tokens,
    section_tokens,
)
from upskills.core.markdown import split_front_matter

VERSIONS_DIR = ".versions"
"""Name of the hidden folder, beside the packs, that keeps every version."""

ALLOWED_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
"""Frontmatter keys of the Agent Skills specification."""

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
"""A valid skill name: lowercase letters and digits, single hyphens inside, at most 64 chars."""

SEMVER_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
"""``MAJOR.MINOR.PATCH``."""


class PackError(ValueError):
    """A skill pack is missing, malformed, or a reference to one does not resolve."""


class SkillPack(BaseModel):
    """One skill pack as loaded from disk."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Skill name (equals its folder name)."""
    description: str
    """When to use the skill (frontmatter ``description``)."""
    version: str
    """Semver from ``metadata.version``; ``0.0.0`` for a hand-written pack without one."""
    path: Path
    """The pack folder."""
    body: str
    """SKILL.md without its frontmatter."""
    compact_body: str | None = None
    """The compact variant (``references/compact.md``), when the pack has one."""
    frontmatter: dict[str, Any] = Field(default_factory=dict[str, Any])
    """The parsed frontmatter."""
    provenance: Provenance | None = None
    """``references/provenance.json``, when present."""

    @property
    def ref(self) -> str:
        """``name@version``."""
        return f"{self.name}@{self.version}"

    def files(self) -> list[str]:
        """Relative paths of every file in the pack, sorted."""
        return sorted(
            p.relative_to(self.path).as_posix() for p in self.path.rglob("*") if p.is_file()
        )


def validate_name(name: str) -> str:
    """Return ``name`` if it is a valid skill name, else raise ``PackError`` saying why."""
    if not (0 < len(name) <= 64) or not NAME_RE.match(name):
        raise PackError(
            f"{name!r} is not a valid skill name: use 1-64 lowercase letters, digits and single "
            "hyphens, not at the start or end (e.g. 'triton-reductions')"
        )
    return name


def split_frontmatter(text: str, where: str = "SKILL.md") -> tuple[dict[str, Any], str]:
    """Split SKILL.md text into its parsed frontmatter and body (Markdown front matter parser).

    Raises:
        PackError: no frontmatter, or it is not a YAML mapping.
    """
    if not text.startswith("---"):
        raise PackError(f"{where}:1: SKILL.md must start with YAML frontmatter ('---')")
    front, body = split_front_matter(text)
    if front is None:
        raise PackError(f"{where}: frontmatter is not closed with '---'")
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        raise PackError(f"{where}: invalid YAML in frontmatter: {exc}") from exc
    if not isinstance(data, dict):
        raise PackError(f"{where}: frontmatter must be a YAML mapping")
    return cast(dict[str, Any], data), body


def load_pack(path: str | Path) -> SkillPack:
    """Load the pack in folder ``path``.

    Raises:
        PackError: no such folder, no SKILL.md, or its frontmatter is malformed.
    """
    path = Path(path)
    skill_md = path / "SKILL.md"
    if not path.is_dir():
        raise PackError(f"no skill pack folder at {path}")
    if not skill_md.is_file():
        raise PackError(f"{path}: missing SKILL.md")
    front, body = split_frontmatter(skill_md.read_text(encoding="utf-8"), str(skill_md))
    for key in ("name", "description"):
        if not isinstance(front.get(key), str) or not front[key].strip():
            raise PackError(f"{skill_md}: frontmatter field '{key}' must be a non-empty string")
    raw_meta = front.get("metadata")
    meta = cast(dict[str, Any], raw_meta) if isinstance(raw_meta, dict) else {}
    compact = path / "references" / "compact.md"
    prov = path / "references" / "provenance.json"
    provenance = None
    if prov.is_file():
        try:
            provenance = Provenance.model_validate(json.loads(prov.read_text(encoding="utf-8")))
        except json.JSONDecodeError as exc:
            raise PackError(f"{prov}:{exc.lineno}: invalid JSON ({exc.msg})") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise PackError(f"{prov}: {where}: {first['msg']}") from None
    return SkillPack(
        name=front["name"].strip(),
        description=front["description"].strip(),
        version=str(meta.get("version", "0.0.0")),
        path=path,
        body=body,
        compact_body=compact.read_text(encoding="utf-8") if compact.is_file() else None,
        frontmatter=front,
        provenance=provenance,
    )


def pack_dirs(skills_dir: str | Path) -> list[Path]:
    """Current pack folders under ``skills_dir`` (hidden folders, like the version store, skipped).

    Raises:
        PackError: ``skills_dir`` is not a readable folder.
    """
    root = Path(skills_dir)
    if not root.is_dir():
        raise PackError(f"no skills folder at {root}")
    if (root / "SKILL.md").is_file():
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def load_packs(skills_dir: str | Path) -> list[SkillPack]:
    """Load every current pack under ``skills_dir`` (or the single pack it is), sorted by name."""
    return [load_pack(p) for p in pack_dirs(skills_dir)]


def version_key(version: str) -> tuple[int, int, int]:
    """Sort key of a semver string (``PackError`` when it is not ``MAJOR.MINOR.PATCH``)."""
    match = SEMVER_RE.match(version)
    if not match:
        raise PackError(f"{version!r} is not a semver version (MAJOR.MINOR.PATCH)")
    return int(match[1]), int(match[2]), int(match[3])


def versions(name: str, skills_dir: str | Path = "skills") -> list[str]:
    """Every stored version of pack ``name``, oldest first (the current one included)."""
    root = Path(skills_dir)
    found: set[str] = set()
    store = root / VERSIONS_DIR / name
    if store.is_dir():
        found |= {p.name for p in store.iterdir() if (p / name / "SKILL.md").is_file()}
    if (root / name / "SKILL.md").is_file():
        found.add(load_pack(root / name).version)
    return sorted((v for v in found if SEMVER_RE.match(v)), key=version_key)


def resolve_pack(ref: str | Path, skills_dir: str | Path = "skills") -> SkillPack:
    """Find a pack by path, ``name`` (current version) or ``name@version``.

    Args:
        ref: a pack folder, a name, or ``name@version``.
        skills_dir: where names are looked up.

    Raises:
        PackError: the reference does not resolve; the message lists what exists.
    """
    if Path(ref).is_dir() and (Path(ref) / "SKILL.md").is_file():
        return load_pack(ref)
    name, _, version = str(ref).partition("@")
    validate_name(name)
    root = Path(skills_dir)
    current = root / name
    if not version:
        if not (current / "SKILL.md").is_file():
            raise PackError(f"no skill named {name!r} in {root}")
        return load_pack(current)
    if (current / "SKILL.md").is_file():
        pack = load_pack(current)
        if pack.version == version:
            return pack
    stored = root / VERSIONS_DIR / name / version / name
    if (stored / "SKILL.md").is_file():
        return load_pack(stored)
    known = ", ".join(versions(name, root)) or "none"
    raise PackError(f"no version {version!r} of skill {name!r} in {root} (versions: {known})")


def _check_frontmatter(front: dict[str, Any], folder: str) -> list[str]:
    errors = [
        f"frontmatter key {k!r} is not an Agent Skills key" for k in front if k not in ALLOWED_KEYS
    ]
    name = front.get("name")
    if isinstance(name, str):
        try:
            validate_name(name)
        except PackError as exc:
            errors.append(str(exc))
        if name != folder:
            errors.append(f"folder name {folder!r} must equal the skill name {name!r}")
    desc = front.get("description")
    if isinstance(desc, str) and len(desc) > 1024:
        errors.append(f"description is {len(desc)} characters (at most 1024)")
    raw_meta = front.get("metadata")
    if raw_meta is not None:
        if not isinstance(raw_meta, dict):
            errors.append("'metadata' must be a mapping of strings")
        else:
            meta = cast(dict[str, Any], raw_meta)
            errors += [
                f"metadata.{k} must be a string" for k, v in meta.items() if not isinstance(v, str)
            ]
            version = meta.get("version")
            if version is not None and not SEMVER_RE.match(str(version)):
                errors.append(f"metadata.version {version!r} is not semver (MAJOR.MINOR.PATCH)")
    return errors


def validate_pack(path: str | Path) -> list[str]:
    """Check a pack: Agent Skills rules (via ``skills-ref`` when installed), budgets, scripts.

    Returns:
        Error messages, each naming the file; empty when the pack is valid.
    """
    path = Path(path)
    try:
        pack = load_pack(path)
    except PackError as exc:
        return [str(exc)]
    skill_md = path / "SKILL.md"
    errors = [f"{skill_md}: {e}" for e in _check_frontmatter(pack.frontmatter, path.name)]
    tokens = estimate_tokens(skill_md.read_text(encoding="utf-8"))
    if tokens > SKILL_TOKEN_BUDGET:
        largest = sorted(section_tokens(pack.body), key=lambda x: -x[1])[:3]
        where = ", ".join(f"'{title}' {n}" for title, n in largest)
        errors.append(
            f"{skill_md}: about {tokens} tokens, over the {SKILL_TOKEN_BUDGET} budget "
            f"(largest sections: {where})"
        )
    if pack.compact_body is not None:
        tokens = estimate_tokens(pack.compact_body)
        if tokens > COMPACT_TOKEN_BUDGET:
            errors.append(
                f"{path / 'references' / 'compact.md'}: about {tokens} tokens, over the "
                f"{COMPACT_TOKEN_BUDGET} budget"
            )
    for script in sorted((path / "scripts").glob("*.py")):
        try:
            ast.parse(script.read_text(encoding="utf-8"))
        except SyntaxError as exc:
            errors.append(f"{script}:{exc.lineno}: does not parse ({exc.msg})")
    try:
        from skills_ref.validator import (  # pyright: ignore[reportMissingTypeStubs]
            validate as skills_ref_validate,
        )
    except ImportError:
        return errors
    errors += [f"{skill_md}: agentskills: {e}" for e in skills_ref_validate(path)]
    return errors
