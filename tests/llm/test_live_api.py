"""Opt-in checks against the real APIs (``-m api``; skipped without keys). Never run in CI."""

from __future__ import annotations

import os

import pytest

from upskills.llm import get_provider
from upskills.llm.base import GenParams, Message, ToolSpec

ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
ASK = [
    Message(role="system", content="Use the add tool for arithmetic."),
    Message(role="user", content="What is 1234 + 4321?"),
]


def round_trip(provider):
    first = provider.generate(ASK, [ADD], GenParams(max_tokens=300))
    assert first.tool_calls, first.text
    call = first.tool_calls[0]
    assert call.name == "add" and {call.arguments["a"], call.arguments["b"]} == {1234, 4321}
    assert first.usage.input_tokens + first.usage.cache_read_tokens > 0
    follow = [
        *ASK,
        Message(role="assistant", content=first.text, tool_calls=[call]),
        Message(role="tool", content="5555", tool_call_id=call.id, name="add"),
    ]
    second = provider.generate(follow, [ADD], GenParams(max_tokens=300))
    assert "5555" in second.text.replace(",", "")


@pytest.mark.api
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY")
def test_anthropic_live_tool_round_trip():
    model = os.environ.get("UPSKILLS_TEST_ANTHROPIC_MODEL", "claude-haiku-4-5")
    round_trip(get_provider(f"anthropic/{model}"))


@pytest.mark.api
@pytest.mark.skipif(
    not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")),
    reason="needs OPENAI_API_KEY or OPENAI_BASE_URL",
)
def test_openai_live_tool_round_trip():
    model = os.environ.get("UPSKILLS_TEST_OPENAI_MODEL", "gpt-4.1-mini")
    round_trip(get_provider(f"openai/{model}"))
