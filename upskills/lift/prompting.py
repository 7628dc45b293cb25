"""The student's prompt and the kernel extracted from its answer.

Every arm uses ``student_system.md`` with its block at the one ``{skill_block}`` place, and the
case's prompt as the user message; nothing else varies. The kernel is the last fenced Python
block that defines ``ModelNew`` (or the longest fenced block when none does).
"""

from __future__ import annotations

import re

from upskills.lift.arms import text_hash
from upskills.prompts import load_prompt

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


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


def extract_kernel(text: str) -> str | None:
    """The candidate module in a response, or None.

    Args:
        text: the model's response.

    Returns:
        The source of the last fenced block defining ``ModelNew``; else the longest fenced
        Python block; else the whole response when it itself defines ``ModelNew``.
    """
    blocks = [
        (lang.lower(), body.strip())
        for lang, body in _FENCE.findall(text)
        if lang.lower() in ("", "python", "py", "python3")
    ]
    with_model = [body for _, body in blocks if "class ModelNew" in body]
    if with_model:
        return with_model[-1] + "\n"
    if blocks:
        body = max((b for _, b in blocks), key=len)
        return body + "\n" if body else None
    if "class ModelNew" in text:
        return text.strip() + "\n"
    return None
