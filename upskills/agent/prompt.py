"""The prompts of an agent run: the system prompt (hardware, format, skills) and the task turn.

Both come from package data (``teacher_system.md``, ``teacher_task.md``); their hashes go into
the trace's ``run_start``. Skills reach the model in one of three ways (``skills_mode``): not at
all, whole in the system prompt, or by name and description with a ``read_skill`` tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from upskills.agent.toolbox import SkillHandler, format_hardware, format_variants
from upskills.prompts import load_prompt
from upskills.tasks.model import Task

_CPU_NOTE = (
    "There is no GPU here: kernels are checked in Triton's interpreter on the CPU, for "
    "correctness only (no timing). Write Triton kernels; CUDA (load_inline) cannot run here."
)


@dataclass
class RunPrompts:
    """The rendered prompts of one run and the hashes of the files they came from."""

    system: str
    task: str
    hashes: dict[str, str] = field(default_factory=dict)
    skill_tool: tuple[Any, SkillHandler] | None = None


def build_prompts(
    task: Task,
    hw: Mapping[str, Any],
    device: str,
    *,
    skills: Sequence[Any] = (),
    skills_mode: str = "none",
    compact: bool = False,
    block: str = "",
) -> RunPrompts:
    """Render the system and task prompts.

    Args:
        task: the task.
        hw: hardware description (``describe_hardware``) of the verifier's device.
        device: the configured verifier device.
        skills: SkillPacks to attach.
        skills_mode: ``none``, ``inline`` or ``on_demand``.
        compact: inline the compact variant of each skill.
        block: a prepared skill block to inline as it is (a lift arm's skill, placebo or
            excerpt text), when ``skills`` are not inlined.

    Returns:
        The prompts, their hashes, and the ``read_skill`` tool when skills are on demand.
    """
    system_p, task_p = load_prompt("teacher_system"), load_prompt("teacher_task")
    is_cpu = device == "cpu" or hw.get("name") == "cpu"
    skills_block, tool_line, skill_tool = "", "", None
    if skills and skills_mode == "inline":
        skills_block = "\n## Skills\n\n" + inline_block(skills, compact=compact)
    elif block and skills_mode != "on_demand":
        skills_block = "\n## Skills\n\n" + block.strip()
    elif skills and skills_mode == "on_demand":
        skill_tool = skill_reader(skills)
        listing = "\n".join(f"- `{p.name}`: {p.description}" for p in skills)
        skills_block = (
            "\n## Skills available\n\nRead one with `read_skill(name)` when it may help:\n\n"
            + listing
        )
        tool_line = "- `read_skill(name, path?)`: a skill's instructions, or one of its files.\n"
    system = system_p.render(
        hardware=format_hardware(hw, device),
        device_note=_CPU_NOTE if is_cpu else "",
        skills_tool_line=tool_line,
        skills_block=skills_block,
    )
    task_text = task_p.render(
        task_name=task.name,
        statement=task.statement,
        source=task.source.rstrip(),
        variants=format_variants(task),
    )
    hashes = {system_p.name: system_p.sha256, task_p.name: task_p.sha256}
    return RunPrompts(
        system=re.sub(r"\n{3,}", "\n\n", system).rstrip() + "\n",
        task=task_text,
        hashes=hashes,
        skill_tool=skill_tool,
    )


def inline_block(packs: Sequence[Any], *, compact: bool = False) -> str:
    """The skills as one system-prompt block (``upskills.skills.attach`` when present)."""
    try:
        from upskills.skills.attach import system_prompt_block
    except ImportError:
        return "\n\n".join(_pack_body(p, compact) for p in packs)
    return system_prompt_block(list(packs), compact=compact)


def skill_reader(packs: Sequence[Any]) -> tuple[Any, SkillHandler]:
    """The ``read_skill`` tool (``upskills.skills.attach.read_skill_tool`` when present)."""
    try:
        from upskills.skills.attach import read_skill_tool
    except ImportError:
        return dict_skill_tool({p.name: _pack_body(p, False) for p in packs})
    return read_skill_tool(list(packs))


def dict_skill_tool(texts: Mapping[str, str]) -> tuple[Any, SkillHandler]:
    """A minimal ``read_skill`` over ``name -> text`` (no reference files)."""
    from upskills.llm.base import ToolSpec

    spec = ToolSpec(
        name="read_skill",
        description="Read the instructions of a skill by name.",
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Skill name."},
                "path": {"type": "string", "description": "A file inside the skill (optional)."},
            },
            "required": ["name"],
        },
    )

    def handler(arguments: dict[str, Any]) -> str:
        name = str(arguments.get("name"))
        if name not in texts:
            raise KeyError(f"no skill named {name!r}; skills: {', '.join(sorted(texts))}")
        if arguments.get("path"):
            raise FileNotFoundError(f"skill {name!r} has no file {arguments['path']!r}")
        return texts[name]

    return spec, handler


def _pack_body(pack: Any, compact: bool) -> str:
    body = (getattr(pack, "compact_body", None) if compact else None) or pack.body
    return f"### {pack.name}\n\n{body}"
