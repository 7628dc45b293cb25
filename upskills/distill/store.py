"""Versioned, atomic writes of packs (and case suites) into their folders.

Version rules (docs/design/skills.md), comparing the new rendering with the current pack:

- same bytes (with the version line held equal): unchanged, nothing is written;
- a lesson that was in SKILL.md is gone from it: **major**;
- the evidence changed (a trace added or removed): **minor**;
- anything else (prose, distiller or prompt version): **patch**.

A pack is first rendered into a staging folder beside the destination, validated, copied into
the version store, and only then swapped in with two renames; on any failure the staging
folder is removed and the skills folder is left as it was.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from upskills.skills.pack import VERSIONS_DIR, load_pack, version_key, versions
from upskills.skills.provenance import Provenance

FIRST_VERSION = "1.0.0"
"""Version of a pack written for the first time."""


def bump(version: str, part: str) -> str:
    """Bump ``part`` (major, minor, patch) of a semver string."""
    major, minor, patch = version_key(version)
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def _read_files(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _skill_body_ids(files: Mapping[str, str]) -> set[str]:
    text = files.get("references/lessons.json")
    return set(json.loads(text).get("skill_body", [])) if text else set()


def _evidence(files: Mapping[str, str]) -> str:
    text = files.get("references/provenance.json")
    return Provenance.model_validate_json(text).evidence_sha256 if text else ""


def next_version(
    current: Path, render: Callable[[str], dict[str, str]]
) -> tuple[str, str, dict[str, str]]:
    """Decide the version of a re-rendered pack.

    Args:
        current: the current pack folder (may not exist).
        render: renders every file of the pack for a given version.

    Returns:
        ``(version, change, files)`` where change is ``created``, ``unchanged``, ``major``,
        ``minor`` or ``patch``.
    """
    if not (current / "SKILL.md").is_file():
        # a pack retired earlier and now written again continues its line: the next major
        # after the last archived version (an archive is never overwritten)
        earlier = versions(current.name, current.parent)
        first = bump(earlier[-1], "major") if earlier else FIRST_VERSION
        return first, "created", render(first)
    old_version = load_pack(current).version
    old = _read_files(current)
    same_version = render(old_version)
    if same_version == old:
        return old_version, "unchanged", same_version
    if _skill_body_ids(old) - _skill_body_ids(same_version):
        part = "major"
    elif _evidence(old) != _evidence(same_version):
        part = "minor"
    else:
        part = "patch"
    version = bump(old_version, part)
    return version, part, render(version)


def write_tree(folder: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative path -> text) under ``folder``."""
    for rel, text in sorted(files.items()):
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def staging_dir(root: Path) -> Path:
    """A fresh hidden staging folder inside ``root`` (same file system, so renames are atomic)."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".staging-", dir=root))


def swap_in(staged: Path, dest: Path, trash: Path) -> None:
    """Replace ``dest`` by ``staged`` with two renames (the old folder goes to ``trash``)."""
    if dest.exists():
        dest.rename(trash / f"old-{dest.name}")
    staged.rename(dest)


def archive_version(skills_dir: Path, staged: Path, name: str, version: str) -> Path:
    """Copy a staged pack into ``.versions/<name>/<version>/<name>`` (idempotent)."""
    dest = skills_dir / VERSIONS_DIR / name / version / name
    if dest.exists():
        shutil.rmtree(dest.parent)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dest.parent))
    shutil.copytree(staged, tmp / name)
    (tmp / name).rename(dest)
    tmp.rmdir()
    return dest
