from __future__ import annotations

from pathlib import Path

import pytest

from upskills.trace import TraceWriter, read_trace
from upskills.trace.events import ModelCall, RunStart, ToolCall
from upskills.trace.redact import REDACTED, redact


def test_secret_keys_and_shapes_are_masked() -> None:
    data = {
        "api_key": "abc123456789",
        "headers": {"Authorization": "Bearer abcdefghijklmnop", "x-api-key": "zzzzzzzzzz"},
        "input_tokens": 12,
        "max_tokens": 100,
        "text": "use sk-ant-api03-AAAAAAAAAAAAAAAAAAAA and hf_abcdefghijklmnopqrstuvwx please",
        "nested": [{"token": "ghp_abcdefghijklmnopqrstuvwxyz0123"}],
    }
    out = redact(data, env_secrets=[])
    assert out["api_key"] == REDACTED
    assert out["headers"] == {"Authorization": REDACTED, "x-api-key": REDACTED}
    assert out["input_tokens"] == 12 and out["max_tokens"] == 100
    assert (
        "sk-ant" not in out["text"]
        and "hf_" not in out["text"]
        and out["text"].count(REDACTED) == 2
    )
    assert out["nested"][0]["token"] == REDACTED


def test_env_secret_values_never_reach_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "my-very-private-key-value-123"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as w:
        w.write(
            RunStart(
                trace_id=w.trace_id,
                task="t",
                task_hash="h",
                agent_role="teacher",
                parameters={"api_key": secret, "base_url": "http://127.0.0.1:1"},
            )
        )
        w.write(
            ModelCall(
                trace_id=w.trace_id,
                provider="anthropic",
                model="m",
                messages=[{"role": "user", "content": f"key is {secret}"}],
            )
        )
        w.write(
            ToolCall(
                trace_id=w.trace_id,
                tool_name="bash",
                call_id="1",
                arguments={"cmd": f"curl -H 'Authorization: Bearer {secret}'"},
            )
        )
    text = path.read_text()
    assert secret not in text
    assert text.count(REDACTED) >= 3
    assert len(read_trace(path, strict=True).events) == 3
