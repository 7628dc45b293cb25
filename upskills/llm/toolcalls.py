"""Tool calls written as text by local models: parsing them, and describing tools in a prompt.

Two written forms are recognised:

* ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the Hermes/Qwen form; a missing
  closing tag at the end of the text is tolerated, since generation may stop at it);
* a fenced code block (```` ```json ```` or bare ```` ``` ````) holding one object with a
  ``name`` and ``arguments`` (or ``parameters``) object, counted only when the name is one of
  the offered tools, so that ordinary JSON in an answer is left alone.

When a chat template cannot take ``tools=``, ``tools_system_block`` describes them in the
system message (prompt ``local_tools``) and ``flatten_tool_turns`` rewrites tool calls and
results as plain text turns the template can render.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from upskills.core.markdown import fenced_blocks, line_offsets
from upskills.llm.base import Message, ToolCallRequest, ToolSpec
from upskills.prompts import load_prompt

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
FENCE_LANGS = ("", "json", "tool_call")
"""Fence info strings whose blocks may hold a tool call."""

TOOLS_PROMPT = "local_tools"
"""Prompt (``upskills/prompts/local_tools.md``) describing tools when the template cannot."""


@dataclass
class ParsedCalls:
    """Text with tool-call markup removed, the calls found, and problems met."""

    text: str
    """The text outside any recognised tool call."""
    calls: list[ToolCallRequest] = field(default_factory=list)
    """Well-formed calls, in order of appearance."""
    errors: list[str] = field(default_factory=list)
    """One line per call that could not be read."""


def _call_id(index: int, payload: str) -> str:
    digest = hashlib.sha256(f"{index}:{payload}".encode()).hexdigest()[:12]
    return f"call_{index}_{digest}"


def _read_call(payload: str) -> tuple[str, dict[str, Any]]:
    """Name and arguments of one JSON call; raises ValueError saying what is wrong."""
    try:
        value = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"a JSON {type(value).__name__}, not an object")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError('no "name" string')
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f'"arguments" string is not valid JSON ({exc.msg})') from exc
    if not isinstance(arguments, dict):
        raise ValueError(f'"arguments" is a JSON {type(arguments).__name__}, not an object')
    return name, arguments


def parse_tool_calls(text: str, tool_names: Iterable[str] | None = None) -> ParsedCalls:
    """Find tool calls written in ``text``.

    Args:
        text: generated text.
        tool_names: names of the offered tools; fenced blocks count only for these names
            (``<tool_call>`` tags count for any name). None accepts any name in both forms.

    Returns:
        The remaining text, the calls, and one error line per unreadable ``<tool_call>``.
    """
    names = set(tool_names) if tool_names is not None else None
    calls: list[ToolCallRequest] = []
    errors: list[str] = []
    spans: list[tuple[int, int]] = []

    for match in _TAGGED.finditer(text):
        payload = match.group(1).strip()
        index = len(calls) + len(errors)
        try:
            name, arguments = _read_call(payload)
        except ValueError as exc:
            errors.append(f"<tool_call> #{index + 1}: {exc}")
        else:
            call_id = _call_id(index, payload)
            calls.append(ToolCallRequest(id=call_id, name=name, arguments=arguments))
        spans.append(match.span())

    if not spans:
        offsets = line_offsets(text)
        for block in fenced_blocks(text):
            if block.lang not in FENCE_LANGS:
                continue
            payload = block.body.strip()
            try:
                name, arguments = _read_call(payload)
            except ValueError:
                continue  # ordinary code, not a call
            if names is not None and name not in names:
                continue
            calls.append(
                ToolCallRequest(id=_call_id(len(calls), payload), name=name, arguments=arguments)
            )
            end = offsets[min(block.end_line, len(offsets) - 1)]
            end -= text[end - 1 : end] == "\n"  # the line break after the fence stays
            spans.append((offsets[block.start_line], end))

    remaining, cursor = [], 0
    for begin, end in sorted(spans):
        remaining.append(text[cursor:begin])
        cursor = end
    remaining.append(text[cursor:])
    return ParsedCalls(text="".join(remaining).strip(), calls=calls, errors=errors)


def format_tool_call(call: ToolCallRequest) -> str:
    """The ``<tool_call>`` text for one call (how a past call is shown back to the model)."""
    payload = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"<tool_call>{payload}</tool_call>"


def tools_system_block(tools: Sequence[ToolSpec]) -> str:
    """Describe ``tools`` for a model whose chat template cannot take them (prompt text)."""
    described = "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": t.parameters},
            ensure_ascii=False,
        )
        for t in tools
    )
    example = format_tool_call(ToolCallRequest(id="x", name="TOOL_NAME", arguments={"ARG": "…"}))
    return load_prompt(TOOLS_PROMPT).render(tools=described, example=example).strip()


def flatten_tool_turns(
    messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> list[dict[str, Any]]:
    """Chat-template messages for a template without tool support.

    The tool description joins the system message (one is created if absent); assistant tool
    calls become ``<tool_call>`` text; tool results become user turns in ``<tool_response>``.
    """
    out: list[dict[str, Any]] = []
    block = tools_system_block(tools) if tools else ""
    system_done = not block
    for message in messages:
        if message.role == "system":
            content = message.content
            if not system_done:
                content = f"{content}\n\n{block}" if content else block
                system_done = True
            out.append({"role": "system", "content": content})
        elif message.role == "assistant":
            parts = [message.content] if message.content else []
            parts.extend(format_tool_call(c) for c in message.tool_calls)
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif message.role == "tool":
            label = f' name="{message.name}"' if message.name else ""
            content = f"<tool_response{label}>\n{message.content}\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1].get("_tool"):
                out[-1]["content"] += "\n" + content
            else:
                out.append({"role": "user", "content": content, "_tool": True})
        else:
            out.append({"role": "user", "content": message.content})
    if not system_done:
        out.insert(0, {"role": "system", "content": block})
    for item in out:
        item.pop("_tool", None)
    return out


def template_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Chat-template messages for a template that supports tools (HF's documented format)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ]
        if message.role == "tool":
            if message.tool_call_id:
                item["tool_call_id"] = message.tool_call_id
            if message.name:
                item["name"] = message.name
        out.append(item)
    return out


def tool_schemas(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tools in the JSON-schema form ``apply_chat_template(tools=...)`` takes."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]
