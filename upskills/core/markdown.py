"""Markdown read through a parser (markdown-it-py, CommonMark): front matter, sections, code.

Everything in upskills that reads Markdown — SKILL.md front matter, a pack's sections (the unit
of ``skills diff`` and of per-section token budgets), fenced code blocks in model replies and in
packs — goes through this module, so a ``---`` inside a code block or a fence inside a list item
is read the way a Markdown renderer reads it, not the way a regex guesses.

It also holds the one kernel-extraction rule (:func:`extract_kernel`) that teacher and student
runs share.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

PYTHON_LANGS = ("", "python", "py", "python3")
"""Fence info strings taken as Python (an unlabelled fence included)."""


@functools.cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").use(front_matter_plugin)


def parse(text: str) -> list[Token]:
    """The block tokens of a Markdown text."""
    return _parser().parse(text)


@dataclass(frozen=True)
class CodeBlock:
    """A fenced code block."""

    lang: str
    """First word of the info string, lower-case ('' when unlabelled)."""
    body: str
    """The code, as written (with its trailing newline)."""
    start_line: int
    """0-based line of the opening fence."""
    end_line: int
    """0-based line after the block (after the closing fence, or the end of the text)."""


@dataclass(frozen=True)
class Section:
    """A part of a document under one heading (or before the first)."""

    title: str
    """Heading text ('' for the part before the first heading)."""
    level: int
    """Heading level (0 for the part before the first heading)."""
    text: str
    """The section's Markdown, heading line included."""
    start_line: int
    """0-based first line."""


def fenced_blocks(text: str) -> list[CodeBlock]:
    """Every fenced code block, in order; an unclosed fence runs to the end (CommonMark)."""
    out: list[CodeBlock] = []
    for tok in parse(text):
        if tok.type == "fence" and tok.map is not None:
            lang = tok.info.strip().split(maxsplit=1)[0].lower() if tok.info.strip() else ""
            out.append(CodeBlock(lang, tok.content, tok.map[0], tok.map[1]))
    return out


def python_blocks(text: str) -> list[str]:
    """Bodies of the fenced Python (or unlabelled) blocks, in order, without outer newlines."""
    return [b.body.strip("\n") for b in fenced_blocks(text or "") if b.lang in PYTHON_LANGS]


def line_offsets(text: str) -> list[int]:
    """Character offset of the start of every line, plus ``len(text)`` at the end."""
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def split_front_matter(text: str) -> tuple[str | None, str]:
    """``(front matter YAML text or None, body)``; the front matter must open the document."""
    tokens = parse(text)
    if not tokens or tokens[0].type != "front_matter" or tokens[0].map is None:
        return None, text
    front = tokens[0]
    offsets = line_offsets(text)
    body = text[offsets[min(tokens[0].map[1], len(offsets) - 1)] :]
    return front.content, body.lstrip("\n")


def sections(text: str, level: int = 2) -> list[Section]:
    """Split a document at its headings of ``level`` or above (``##`` and ``#`` by default).

    Headings inside code blocks are not headings. The part before the first heading is a
    section with an empty title when it holds anything but blank lines.
    """
    lines = text.splitlines(keepends=True)
    cuts: list[tuple[int, str, int]] = []
    tokens = parse(text)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None and int(tok.tag[1:]) <= level:
            inline = tokens[i + 1]
            cuts.append((tok.map[0], inline.content.strip(), int(tok.tag[1:])))
    out: list[Section] = []
    starts = [c[0] for c in cuts] + [len(lines)]
    if not cuts or cuts[0][0] > 0:
        head = "".join(lines[: starts[0]])
        if head.strip():
            out.append(Section("", 0, head, 0))
    for (start, title, lvl), end in zip(cuts, starts[1:], strict=True):
        out.append(Section(title, lvl, "".join(lines[start:end]), start))
    return out


def extract_kernel(text: str) -> str | None:
    """The candidate module in a model's reply: the one rule teacher and student runs share.

    Args:
        text: the reply.

    Returns:
        The last fenced Python block defining ``class ModelNew``; else the longest fenced Python
        block; else the whole reply when it itself defines ``ModelNew``; else None. The source
        is stripped and ends with one newline.
    """
    blocks = [b.strip() for b in python_blocks(text) if b.strip()]
    with_model = [b for b in blocks if "class ModelNew" in b]
    if with_model:
        return with_model[-1] + "\n"
    if blocks:
        return max(blocks, key=len) + "\n"
    if "class ModelNew" in (text or ""):
        return text.strip() + "\n"
    return None
