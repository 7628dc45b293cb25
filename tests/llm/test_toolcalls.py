"""Parsing tool calls that local models write as text, and describing tools in a prompt."""

from __future__ import annotations

import json

from upskills.llm.base import Message, ToolSpec
from upskills.llm.toolcalls import (
    flatten_tool_turns,
    format_tool_call,
    parse_tool_calls,
    tools_system_block,
)
from upskills.prompts import load_prompt

NAMES = ["write_kernel", "check"]


def test_tagged_call_is_parsed_and_removed_from_the_text():
    call = '{"name": "write_kernel", "arguments": {"source": "x = 1"}}'
    text = f"I will save it.\n<tool_call>{call}</tool_call>"

    parsed = parse_tool_calls(text, NAMES)

    assert parsed.text == "I will save it."
    assert [(c.name, c.arguments) for c in parsed.calls] == [("write_kernel", {"source": "x = 1"})]
    assert parsed.errors == []
    assert parsed.calls[0].id.startswith("call_0_")


def test_several_calls_unclosed_last_tag_and_string_arguments():
    text = (
        '<tool_call>{"name": "check", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "write_kernel", "arguments": "{\\"source\\": \\"y\\"}"}'
    )

    parsed = parse_tool_calls(text, NAMES)

    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("check", {}),
        ("write_kernel", {"source": "y"}),
    ]
    assert parsed.text == ""
    assert len({c.id for c in parsed.calls}) == 2


def test_parameters_key_is_accepted():
    parsed = parse_tool_calls('<tool_call>{"name": "check", "parameters": {"v": 2}}</tool_call>')
    assert parsed.calls[0].arguments == {"v": 2}


def test_unreadable_tagged_calls_are_reported_not_dropped_silently():
    text = (
        "<tool_call>{'name': 'check'}</tool_call>"
        '<tool_call>{"arguments": {}}</tool_call>'
        '<tool_call>{"name": "check", "arguments": [1]}</tool_call>'
        '<tool_call>{"name": "check", "arguments": {}}</tool_call>'
    )

    parsed = parse_tool_calls(text, NAMES)

    assert [c.name for c in parsed.calls] == ["check"]
    assert len(parsed.errors) == 3
    assert parsed.errors[0].startswith("<tool_call> #1: not valid JSON")
    assert 'no "name"' in parsed.errors[1]
    assert "list, not an object" in parsed.errors[2]


def test_fenced_json_call_for_a_known_tool():
    text = 'Here:\n```json\n{"name": "check", "arguments": {"variant": "ragged"}}\n```\nDone.'

    parsed = parse_tool_calls(text, NAMES)

    assert [(c.name, c.arguments) for c in parsed.calls] == [("check", {"variant": "ragged"})]
    assert parsed.text == "Here:\n\nDone."


def test_fenced_blocks_that_are_not_calls_stay_text():
    code = "```python\nimport triton\n```"
    unknown = '```json\n{"name": "rm_rf", "arguments": {}}\n```'
    plain = '```json\n{"shape": [4, 4]}\n```'
    text = f"{code}\n{unknown}\n{plain}"

    parsed = parse_tool_calls(text, NAMES)

    assert parsed.calls == [] and parsed.errors == []
    assert parsed.text == text
    # without a list of names any fenced call counts
    assert [c.name for c in parse_tool_calls(unknown).calls] == ["rm_rf"]


def test_plain_text_has_no_calls():
    parsed = parse_tool_calls("def f():\n    return {'name': 1}\n", NAMES)
    assert parsed.calls == [] and parsed.text.startswith("def f")


def test_call_ids_are_deterministic():
    text = '<tool_call>{"name": "check", "arguments": {}}</tool_call>'
    assert parse_tool_calls(text).calls[0].id == parse_tool_calls(text).calls[0].id


def test_formatted_call_parses_back():
    call = parse_tool_calls('<tool_call>{"name": "check", "arguments": {"a": [1]}}</tool_call>')
    again = parse_tool_calls(format_tool_call(call.calls[0]))
    assert (again.calls[0].name, again.calls[0].arguments) == ("check", {"a": [1]})


def test_tools_block_describes_every_tool_from_the_packaged_prompt():
    tools = [
        ToolSpec(name="check", description="Verify.", parameters={"type": "object"}),
        ToolSpec(name="submit", description="Submit the kernel."),
    ]

    block = tools_system_block(tools)

    lines = [json.loads(line) for line in block.splitlines() if line.startswith('{"name"')]
    assert [line["name"] for line in lines] == ["check", "submit"]
    assert lines[0]["description"] == "Verify."
    assert "<tool_call>" in block and "{tools}" not in block and "{example}" not in block
    assert load_prompt("local_tools").text.split("\n")[0] in block


def test_flatten_without_system_message_adds_one_and_groups_tool_results():
    tools = [ToolSpec(name="check")]
    messages = [
        Message(role="user", content="go"),
        Message(
            role="assistant",
            content="two checks",
            tool_calls=[
                {"id": "a", "name": "check", "arguments": {}},
                {"id": "b", "name": "check", "arguments": {"v": 1}},
            ],
        ),
        Message(role="tool", content="ok", tool_call_id="a", name="check"),
        Message(role="tool", content="fail", tool_call_id="b", name="check"),
    ]

    chat = flatten_tool_turns(messages, tools)

    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[2]["content"].count("<tool_call>") == 2
    assert chat[3]["content"].count("<tool_response") == 2
    assert all(set(m) == {"role", "content"} for m in chat)
