"""The arms of a lift experiment: what goes into the one skill block of the student's prompt.

Arms differ only in that block: ``baseline`` (empty), a skill version inlined (``name@ver``) or
offered on demand through a ``read_skill`` tool (``name@ver+read``), ``placebo`` (unrelated
prose trimmed to the inlined skill's token count within 5%), and ``excerpt`` (the first 4,000
characters of the skill's source traces, rendered as a transcript: how huggingface/upskill uses
a trace). With several skills, placebo and excerpt arms are suffixed with the skill
(``placebo:name@ver``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.prompts import load_prompt

if TYPE_CHECKING:
    from upskills.skills.pack import SkillPack

ArmKind = Literal["baseline", "inline", "on_demand", "placebo", "off_topic", "excerpt"]
ARM_KINDS: tuple[str, ...] = ("baseline", "inline", "on_demand", "placebo", "off_topic", "excerpt")
"""Every arm kind, in report order."""

EXCERPT_CHARS = 4000
"""Characters of source traces given to the ``excerpt`` arm."""
PLACEBO_TOLERANCE = 0.05
"""Largest relative token-count difference between placebo and skill block."""

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """Documented estimate for students without a local tokenizer: ceil(chars / 4)."""
    return math.ceil(len(text) / 4)


def text_hash(text: str) -> str:
    """sha256 (16 hex chars) of a text."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Arm(BaseModel):
    """One arm: its name, kind, the skill it derives from and the block it inserts."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Arm name used in keys and reports."""
    kind: ArmKind
    """What the block is."""
    skill: str | None = None
    """``name@version`` of the skill the arm derives from (None for baseline)."""
    skill_path: str | None = None
    """Folder of that skill pack (on-demand arms read from it)."""
    block: str = ""
    """Text inserted at the skill block of the system prompt."""
    block_hash: str = ""
    """sha256 (16 hex) of ``block``."""
    block_tokens: int = 0
    """Tokens of ``block`` by the run's token counter."""
    uses_tool: bool = False
    """Whether the ``read_skill`` tool is offered."""
    source_traces: list[str] = Field(default_factory=list)
    """Trace files the excerpt was cut from."""


def _arm(name: str, kind: ArmKind, block: str, count: TokenCounter, **extra: Any) -> Arm:
    return Arm(
        name=name,
        kind=kind,
        block=block,
        block_hash=text_hash(block),
        block_tokens=count(block) if block else 0,
        **extra,
    )


def placebo_text(tokens: int, count: TokenCounter) -> str:
    """Unrelated prose (the history of bread) trimmed to ``tokens`` within 5%.

    Args:
        tokens: target token count (that of the skill block it stands in for).
        count: the token counter of the run.

    Returns:
        The placebo text.
    """
    if tokens <= 0:
        return ""
    source = load_prompt("student_placebo").text.strip()
    text = source
    while count(text) < tokens:
        text = text + "\n\n" + source
    lo, hi = 0, len(text)
    while lo < hi:  # shortest prefix with at least `tokens` tokens
        mid = (lo + hi) // 2
        if count(text[:mid]) < tokens:
            lo = mid + 1
        else:
            hi = mid
    cut = text[:lo]
    space = cut.rfind(" ")
    if space > 0 and abs(count(cut[:space]) - tokens) <= PLACEBO_TOLERANCE * tokens:
        cut = cut[:space]  # end on a word boundary when that stays in tolerance
    return cut


PLACEBO_NAME = "bread-history"
"""Skill name in the placebo's wrapper (the wrapper and format are the skill's own)."""


def placebo_block(tokens: int, count: TokenCounter, version: str = "1.0.0") -> str:
    """The placebo in the skill's own wrapper, the whole block ``tokens`` long within 5%."""

    def wrap(body: str) -> str:
        return f'<skill name="{PLACEBO_NAME}" version="{version}">\n{body}\n</skill>'

    overhead = count(wrap(""))
    return wrap(placebo_text(max(1, tokens - overhead), count))


def _args_text(args: object) -> str:
    """Tool-call arguments as a student would read them: code as code, the rest as JSON."""
    if not isinstance(args, dict):
        return json.dumps(args)
    parts = []
    for key, value in args.items():
        if isinstance(value, str) and "\n" in value:
            parts.append(f"{key}:\n```python\n{value.rstrip()}\n```")
        else:
            parts.append(f"{key}: {json.dumps(value)}")
    return "\n".join(parts)


def render_trace_text(path: Path) -> str:
    """A trace as a plain transcript: model text, tool calls and tool outputs in order.

    Handles both recordings: ``model_call`` events (teacher runs through ``upskills teach``)
    and ``tool_call`` events (external agents through ``upskills session``/MCP), whose
    arguments carry the kernels; kernel sources are shown as fenced code.
    """
    parts: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = ev.get("event")
        if kind == "run_start":
            parts.append(f"# task {ev.get('task')}")
        elif kind == "model_call":
            if ev.get("response_text"):
                parts.append(f"assistant: {ev['response_text']}")
            for call in ev.get("tool_calls") or []:
                args = _args_text(call.get("arguments", {}))
                parts.append(f"tool call {call.get('name')}:\n{args}")
        elif kind == "tool_call":
            args = _args_text(ev.get("arguments", {}))
            parts.append(f"tool call {ev.get('gen_ai.tool.name')}:\n{args}")
        elif kind == "note" and ev.get("text"):
            parts.append(f"note: {ev['text']}")
        elif kind == "tool_result":
            out = ev.get("output") or ev.get("error") or ""
            parts.append(f"tool result {ev.get('gen_ai.tool.name')}: {out}")
        elif kind == "run_end":
            parts.append(f"# outcome {ev.get('outcome')}")
    return "\n".join(parts)


def excerpt_text(trace_paths: Sequence[Path], chars: int = EXCERPT_CHARS) -> str:
    """The first ``chars`` characters of the traces' transcripts, concatenated in order."""
    text = "\n\n".join(render_trace_text(p) for p in trace_paths)
    return text[:chars]


def _provenance_ids(pack: SkillPack) -> set[str]:
    """Trace ids and file names a pack's provenance names."""
    return pack.provenance.trace_refs() if pack.provenance else set()


def source_traces(pack: SkillPack, trace_files: Iterable[Path]) -> list[Path]:
    """Trace files a pack was distilled from: matched by path, trace id or file stem."""
    ids = _provenance_ids(pack)
    out: list[Path] = []
    for path in trace_files:
        if str(path) in ids or path.name in ids or path.stem in ids:
            out.append(path)
            continue
        try:
            first = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])
        except (json.JSONDecodeError, OSError):
            continue
        if first.get("trace_id") in ids:
            out.append(path)
    return sorted(out)


def skill_ref(pack: SkillPack) -> str:
    """``name@version`` of a pack."""
    return f"{pack.name}@{pack.version}"


def build_arms(
    packs: Sequence[Any],
    kinds: Sequence[str],
    count: TokenCounter,
    trace_files: Sequence[Path] = (),
    compact: bool = False,
    off_topic: Sequence[Any] = (),
) -> list[Arm]:
    """Build every arm of an experiment.

    Args:
        packs: skill packs (``upskills.skills.pack.SkillPack``).
        kinds: arm kinds to include (subset of ``ARM_KINDS``).
        count: token counter (the student's tokenizer when local).
        trace_files: candidate trace files for the excerpt arms.
        compact: inline the compact variant of each skill (for small students).
        off_topic: real packs on another topic, inlined as the ``off_topic`` control arm.

    Returns:
        Arms in report order; baseline first.

    Raises:
        ValueError: an unknown arm kind, or an excerpt arm with no source traces found.
    """
    from upskills.skills.attach import skills_index_block, system_prompt_block

    unknown = sorted(set(kinds) - set(ARM_KINDS))
    if unknown:
        raise ValueError(f"unknown arm kind(s) {unknown}; choose from {', '.join(ARM_KINDS)}")
    arms: list[Arm] = []
    if "baseline" in kinds:
        arms.append(_arm("baseline", "baseline", "", count))
    several = len(packs) > 1
    for pack in packs:
        ref = skill_ref(pack)
        inline = system_prompt_block([pack], compact=compact)
        if "inline" in kinds:
            arms.append(_arm(ref, "inline", inline, count, skill=ref, skill_path=str(pack.path)))
        if "on_demand" in kinds:
            listing = skills_index_block([pack])
            block = load_prompt("student_skill_on_demand").render(skill_list=listing).strip()
            arms.append(
                _arm(
                    f"{ref}+read",
                    "on_demand",
                    block,
                    count,
                    skill=ref,
                    skill_path=str(pack.path),
                    uses_tool=True,
                )
            )
        suffix = f":{ref}" if several else ""
        if "placebo" in kinds:
            block = placebo_block(count(inline), count, pack.version)
            arms.append(_arm(f"placebo{suffix}", "placebo", block, count, skill=ref))
        if "off_topic" in kinds:
            if not off_topic:
                raise ValueError("the off_topic arm needs a pack on another topic (--off-topic)")
            for other in off_topic:
                block = system_prompt_block([other], compact=compact)
                name = f"off-topic:{skill_ref(other)}" + (f"/{ref}" if several else "")
                arms.append(_arm(name, "off_topic", block, count, skill=skill_ref(other)))
        if "excerpt" in kinds:
            sources = source_traces(pack, trace_files)
            if not sources:
                raise ValueError(
                    f"skill {ref}: no source traces found for the excerpt arm among "
                    f"{len(trace_files)} trace files; pass --traces or drop the excerpt arm"
                )
            block = excerpt_text(sources)
            arms.append(
                _arm(
                    f"excerpt{suffix}",
                    "excerpt",
                    block,
                    count,
                    skill=ref,
                    source_traces=[str(p) for p in sources],
                )
            )
    return arms
