"""Skill packs: load, resolve by version, validate, diff, install, and attach to agents."""

from upskills.skills.pack import (
    PackError,
    SkillPack,
    load_pack,
    load_packs,
    resolve_pack,
    validate_pack,
)

__all__ = ["PackError", "SkillPack", "load_pack", "load_packs", "resolve_pack", "validate_pack"]
