"""Prompts as versioned package data: ``load_prompt(name)`` returns the text and its hash.

Every artifact a prompt helps produce records ``Prompt.sha256`` so a change of wording is
visible in provenance.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Prompt:
    """A prompt file's text and content hash."""

    name: str
    text: str
    sha256: str

    def render(self, **values: object) -> str:
        """Fill ``{name}`` placeholders with ``values`` (str.format_map, missing keys kept)."""
        return self.text.format_map(_Keep(values))


class _Keep(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def load_prompt(name: str) -> Prompt:
    """Load ``upskills/prompts/<name>.md``.

    Args:
        name: file stem, e.g. ``teacher_system``.

    Returns:
        The prompt with its sha256 (first 16 hex chars).

    Raises:
        FileNotFoundError: no such prompt ships with the package.
    """
    path = resources.files("upskills.prompts").joinpath(f"{name}.md")
    if not path.is_file():
        raise FileNotFoundError(f"no prompt named {name!r} in upskills/prompts/")
    text = path.read_text(encoding="utf-8")
    return Prompt(name=name, text=text, sha256=hashlib.sha256(text.encode()).hexdigest()[:16])
