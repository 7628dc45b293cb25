"""The ``openai/MODEL`` provider: Chat Completions through the official SDK, any compatible server.

Pointed at OpenAI by default; with ``base_url`` (or ``$OPENAI_BASE_URL``) it talks to any
OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama). Such servers often need no key, so
when a base_url is set and no key is found a placeholder key is sent. The SDK's own retries are
disabled; ``RetryPolicy`` retries instead.

Usage is normalised: OpenAI's ``prompt_tokens`` includes cached tokens
(``prompt_tokens_details.cached_tokens``), so ``input_tokens = prompt - cached`` and
``cache_read_tokens = cached``. A tool call whose arguments are not a JSON object is dropped
from ``tool_calls`` and described in ``ModelResponse.errors``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from upskills.llm import _http
from upskills.llm.base import (
    GenParams,
    Message,
    ModelResponse,
    ProviderError,
    RetryPolicy,
    ToolCallRequest,
    ToolSpec,
    Usage,
)

KEY_ENV = "OPENAI_API_KEY"
"""Environment variable holding the API key."""
BASE_URL_ENV = "OPENAI_BASE_URL"
"""Environment variable overriding the endpoint (an OpenAI-compatible server)."""
PLACEHOLDER_KEY = "no-key-needed"
"""Key sent to a custom base_url when none is configured (local servers ignore it)."""


def _sdk() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise ProviderError(
            "openai: the openai SDK is not installed; run: pip install 'openai>=1.50'",
            provider="openai",
        ) from exc
    return openai


def _is_official(base_url: str | None) -> bool:
    return base_url is None or (urlparse(base_url).hostname or "").endswith("api.openai.com")


class OpenAIProvider:
    """Chat Completions with function calling, on OpenAI or an OpenAI-compatible server."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        max_tokens_field: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        """Create a client.

        Args:
            model: model name as the server knows it.
            api_key: API key; defaults to ``$OPENAI_API_KEY``; optional with a custom base_url.
            base_url: endpoint, e.g. ``http://127.0.0.1:8000/v1``; defaults to
                ``$OPENAI_BASE_URL`` or OpenAI's.
            timeout_s: per-attempt timeout.
            retry: retry policy (default: 4 retries, exponential backoff).
            max_tokens_field: request field for the token limit; default
                ``max_completion_tokens`` on OpenAI, ``max_tokens`` elsewhere (what
                vLLM, SGLang, llama.cpp and Ollama all accept).
            extra_body: extra JSON fields for every request (server-specific options).

        Raises:
            ProviderError: the SDK is missing, or no key is set for OpenAI itself.
        """
        sdk = _sdk()
        self.model = model
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            if _is_official(self.base_url):
                raise ProviderError(
                    f"openai: no API key; set {KEY_ENV} or pass api_key= (or set base_url "
                    "for a local OpenAI-compatible server)",
                    provider="openai",
                )
            key = PLACEHOLDER_KEY
        self.retry = retry or RetryPolicy()
        self.max_tokens_field = max_tokens_field or (
            "max_completion_tokens" if _is_official(self.base_url) else "max_tokens"
        )
        self.extra_body = dict(extra_body or {})
        self._sdk = sdk
        self._secrets = (key,)
        self._client = sdk.OpenAI(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=timeout_s
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r})"

    def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        params: GenParams | None = None,
    ) -> ModelResponse:
        """Send one chat completion request (retrying transient failures).

        Args:
            messages: the conversation.
            tools: functions the model may call.
            params: sampling parameters (``seed`` is sent; servers may ignore it).

        Returns:
            The first choice, with usage normalised (cached prompt tokens split out).

        Raises:
            ProviderError: a non-retryable failure, retries exhausted, or a malformed body.
        """
        request = build_request(
            self.model, messages, tools, params or GenParams(), self.max_tokens_field
        )
        if self.extra_body:
            request["extra_body"] = self.extra_body
        start = time.monotonic()
        try:
            raw, retries = self.retry.call(
                lambda: self._client.chat.completions.create(**request),
                lambda exc: _http.classify(exc, self._sdk),
                provider=self.provider,
                advice=f"check that {self.base_url or 'the OpenAI API'} is reachable, "
                "or try again later",
            )
        except ProviderError:
            raise
        except ValueError as exc:  # the SDK could not decode the body (JSONDecodeError)
            raise _http.malformed(self.provider, f"{type(exc).__name__}: {exc}") from exc
        except self._sdk.OpenAIError as exc:
            raise _http.to_provider_error(
                exc,
                self._sdk,
                provider=self.provider,
                model=self.model,
                key_env=KEY_ENV,
                secrets=self._secrets,
            ) from exc
        response = parse_response(raw)
        return response.model_copy(
            update={"latency_s": time.monotonic() - start, "retries": retries}
        )


def build_request(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    params: GenParams,
    max_tokens_field: str = "max_tokens",
) -> dict[str, Any]:
    """Keyword arguments for ``client.chat.completions.create`` (a pure function)."""
    request: dict[str, Any] = {
        "model": model,
        "messages": [_to_wire(m) for m in messages],
        "temperature": params.temperature,
        max_tokens_field: params.max_tokens,
    }
    if params.top_p < 1.0:
        request["top_p"] = params.top_p
    if params.seed is not None:
        request["seed"] = params.seed
    if params.stop:
        request["stop"] = list(params.stop)
    if tools:
        request["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
    return request


def _to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise ProviderError(
                "openai: a tool message has no tool_call_id; set it to the id of the tool "
                "call it answers",
                provider="openai",
            )
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in message.tool_calls
        ]
    return wire


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """Decode a function call's argument string into an object.

    Args:
        raw: the JSON text the model produced (empty means no arguments).

    Returns:
        The arguments object.

    Raises:
        ValueError: the text is not JSON, or not a JSON object (the message says which).
    """
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"arguments are a JSON {type(value).__name__}, not an object")
    return value


def _usage(raw_usage: Any) -> Usage:
    if raw_usage is None:
        return Usage()
    prompt = raw_usage.prompt_tokens or 0
    details = getattr(raw_usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    cached = min(cached, prompt)
    return Usage(
        input_tokens=prompt - cached,
        output_tokens=raw_usage.completion_tokens or 0,
        cache_read_tokens=cached,
    )


def parse_response(raw: Any) -> ModelResponse:
    """Map an SDK ``ChatCompletion`` to a ModelResponse; unreadable bodies are ProviderErrors."""
    try:
        if not raw.choices:
            raise ValueError("no choices in the response")
        choice = raw.choices[0]
        message = choice.message
        calls: list[ToolCallRequest] = []
        errors: list[str] = []
        for call in message.tool_calls or []:
            function = call.function
            try:
                arguments = parse_arguments(function.arguments)
            except ValueError as exc:
                errors.append(f"tool call {call.id!r} ({function.name}): {exc}")
                continue
            calls.append(ToolCallRequest(id=call.id, name=function.name, arguments=arguments))
        return ModelResponse(
            text=message.content or "",
            tool_calls=calls,
            stop_reason=choice.finish_reason,
            usage=_usage(raw.usage),
            model=str(raw.model or ""),
            errors=errors,
        )
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        raise _http.malformed("openai", f"{type(exc).__name__}: {exc}") from exc
