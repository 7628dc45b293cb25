"""The student's prompt and the kernel extracted from its answer.

Every arm uses ``student_system.md`` with its block at the one ``{skill_block}`` place, and the
case's prompt as the user message; nothing else varies. The kernel is extracted by the rule
teacher runs use too (``upskills.core.markdown.extract_kernel``).
"""

from __future__ import annotations

from upskills.core.markdown import extract_kernel
from upskills.lift.arms import text_hash
from upskills.prompts import load_prompt


def system_prompt(block: str) -> str:
    """The system prompt with ``block`` at the skill-block place."""
    return load_prompt("student_system").render(skill_block=block.strip())


def prompt_hash(system: str, user: str) -> str:
    """Hash of what the student was sent (system and user text)."""
    return text_hash(system + "\x00" + user)


def prompt_hashes() -> dict[str, str]:
    """Hashes of the package prompts a lift run uses."""
    names = ("student_system", "student_skill_on_demand", "student_placebo", "student_feedback")
    return {name: load_prompt(name).sha256 for name in names}


__all__ = ["extract_kernel", "prompt_hash", "prompt_hashes", "system_prompt"]
