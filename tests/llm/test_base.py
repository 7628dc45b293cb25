"""Retry policy, Retry-After parsing, the registry, the mock provider, and lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from upskills.llm import get_provider, provider_names, register_provider
from upskills.llm.base import (
    GenParams,
    Message,
    ModelResponse,
    Provider,
    ProviderError,
    RetryPolicy,
    Transient,
    parse_retry_after,
)
from upskills.llm.mock import MockProvider


class Flaky:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts = 0

    def __call__(self) -> str:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise ConnectionError(f"attempt {self.attempts}")
        return "ok"


def transient(exc):
    return (
        Transient("HTTP 503 service unavailable", status=503)
        if isinstance(exc, ConnectionError)
        else None
    )


def test_backoff_grows_exponentially_with_bounded_jitter():
    draws = iter([0.0, 1.0, 0.5, 0.5, 0.5])
    policy = RetryPolicy(
        initial_delay_s=1.0,
        multiplier=2.0,
        max_delay_s=5.0,
        jitter=0.25,
        random=lambda: next(draws),
    )

    delays = [policy.delay(n) for n in range(5)]

    assert delays == [0.75, 2.5, 4.0, 5.0, 5.0]


def test_retry_after_wins_and_is_capped():
    policy = RetryPolicy(max_retry_after_s=30.0)
    assert policy.delay(0, retry_after_s=7.0) == 7.0
    assert policy.delay(3, retry_after_s=9999.0) == 30.0


def test_call_retries_transient_failures_then_succeeds():
    sleeps: list[float] = []
    flaky = Flaky(failures=2)
    policy = RetryPolicy(max_retries=3, sleep=sleeps.append, random=lambda: 0.5)

    result, retries = policy.call(flaky, transient, provider="p")

    assert (result, retries, flaky.attempts) == ("ok", 2, 3)
    assert sleeps == [1.0, 2.0]


def test_call_gives_up_after_max_retries():
    sleeps: list[float] = []
    flaky = Flaky(failures=10)
    policy = RetryPolicy(max_retries=3, sleep=sleeps.append)

    with pytest.raises(
        ProviderError, match="still failing after 3 retries; try again later"
    ) as info:
        policy.call(flaky, transient, provider="p")

    assert flaky.attempts == 4 and len(sleeps) == 3
    assert (info.value.status, info.value.retries, info.value.provider) == (503, 3, "p")


def test_non_transient_errors_are_not_retried():
    def broken():
        raise KeyError("bug")

    with pytest.raises(KeyError):
        RetryPolicy(sleep=pytest.fail).call(broken, transient, provider="p")


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after": "12"}) == 12.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 55 <= parse_retry_after({"retry-after": future}) <= 61


def test_provider_error_is_one_line():
    assert str(ProviderError("a\n  b\tc")) == "a b c"


def test_get_provider_rejects_bad_specs():
    with pytest.raises(ProviderError, match="write PROVIDER/MODEL"):
        get_provider("claude")
    with pytest.raises(ProviderError, match="unknown provider 'gemini'.*anthropic, mock, openai"):
        get_provider("gemini/pro")
    with pytest.raises(ProviderError, match="bad option"):
        get_provider("openai/m", base_url="http://127.0.0.1:1/v1", temprature=1)


def test_missing_sdk_names_the_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ProviderError, match=r"pip install 'anthropic"):
        get_provider("anthropic/claude-x", api_key="k")
    with pytest.raises(ProviderError, match=r"pip install 'openai"):
        get_provider("openai/gpt-x", api_key="k")


def test_register_provider():
    register_provider(
        "echo", lambda model, **o: MockProvider(fn=lambda m, t: m[-1].content, model=model)
    )
    provider = get_provider("echo/e1")
    assert "echo" in provider_names()
    assert provider.generate([Message(role="user", content="ping")]).text == "ping"


def test_mock_script_plays_back_in_order_and_records_calls():
    scripted = ModelResponse(text="", tool_calls=[{"id": "c", "name": "check", "arguments": {}}])
    mock = MockProvider(
        [scripted, "plain", lambda messages, tools: f"{len(messages)} msgs, {len(tools)} tools"]
    )
    assert isinstance(mock, Provider)

    first = mock.generate([Message(role="user", content="a")])
    second = mock.generate([Message(role="user", content="b")], params=GenParams(seed=3))
    third = mock.generate([Message(role="user", content="c")] * 2)

    assert first.tool_calls[0].name == "check" and first.model == "mock"
    assert (second.text, second.stop_reason) == ("plain", "end_turn")
    assert third.text == "2 msgs, 0 tools"
    assert mock.calls[1][2].seed == 3
    with pytest.raises(ProviderError, match="script exhausted after 3 responses"):
        mock.generate([])


def test_mock_needs_exactly_one_of_script_or_fn():
    with pytest.raises(ProviderError, match="exactly one"):
        MockProvider()
    with pytest.raises(ProviderError, match="exactly one"):
        MockProvider(["a"], fn=lambda m, t: "b")
    with pytest.raises(ProviderError, match="returned int"):
        MockProvider(fn=lambda m, t: 3).generate([])


def test_mock_json_playback(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "responses": [
                    "hello",
                    {"text": "calling", "tool_calls": [{"id": "1", "name": "submit"}]},
                ]
            }
        )
    )

    mock = get_provider(f"mock/{script}")

    assert mock.generate([]).text == "hello"
    assert mock.generate([]).tool_calls[0].name == "submit"
    assert mock.model == str(script)


def test_mock_json_errors_name_file_and_item(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('["ok", {"txt": "typo"}]')
    with pytest.raises(ProviderError, match=r"bad.json: responses\[1\]\.txt"):
        get_provider(f"mock/{bad}")

    broken = tmp_path / "broken.json"
    broken.write_text('[\n"a",\n')
    with pytest.raises(ProviderError, match=r"broken.json:3: not valid JSON"):
        get_provider(f"mock/{broken}")

    with pytest.raises(ProviderError, match="no script file"):
        get_provider(f"mock/{tmp_path / 'missing.json'}")


def test_mock_by_name_with_options():
    mock = get_provider("mock/teacher", script=["x"])
    assert (mock.model, mock.generate([]).text) == ("teacher", "x")


def test_importing_the_package_loads_no_sdk_or_torch():
    code = (
        "import sys, upskills.llm, upskills.llm.base, upskills.llm.mock; "
        "heavy = ('torch', 'transformers', 'anthropic', 'openai'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
