"""The student's prompt and the kernel extracted from its answer.

Every arm uses ``student_system.md`` with its block at the one ``{skill_block}`` place, and the
case's prompt as the user message; nothing else varies. The kernel is extracted by the rule
teacher runs use too (``upskills.core.markdown.extract_kernel``).
"""

from __future__ import annotations

from typing import Any

from upskills.core.markdown import extract_kernel, python_blocks
from upskills.lift.arms import text_hash
from upskills.prompts import load_prompt


def system_prompt(block: str) -> str:
    """The system prompt with ``block`` at the skill-block place."""
    return load_prompt("student_system").render(skill_block=block.strip())


def prompt_hash(system: str, user: str) -> str:
    """Hash of what the student was sent (system and user text)."""
    return text_hash(system + "\x00" + user)


def prompt_hashes() -> dict[str, str]:
    """Hashes of the package prompts a lift run uses (agent mode's write cases: the loop's)."""
    names = (
        "student_system",
        "student_skill_on_demand",
        "student_placebo",
        "teacher_system",
        "teacher_task",
    )
    return {name: load_prompt(name).sha256 for name in names}


def splice_line(case: Any, answer: str) -> str | None:
    """A ``fill`` answer put back into its kernel (None when it holds no code line).

    The first non-blank line of the answer's first fenced block (or of the answer, when it
    has none) is re-indented like the removed line and put in its place.

    Args:
        case: a ``fill`` case (``kernel_prefix``, ``kernel_suffix``, the removed line in
            ``choices[0]``).
        answer: the student's response.

    Returns:
        The whole kernel, or None.
    """
    blocks = python_blocks(answer)
    body = blocks[0] if blocks else answer
    removed = case.choices[0].line if case.choices else ""
    indent = removed[: len(removed) - len(removed.lstrip())]
    for raw in body.split("\n"):
        line = raw.strip()
        if line and not line.startswith(("```", "# >>>")):
            return case.kernel_prefix + indent + line + "\n" + case.kernel_suffix
    return None


__all__ = ["extract_kernel", "prompt_hash", "prompt_hashes", "splice_line", "system_prompt"]
