"""The anthropic provider, driven through the real ``anthropic`` SDK against a loopback server."""

from __future__ import annotations

import pytest

from upskills.llm import get_provider
from upskills.llm.base import GenParams, Message, ProviderError, RetryPolicy, ToolSpec

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")

KEY = "sk-ant-test-SECRET-0123456789"
CHECK = ToolSpec(
    name="check",
    description="Verify the current kernel.",
    parameters={"type": "object", "properties": {"variant": {"type": "string"}}},
)


def message_body(content, stop_reason="end_turn", usage=None, model="claude-test-1"):
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 5},
    }


def overloaded():
    return {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def server_error():
    return {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}


def sent_key(received):
    """The key a request carried: ``x-api-key`` (older SDKs) or a bearer token (newer)."""
    bearer = received.headers.get("authorization", "").removeprefix("Bearer ")
    return received.headers.get("x-api-key") or bearer


def make(wire, retry, **options):
    return get_provider(
        "anthropic/claude-test-1", api_key=KEY, base_url=wire.url, retry=retry, **options
    )


def test_tool_calls_over_several_turns(wire, retry):
    wire.reply(
        body=message_body(
            [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "check", "input": {"variant": "a"}},
            ],
            stop_reason="tool_use",
            usage={
                "input_tokens": 40,
                "output_tokens": 9,
                "cache_read_input_tokens": 300,
                "cache_creation_input_tokens": 25,
            },
        )
    )
    wire.reply(body=message_body([{"type": "text", "text": "All variants pass."}]))
    provider = make(wire, retry)
    history = [
        Message(role="system", content="You write kernels."),
        Message(role="user", content="Solve row_sum."),
    ]

    first = provider.generate(history, [CHECK], GenParams(max_tokens=100, stop=["END"]))

    assert first.text == "Let me check."
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("toolu_1", "check", {"variant": "a"})
    ]
    assert first.stop_reason == "tool_use"
    assert first.model == "claude-test-1"
    assert first.retries == 0
    usage = first.usage
    assert (usage.input_tokens, usage.output_tokens) == (40, 9)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (300, 25)

    history += [
        Message(role="assistant", content=first.text, tool_calls=first.tool_calls),
        Message(role="tool", content="passed: 3/3 variants", tool_call_id="toolu_1", name="check"),
    ]
    second = provider.generate(history, [CHECK], GenParams(max_tokens=100))
    assert second.text == "All variants pass."
    assert second.tool_calls == []

    sent = wire.requests[0]
    assert sent.path == "/v1/messages"
    assert sent_key(sent) == KEY
    assert sent.body["system"][0]["text"] == "You write kernels."
    assert sent.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert sent.body["stop_sequences"] == ["END"]
    assert sent.body["max_tokens"] == 100
    assert "top_p" not in sent.body
    assert sent.body["tools"] == [
        {"name": "check", "description": CHECK.description, "input_schema": CHECK.parameters}
    ]
    assert [m["role"] for m in sent.body["messages"]] == ["user"]

    turn = wire.requests[1].body["messages"]
    assert [m["role"] for m in turn] == ["user", "assistant", "user"]
    assert turn[1]["content"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "check", "input": {"variant": "a"}},
    ]
    result = turn[2]["content"][0]
    assert (result["type"], result["tool_use_id"], result["content"]) == (
        "tool_result",
        "toolu_1",
        "passed: 3/3 variants",
    )
    # only the newest block carries the cache breakpoint
    assert result["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in turn[0]["content"][-1]


def test_rate_limit_honours_retry_after(wire, retry, sleeps):
    wire.reply(
        429,
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        headers={"retry-after": "3"},
    )
    wire.reply(body=message_body([{"type": "text", "text": "ok"}]))

    response = make(wire, retry).generate([Message(role="user", content="hi")])

    assert response.text == "ok"
    assert response.retries == 1
    assert sleeps == [3.0]
    assert len(wire.requests) == 2


def test_overloaded_then_server_error_then_success(wire, retry, sleeps):
    wire.reply(529, overloaded())
    wire.reply(500, server_error())
    wire.reply(body=message_body([{"type": "text", "text": "done"}]))

    response = make(wire, retry).generate([Message(role="user", content="hi")])

    assert (response.text, response.retries) == ("done", 2)
    assert sleeps == [1.0, 2.0]  # exponential backoff, jitter factor 1 here


def test_persistent_server_error_gives_up_after_bounded_retries(wire, retry, sleeps):
    for _ in range(5):
        wire.reply(500, server_error())

    with pytest.raises(ProviderError) as info:
        make(wire, retry).generate([Message(role="user", content="hi")])

    assert len(wire.requests) == 3  # first attempt + max_retries=2
    assert info.value.retries == 2
    assert info.value.status == 500
    assert "HTTP 500" in str(info.value) and "2 retries" in str(info.value)
    assert "\n" not in str(info.value)
    assert len(sleeps) == 2


def test_timeout_is_retried(wire, sleeps):
    wire.reply(body=message_body([{"type": "text", "text": "late"}]), delay_s=1.5)
    wire.reply(body=message_body([{"type": "text", "text": "on time"}]))
    retry = RetryPolicy(max_retries=1, sleep=sleeps, random=lambda: 0.5)

    response = make(wire, retry, timeout_s=0.3).generate([Message(role="user", content="hi")])

    assert (response.text, response.retries) == ("on time", 1)


@pytest.mark.parametrize(
    "reply",
    [
        {"raw": b"this is not json {"},
        {"body": {"id": "msg_01", "type": "message"}},  # no content, no usage
        {"body": message_body([{"type": "tool_use", "id": "t", "name": "x", "input": [1, 2]}])},
    ],
    ids=["not-json", "missing-fields", "tool-input-not-object"],
)
def test_malformed_body_is_a_clear_error(wire, retry, reply):
    wire.reply(200, **reply)

    with pytest.raises(ProviderError, match="malformed response") as info:
        make(wire, retry).generate([Message(role="user", content="hi")])

    assert "base_url" in str(info.value)
    assert len(wire.requests) == 1


def test_auth_failure_is_not_retried_and_names_the_env_var(wire, retry):
    wire.reply(
        401,
        {"type": "error", "error": {"type": "authentication_error", "message": f"bad {KEY}"}},
    )

    with pytest.raises(ProviderError) as info:
        make(wire, retry).generate([Message(role="user", content="hi")])

    assert len(wire.requests) == 1
    assert "ANTHROPIC_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


def test_api_key_never_appears_in_what_we_return(wire, retry):
    wire.reply(body=message_body([{"type": "text", "text": "fine"}]))
    wire.reply(500, {"type": "error", "error": {"type": "api_error", "message": KEY}})
    wire.reply(500, server_error())
    wire.reply(500, server_error())
    provider = make(wire, retry)

    response = provider.generate([Message(role="user", content="hi")])
    with pytest.raises(ProviderError) as info:
        provider.generate([Message(role="user", content="hi")])

    assert sent_key(wire.requests[0]) == KEY  # it was used...
    for text in (response.model_dump_json(), repr(provider), str(info.value), repr(info.value)):
        assert KEY not in text  # ...and never returned


def test_key_from_environment_and_missing_key(wire, retry, monkeypatch):
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        get_provider("anthropic/claude-test-1", base_url=wire.url)

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.url)
    wire.reply(body=message_body([{"type": "text", "text": "env"}]))
    response = get_provider("anthropic/claude-test-1", retry=retry).generate(
        [Message(role="user", content="hi")]
    )
    assert response.text == "env"
    assert sent_key(wire.requests[0]) == KEY


def test_sampling_parameters_sent_only_when_asked(wire, retry):
    wire.reply(body=message_body([{"type": "text", "text": "x"}]))
    wire.reply(body=message_body([{"type": "text", "text": "y"}]))
    conversation = [Message(role="system", content="S"), Message(role="user", content="U")]
    params = GenParams(temperature=0.7, top_p=0.9, max_tokens=64, seed=5)

    make(wire, retry).generate(conversation, params=params)
    make(wire, retry, sampling=True, prompt_cache=False).generate(conversation, params=params)

    default, sampled = (r.body for r in wire.requests)
    assert default["max_tokens"] == 64
    assert not {"temperature", "top_p", "seed"} & set(default)
    assert (sampled["temperature"], sampled["top_p"]) == (0.7, 0.9)
    assert "seed" not in sampled
    assert "cache_control" not in sampled["system"][0]
    assert "cache_control" not in sampled["messages"][-1]["content"][-1]


def test_parallel_tool_results_merge_into_one_user_turn(wire, retry):
    from upskills.llm.anthropic_api import build_request
    from upskills.trace.events import ToolCallRequest

    calls = [
        ToolCallRequest(id="a", name="check", arguments={}),
        ToolCallRequest(id="b", name="check", arguments={"variant": "r"}),
    ]
    request = build_request(
        "m",
        [
            Message(role="user", content="go"),
            Message(role="assistant", tool_calls=calls),
            Message(role="tool", content="ok a", tool_call_id="a"),
            Message(role="tool", content="", tool_call_id="b"),
            Message(role="user", content="now benchmark"),
        ],
        [],
        GenParams(),
        prompt_cache=False,
    )
    last = request["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in last["content"][:2]] == ["a", "b"]
    assert last["content"][1]["content"] == "(no output)"  # empty results are rejected upstream
    assert request["messages"][1]["content"][0]["type"] == "tool_use"

    with pytest.raises(ProviderError, match="tool_call_id"):
        build_request("m", [Message(role="tool", content="x")], [], GenParams())
