"""Token counts for size budgets: a deterministic, conservative estimate.

Budgets decide what goes into SKILL.md, so the count must be the same on every machine, or two
distillations of the same traces would differ. ``tiktoken``'s encodings are downloaded on first
use and are often unavailable offline, so budgets use ``estimate_tokens`` (one token per three
characters, rounded up), which over-counts English prose and Python (about four and three and a
half characters per ``cl100k_base`` token). ``count_tokens`` reports the exact ``cl100k_base``
count when the encoding is available and falls back to the estimate otherwise.
"""

from __future__ import annotations

import functools
import math
from typing import Any

CHARS_PER_TOKEN = 3.0
"""Characters per token assumed by ``estimate_tokens`` (conservative for English and code)."""

SKILL_TOKEN_BUDGET = 5000
"""Largest SKILL.md, in estimated tokens."""

COMPACT_TOKEN_BUDGET = 1500
"""Largest compact variant (for small students), in estimated tokens."""


def estimate_tokens(text: str) -> int:
    """Conservative token estimate: ``ceil(len(text) / 3)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@functools.cache
def _encoding() -> Any | None:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # noqa: BLE001 - any failure (not installed, offline) means "unavailable"
        return None


def count_tokens(text: str) -> tuple[int, str]:
    """Count tokens exactly when possible.

    Returns:
        ``(count, method)`` where method is ``cl100k_base`` or ``estimate``.
    """
    enc = _encoding()
    if enc is None:
        return estimate_tokens(text), "estimate"
    return len(enc.encode(text)), "cl100k_base"


def section_tokens(markdown: str) -> list[tuple[str, int]]:
    """Estimated tokens of each section of a Markdown text (Markdown-parsed headings).

    Returns:
        ``(heading, tokens)`` pairs in document order; the part before the first heading is
        ``(preamble)``.
    """
    from upskills.core.markdown import sections

    return [(s.title or "(preamble)", estimate_tokens(s.text)) for s in sections(markdown)]
