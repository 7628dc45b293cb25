"""Install packs where runtime agents look for skills.

Targets: ``claude`` (``<project>/.claude/skills/``, Claude Code), ``agents``
(``<project>/.agents/skills/``, the cross-agent location) or any folder. Each pack is copied whole
(it holds one version; older versions stay in the source's version store) into a temporary
sibling and renamed into place, so a failed copy never leaves a half-installed skill.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from upskills.skills.pack import PackError, SkillPack

TARGETS = {"claude": Path(".claude") / "skills", "agents": Path(".agents") / "skills"}
"""Named install targets, relative to the project folder."""


def target_dir(target: str, project_dir: str | Path = ".") -> Path:
    """The folder a target names: ``claude``, ``agents``, or a path."""
    if target in TARGETS:
        return Path(project_dir) / TARGETS[target]
    return Path(target)


def install_packs(
    packs: Sequence[SkillPack],
    target: str,
    *,
    project_dir: str | Path = ".",
    force: bool = False,
) -> list[Path]:
    """Copy ``packs`` into the target's skills folder.

    Args:
        packs: packs to install.
        target: ``claude``, ``agents`` or a folder path.
        project_dir: the project the named targets are relative to.
        force: replace a pack already installed under the same name.

    Returns:
        The installed pack folders.

    Raises:
        PackError: a pack is already installed there and ``force`` is not set.
    """
    dest_root = target_dir(target, project_dir)
    dest_root.mkdir(parents=True, exist_ok=True)
    installed: list[Path] = []
    for pack in packs:
        dest = dest_root / pack.name
        if dest.exists() and not force:
            raise PackError(f"{dest} already exists; pass --force to replace it")
        staging = Path(tempfile.mkdtemp(prefix=f".{pack.name}.", dir=dest_root))
        try:
            shutil.copytree(pack.path, staging / pack.name)
            if dest.exists():
                shutil.rmtree(dest)
            (staging / pack.name).rename(dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        installed.append(dest)
    return installed
