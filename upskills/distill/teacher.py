"""Optional prose rewrite of SKILL.md bodies by a teacher model, from the same evidence.

The model sees the deterministic body and the lessons behind it (prompt ``distill_rewrite``,
package data) and returns a new body. The rewrite is accepted only if it keeps the required
sections, every code block byte for byte, every cited trace id and file path, and the size
budget; otherwise the deterministic body is kept and a warning says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from upskills.distill.render import PackPlan, render_skill_body
from upskills.skills.tokens import CHARS_PER_TOKEN, SKILL_TOKEN_BUDGET

REQUIRED_HEADINGS = ("## When to use", "## Techniques", "## Pitfalls", "## Checklist", "## Files")
"""Sections a rewritten body must keep."""

_FENCE = re.compile(r"```[a-z]*\n.*?```", re.S)
_CITED = re.compile(r"`([0-9a-f]{8,64})`|((?:references|scripts)/[\w./-]+)")


def _unwrap(text: str) -> str:
    text = text.strip()
    match = re.fullmatch(r"```(?:markdown|md)?\n(.*)\n```", text, re.S)
    return (match.group(1) if match else text).strip() + "\n"


def check_rewrite(original: str, rewrite: str, max_chars: int) -> str | None:
    """Why ``rewrite`` is not an acceptable replacement for ``original`` (None if it is)."""
    if rewrite.lstrip().startswith("---"):
        return "it adds frontmatter"
    if len(rewrite) > max_chars:
        return f"it is {len(rewrite)} characters, over {max_chars}"
    missing = [h for h in REQUIRED_HEADINGS if h in original and h not in rewrite]
    if missing:
        return f"section {missing[0]!r} is missing"
    for block in _FENCE.findall(original):
        if block not in rewrite:
            return "a code block was changed or dropped"
    for match in _CITED.finditer(original):
        cited = match.group(1) or match.group(2)
        if cited not in rewrite:
            return f"citation {cited!r} was dropped"
    return None


def rewrite_plans(plans: Sequence[PackPlan], spec: str, provider: Any | None = None) -> list[str]:
    """Ask the teacher to rewrite each plan's body; set ``body_override`` on accepted ones.

    Args:
        plans: pack plans (their deterministic body is rendered here).
        spec: ``PROVIDER/MODEL`` for ``upskills.llm.get_provider``.
        provider: an already constructed provider (tests), instead of ``spec``.

    Returns:
        Warnings for rewrites that failed or were rejected.
    """
    from upskills.llm.base import GenParams, Message, ProviderError
    from upskills.prompts import load_prompt

    prompt = load_prompt("distill_rewrite")
    warnings: list[str] = []
    if provider is None:
        from upskills.llm import get_provider

        try:
            provider = get_provider(spec)
        except ProviderError as exc:
            return [f"teacher {spec}: {exc}; kept the deterministic text for every pack"]
    max_chars = int((SKILL_TOKEN_BUDGET - 600) * CHARS_PER_TOKEN)
    for plan in plans:
        original = render_skill_body(plan)
        lessons = json.dumps([x.model_dump(mode="json") for x in plan.lessons], sort_keys=True)
        text = prompt.render(
            name=plan.name, lessons_json=lessons, body=original, max_chars=str(max_chars)
        )
        try:
            response = provider.generate(
                [Message(role="user", content=text)],
                [],
                GenParams(temperature=0.0, max_tokens=8000),
            )
        except ProviderError as exc:
            warnings.append(
                f"teacher rewrite of {plan.name} failed ({exc}); kept the deterministic text"
            )
            continue
        rewrite = _unwrap(response.text or "")
        why = check_rewrite(original, rewrite, max_chars)
        if why:
            warnings.append(
                f"teacher rewrite of {plan.name} rejected: {why}; kept the deterministic text"
            )
            continue
        plan.body_override = rewrite
    return warnings
