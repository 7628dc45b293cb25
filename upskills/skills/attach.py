"""Give skills to a runtime agent: whole in the system prompt, or on demand through a tool.

``system_prompt_block`` inlines each pack's SKILL.md body (or its compact variant) in
``<skill>`` tags; ``read_skill_tool`` returns the ``read_skill`` tool spec and a handler that
serves a pack's body, or any file inside the pack, and nothing outside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from upskills.skills.pack import SkillPack

SkillHandler = Callable[[dict[str, Any]], str]
"""Handler of ``read_skill``: the tool's arguments in, text out."""


def _body(pack: SkillPack, compact: bool) -> str:
    if compact and pack.compact_body:
        return pack.compact_body.strip()
    return pack.body.strip()


def system_prompt_block(packs: Sequence[SkillPack], compact: bool = False) -> str:
    """The packs as one block for a system prompt.

    Args:
        packs: the packs to inline, in order.
        compact: use each pack's compact variant when it has one (for small students).

    Returns:
        ``<skill name=... version=...>`` sections, one per pack; empty for no packs.
    """
    parts = [
        f'<skill name="{p.name}" version="{p.version}">\n{_body(p, compact)}\n</skill>'
        for p in packs
    ]
    return "\n\n".join(parts)


def skills_index_block(packs: Sequence[SkillPack]) -> str:
    """Names and descriptions only, for progressive disclosure with ``read_skill``."""
    return "\n".join(f"- `{p.name}`: {p.description}" for p in packs)


def _read_file(pack: SkillPack, rel: str) -> str:
    root = pack.path.resolve()
    target = (root / rel).resolve()
    if root != target and root not in target.parents:
        raise ValueError(f"path {rel!r} is outside skill {pack.name!r}")
    if not target.is_file():
        files = ", ".join(f for f in pack.files() if f != "SKILL.md")
        raise FileNotFoundError(f"skill {pack.name!r} has no file {rel!r}; files: {files}")
    return target.read_text(encoding="utf-8", errors="replace")


def read_skill_tool(packs: Sequence[SkillPack]) -> tuple[Any, SkillHandler]:
    """The ``read_skill`` tool over ``packs``.

    Returns:
        ``(ToolSpec, handler)``. The handler takes ``{"name": ..., "path": optional}`` and
        returns the pack's SKILL.md body followed by its file list, or the named file's text.
        It raises ``KeyError`` for an unknown skill, ``FileNotFoundError`` for a missing file
        and ``ValueError`` for a path outside the pack.
    """
    from upskills.llm.base import ToolSpec

    by_name = {p.name: p for p in packs}
    spec = ToolSpec(
        name="read_skill",
        description=(
            "Read a skill's instructions by name, or one of its files (references/..., "
            "scripts/...) with `path`."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": sorted(by_name), "description": "Skill name."},
                "path": {
                    "type": "string",
                    "description": "A file inside the skill, e.g. references/lessons.md.",
                },
            },
            "required": ["name"],
        },
    )

    def handler(arguments: dict[str, Any]) -> str:
        name = arguments.get("name")
        if name not in by_name:
            raise KeyError(f"no skill named {name!r}; skills: {', '.join(sorted(by_name))}")
        pack = by_name[name]
        path = arguments.get("path")
        if path:
            return _read_file(pack, str(path))
        files = [f for f in pack.files() if f != "SKILL.md"]
        listing = "\n".join(f"- {f}" for f in files)
        return pack.body.strip() + (f"\n\nFiles in this skill:\n{listing}\n" if files else "\n")

    return spec, handler
