"""The ``anthropic/MODEL`` provider: the Anthropic Messages API through the official SDK.

The SDK's own retries are disabled (``max_retries=0``); ``RetryPolicy`` retries instead, so every
retry is counted in ``ModelResponse.retries`` and bounded. System messages travel in the
``system`` parameter; tool calls and results map to ``tool_use`` / ``tool_result`` blocks.
With ``prompt_cache=True`` (the default) the system prompt and the newest message carry a
``cache_control`` breakpoint, so a multi-turn agent pays full price for each prefix once.
Current Claude models reject sampling parameters (and recent SDKs dropped them), so
``temperature``/``top_p`` are sent only with ``sampling=True``; the API has no seed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

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

KEY_ENV = "ANTHROPIC_API_KEY"
"""Environment variable holding the API key."""
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
"""Environment variable overriding the API endpoint."""


def _sdk() -> Any:
    try:
        import anthropic
    except ImportError as exc:
        raise ProviderError(
            "anthropic: the anthropic SDK is not installed; run: pip install 'anthropic>=0.40'",
            provider="anthropic",
        ) from exc
    return anthropic


class AnthropicProvider:
    """Claude models through the Anthropic Messages API."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        prompt_cache: bool = True,
        sampling: bool = False,
    ) -> None:
        """Create a client.

        Args:
            model: model name, e.g. ``claude-sonnet-4-5``.
            api_key: API key; defaults to ``$ANTHROPIC_API_KEY``.
            base_url: API endpoint; defaults to ``$ANTHROPIC_BASE_URL`` or Anthropic's.
            timeout_s: per-attempt timeout.
            retry: retry policy (default: 4 retries, exponential backoff).
            prompt_cache: mark cache breakpoints on the system prompt and newest message.
            sampling: send ``temperature`` and ``top_p`` (current Claude models reject them,
                so by default the model's own sampling is used).

        Raises:
            ProviderError: the SDK is missing or no API key is set.
        """
        sdk = _sdk()
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            raise ProviderError(
                f"anthropic: no API key; set {KEY_ENV} or pass api_key=", provider="anthropic"
            )
        self.model = model
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        self.retry = retry or RetryPolicy()
        self.prompt_cache = prompt_cache
        self.sampling = sampling
        self._sdk = sdk
        self._secrets = (key,)
        self._client = sdk.Anthropic(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=timeout_s
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        params: GenParams | None = None,
    ) -> ModelResponse:
        """Send one Messages API request (retrying transient failures).

        Args:
            messages: the conversation; system messages are joined into ``system``.
            tools: tools the model may call.
            params: ``max_tokens`` and ``stop`` are sent; ``temperature`` and ``top_p`` only
                with ``sampling=True``; ``seed`` never (the API has none).

        Returns:
            The response, with usage split into uncached input, cache reads and cache writes.

        Raises:
            ProviderError: a non-retryable failure, retries exhausted, or a malformed body.
        """
        request = build_request(
            self.model,
            messages,
            tools,
            params or GenParams(),
            prompt_cache=self.prompt_cache,
            sampling=self.sampling,
        )
        start = time.monotonic()
        try:
            raw, retries = self.retry.call(
                lambda: self._client.messages.create(**request),
                lambda exc: _http.classify(exc, self._sdk),
                provider=self.provider,
                advice=self._advice(),
            )
        except ProviderError:
            raise
        except ValueError as exc:  # the SDK could not decode the body (JSONDecodeError)
            raise _http.malformed(self.provider, f"{type(exc).__name__}: {exc}") from exc
        except self._sdk.AnthropicError as exc:
            raise self._error(exc) from exc
        response = parse_response(raw)
        return response.model_copy(
            update={"latency_s": time.monotonic() - start, "retries": retries}
        )

    def _advice(self) -> str:
        where = self.base_url or "the Anthropic API"
        return f"check that {where} is reachable, or try again later"

    def _error(self, exc: BaseException) -> ProviderError:
        return _http.to_provider_error(
            exc,
            self._sdk,
            provider=self.provider,
            model=self.model,
            key_env=KEY_ENV,
            secrets=self._secrets,
        )


def build_request(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    params: GenParams,
    *,
    prompt_cache: bool = True,
    sampling: bool = False,
) -> dict[str, Any]:
    """Keyword arguments for ``client.messages.create`` (a pure function, tested directly)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": params.max_tokens,
        "messages": _to_wire_messages(messages),
    }
    if sampling:
        # sent as raw JSON fields: recent SDKs no longer take them as arguments
        request["extra_body"] = {"temperature": params.temperature}
        if params.top_p < 1.0:
            request["extra_body"]["top_p"] = params.top_p
    if params.stop:
        request["stop_sequences"] = list(params.stop)
    if system:
        block: dict[str, Any] = {"type": "text", "text": system}
        if prompt_cache:
            block["cache_control"] = {"type": "ephemeral"}
        request["system"] = [block]
    if tools:
        request["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
    if prompt_cache and request["messages"]:
        last_blocks = request["messages"][-1]["content"]
        if last_blocks:
            last_blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return request


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise ProviderError(
                "anthropic: a tool message has no tool_call_id; set it to the id of the "
                "tool call it answers",
                provider="anthropic",
            )
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content or "(no output)",
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in message.tool_calls
        )
    return blocks


def _to_wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Map to Anthropic messages: tool results become user turns; same-role turns merge."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            previous = wire[-1]["content"]
            # tool_result blocks must come first in a user turn
            if role == "user" and blocks[0]["type"] == "tool_result":
                results = [b for b in previous if b["type"] == "tool_result"]
                others = [b for b in previous if b["type"] != "tool_result"]
                wire[-1]["content"] = results + blocks + others
            else:
                previous.extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def parse_response(raw: Any) -> ModelResponse:
    """Map an SDK ``Message`` to a ModelResponse; a body we cannot read is a ProviderError."""
    try:
        texts: list[str] = []
        calls: list[ToolCallRequest] = []
        for block in raw.content:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                arguments = block.input
                if not isinstance(arguments, dict):
                    raise TypeError(f"tool_use input is {type(arguments).__name__}, not object")
                calls.append(ToolCallRequest(id=block.id, name=block.name, arguments=arguments))
        usage = raw.usage
        return ModelResponse(
            text="".join(texts),
            tool_calls=calls,
            stop_reason=raw.stop_reason,
            usage=Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
                cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
            ),
            model=str(raw.model or ""),
        )
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise _http.malformed("anthropic", f"{type(exc).__name__}: {exc}") from exc
