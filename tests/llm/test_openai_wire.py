"""The openai provider, driven through the real ``openai`` SDK against a loopback server."""

from __future__ import annotations

import json

import pytest

from upskills.llm import get_provider
from upskills.llm.base import GenParams, Message, ProviderError, ToolSpec
from upskills.llm.openai_api import PLACEHOLDER_KEY, parse_arguments

pytest.importorskip("openai", reason="the openai extra is not installed")

KEY = "sk-proj-test-SECRET-9876543210"
WRITE = ToolSpec(
    name="write_kernel",
    description="Save the kernel source.",
    parameters={
        "type": "object",
        "properties": {"source": {"type": "string"}},
        "required": ["source"],
    },
)


def completion(content=None, tool_calls=None, finish="stop", usage=None, model="qwen-test"):
    message = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1760000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage or {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24},
    }


def error(message, kind="server_error"):
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def make(wire, retry, **options):
    return get_provider(
        "openai/qwen-test", api_key=KEY, base_url=f"{wire.url}/v1", retry=retry, **options
    )


def test_tool_calls_over_several_turns_and_cached_usage(wire, retry):
    source = "import triton\n# kernel"
    wire.reply(
        body=completion(
            tool_calls=[("call_a", "write_kernel", json.dumps({"source": source}))],
            finish="tool_calls",
            usage={
                "prompt_tokens": 1000,
                "completion_tokens": 30,
                "total_tokens": 1030,
                "prompt_tokens_details": {"cached_tokens": 768},
            },
        )
    )
    wire.reply(body=completion(content="Saved; done."))
    provider = make(wire, retry)
    history = [
        Message(role="system", content="You write kernels."),
        Message(role="user", content="Solve relu."),
    ]

    first = provider.generate(history, [WRITE], GenParams(max_tokens=256, seed=11, stop=["##"]))

    assert first.text == ""
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_a", "write_kernel", {"source": source})
    ]
    assert first.stop_reason == "tool_calls"
    assert first.errors == []
    usage = first.usage
    # prompt_tokens includes the cached ones: 1000 = 232 uncached + 768 cached
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (232, 768, 30)
    assert usage.cache_write_tokens == 0

    history += [
        Message(role="assistant", tool_calls=first.tool_calls),
        Message(
            role="tool", content="saved (22 bytes)", tool_call_id="call_a", name="write_kernel"
        ),
    ]
    second = provider.generate(history, [WRITE], GenParams(max_tokens=256))
    assert (second.text, second.stop_reason, second.model) == ("Saved; done.", "stop", "qwen-test")
    assert (second.usage.input_tokens, second.usage.cache_read_tokens) == (20, 0)

    sent = wire.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert (body["model"], body["seed"], body["stop"], body["max_tokens"]) == (
        "qwen-test",
        11,
        ["##"],
        256,
    )
    assert body["temperature"] == 0.0 and "top_p" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "write_kernel",
                "description": WRITE.description,
                "parameters": WRITE.parameters,
            },
        }
    ]
    turn = wire.requests[1].body["messages"]
    assert [m["role"] for m in turn] == ["system", "user", "assistant", "tool"]
    call = turn[2]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("call_a", "write_kernel")
    assert json.loads(call["function"]["arguments"]) == {"source": source}
    assert turn[3] == {"role": "tool", "tool_call_id": "call_a", "content": "saved (22 bytes)"}


def test_malformed_argument_json_is_recorded_not_raised(wire, retry):
    wire.reply(
        body=completion(
            content="Trying two calls.",
            tool_calls=[
                ("call_bad", "write_kernel", '{"source": "x'),
                ("call_list", "write_kernel", "[1, 2]"),
                ("call_ok", "check", ""),
            ],
            finish="tool_calls",
        )
    )

    response = make(wire, retry).generate([Message(role="user", content="go")], [WRITE])

    assert [(c.id, c.arguments) for c in response.tool_calls] == [("call_ok", {})]
    assert len(response.errors) == 2
    assert "call_bad" in response.errors[0] and "not valid JSON" in response.errors[0]
    assert "call_list" in response.errors[1] and "list, not an object" in response.errors[1]


def test_rate_limit_then_success_counts_the_retry(wire, retry, sleeps):
    wire.reply(
        429, error("Rate limit reached", "rate_limit_exceeded"), headers={"retry-after-ms": "1500"}
    )
    wire.reply(503, error("busy"))
    wire.reply(body=completion(content="ok"))

    response = make(wire, retry).generate([Message(role="user", content="hi")])

    assert (response.text, response.retries) == ("ok", 2)
    assert sleeps == [1.5, 2.0]  # server's retry-after-ms, then backoff for retry #2
    assert len(wire.requests) == 3


def test_persistent_server_error_is_bounded(wire, retry, sleeps):
    for _ in range(4):
        wire.reply(500, error("boom"))

    with pytest.raises(ProviderError, match=r"HTTP 500 .*2 retries") as info:
        make(wire, retry).generate([Message(role="user", content="hi")])

    assert len(wire.requests) == 3
    assert (info.value.retries, info.value.status) == (2, 500)
    assert wire.url in str(info.value)  # says where it tried


@pytest.mark.parametrize(
    "reply",
    [
        {"raw": b"<html>502 from a proxy</html>"},
        {"body": {"id": "x", "object": "chat.completion", "choices": []}},
        {"body": {"id": "x", "object": "chat.completion"}},
    ],
    ids=["not-json", "no-choices", "missing-fields"],
)
def test_malformed_body_is_a_clear_error(wire, retry, reply):
    wire.reply(200, **reply)

    with pytest.raises(ProviderError, match="malformed response.*base_url"):
        make(wire, retry).generate([Message(role="user", content="hi")])
    assert len(wire.requests) == 1


def test_not_found_names_the_model_and_is_not_retried(wire, retry):
    wire.reply(404, error("The model `qwen-test` does not exist", "invalid_request_error"))

    with pytest.raises(ProviderError, match="check the model name 'qwen-test'"):
        make(wire, retry).generate([Message(role="user", content="hi")])
    assert len(wire.requests) == 1


def test_local_server_needs_no_key_but_openai_does(wire, retry):
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        get_provider("openai/gpt-test")

    wire.reply(body=completion(content="local"))
    provider = get_provider("openai/qwen-test", base_url=f"{wire.url}/v1", retry=retry)
    assert provider.generate([Message(role="user", content="hi")]).text == "local"
    assert wire.requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


def test_base_url_and_key_from_environment(wire, retry, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    wire.reply(body=completion(content="env"))

    response = get_provider("openai/qwen-test", retry=retry).generate(
        [Message(role="user", content="hi")], params=GenParams(temperature=0.8, top_p=0.95)
    )

    assert response.text == "env"
    body = wire.requests[0].body
    assert (body["temperature"], body["top_p"]) == (0.8, 0.95)
    assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_api_key_never_appears_in_what_we_return(wire, retry):
    wire.reply(body=completion(content="fine"))
    wire.reply(400, error(f"Incorrect API key provided: {KEY}", "invalid_request_error"))
    provider = make(wire, retry)

    response = provider.generate([Message(role="user", content="hi")])
    with pytest.raises(ProviderError) as info:
        provider.generate([Message(role="user", content="hi")])

    assert wire.requests[1].headers["authorization"] == f"Bearer {KEY}"
    for text in (response.model_dump_json(), repr(provider), str(info.value)):
        assert KEY not in text


def test_official_endpoint_uses_max_completion_tokens():
    from upskills.llm.openai_api import OpenAIProvider

    assert OpenAIProvider("gpt-x", api_key=KEY).max_tokens_field == "max_completion_tokens"
    local = OpenAIProvider("m", base_url="http://127.0.0.1:1/v1", max_tokens_field=None)
    assert local.max_tokens_field == "max_tokens"


def test_parse_arguments():
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {} and parse_arguments(None) == {}
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_arguments("{'a': 1}")
    with pytest.raises(ValueError, match="str, not an object"):
        parse_arguments('"text"')
