"""The ``openai/MODEL`` provider: Chat Completions through the official SDK, any compatible server.

Pointed at OpenAI by default; with ``base_url`` (or ``$OPENAI_BASE_URL``) it talks to any
OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama). Such servers often need no key, so
when a base_url is set and no key is found a placeholder key is sent. The SDK's own retries are
disabled; ``RetryPolicy`` retries instead.

Usage is normalised: OpenAI's ``prompt_tokens`` includes cached tokens
(``prompt_tokens_details.cached_tokens``), so ``input_tokens = prompt - cached`` and
``cache_read_tokens = cached``. A tool call whose arguments are not a JSON object is dropped
from ``tool_calls`` and described in ``ModelResponse.errors``.

``score_batch`` (the lift ladder's ``choose`` rung) works only on a server that returns prompt
log-probabilities through the legacy completions endpoint (``echo`` with ``logprobs``): vLLM
and SGLang do; OpenAI's own API, llama.cpp's server and Ollama do not. It is off unless the
student declares ``prompt_logprobs`` and gives the server's ``chat_template`` (that endpoint
applies none, so the prompt is rendered here). See ``docs/design/scoring.md``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
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
SCORING_SERVERS = (
    "vLLM and SGLang return prompt log-probabilities (/v1/completions with echo and logprobs); "
    "OpenAI's API, llama.cpp's server and Ollama do not"
)
"""Which servers can score continuations, for error messages."""

T = TypeVar("T")


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
    score_concurrency: int = 8
    """Scoring requests in flight at once (``score_batch``)."""

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
        prompt_logprobs: bool = False,
        chat_template: str | None = None,
        http_client: Any = None,
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
            extra_body: extra JSON fields for every chat request (server-specific options).
            prompt_logprobs: the server returns prompt log-probabilities on
                ``/v1/completions`` with ``echo`` (vLLM, SGLang): enables ``score_batch``.
            chat_template: the Jinja chat template the server uses (text or a file path);
                scoring renders prompts with it, as the completions endpoint applies none.
            http_client: an ``httpx`` client for the SDK (tests pass a mocked transport).

        Raises:
            ProviderError: the SDK is missing, no key is set for OpenAI itself,
                ``prompt_logprobs`` is set for OpenAI's API or without a chat template.
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
        self._template = _read_template(chat_template) if chat_template else None
        if prompt_logprobs and _is_official(self.base_url):
            raise ProviderError(
                "openai: prompt_logprobs is set, but OpenAI's API returns no prompt "
                "log-probabilities (its chat models take no echo); score choose cases with a "
                f"local (transformers) student or a served one: {SCORING_SERVERS}",
                provider="openai",
            )
        if prompt_logprobs and self._template is None:
            raise ProviderError(
                "openai: prompt_logprobs needs chat_template= (the Jinja template the server "
                "uses): /v1/completions applies no chat template, so prompts are rendered here",
                provider="openai",
            )
        self.scores_log_likelihood = prompt_logprobs
        """Whether ``score_batch`` works (declared by the student's ``prompt_logprobs``)."""
        self._sdk = sdk
        self._secrets = (key,)
        client_options: dict[str, Any] = {"http_client": http_client} if http_client else {}
        self._client = sdk.OpenAI(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=timeout_s, **client_options
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
        raw, retries = self._call(lambda: self._client.chat.completions.create(**request))
        response = parse_response(raw)
        return response.model_copy(
            update={"latency_s": time.monotonic() - start, "retries": retries}
        )

    def score_batch(
        self, requests: Sequence[tuple[Sequence[Message], str, Sequence[str]]]
    ) -> list[list[float]]:
        """Summed log-probability of each continuation after a conversation and an answer prefix.

        Each (request, continuation) pair is one ``/v1/completions`` request (``echo``,
        ``logprobs=1``, ``max_tokens=1``) whose prompt is the conversation rendered with the
        chat template (generation prompt appended), then the prefix, then the continuation;
        up to ``score_concurrency`` are in flight at once. A continuation's score sums the
        log-probabilities of the prompt tokens that hold at least one of its characters
        (``continuation_logprob``).

        Args:
            requests: (conversation, answer prefix, continuations) triples.

        Returns:
            ``result[i][j]``: the score of continuation ``j`` of request ``i`` (nats).

        Raises:
            ProviderError: scoring is not enabled for this student (OpenAI's API, or no
                ``prompt_logprobs``), the server failed, or it returned no prompt log-probs.
        """
        if not self.scores_log_likelihood or self._template is None:
            where = self.base_url or "OpenAI's API"
            raise ProviderError(
                f"openai: {where} is not set up to score log-likelihoods; {SCORING_SERVERS}. "
                "For a vLLM or SGLang server set prompt_logprobs: true and chat_template in the "
                "student's YAML",
                provider=self.provider,
            )
        jobs: list[tuple[int, int, str, str]] = []
        out: list[list[float]] = []
        for i, (messages, prefix, continuations) in enumerate(requests):
            context = render_prompt(self._template, messages) + prefix
            out.append([0.0] * len(continuations))
            jobs += [(i, j, context, c) for j, c in enumerate(continuations) if c]
        if not jobs:
            return out
        pool = ThreadPoolExecutor(max_workers=max(1, min(self.score_concurrency, len(jobs))))
        try:
            futures = {pool.submit(self._score_one, ctx, c): (i, j) for i, j, ctx, c in jobs}
            for future in as_completed(futures):
                i, j = futures[future]
                out[i][j] = future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return out

    def _score_one(self, context: str, continuation: str) -> float:
        prompt = context + continuation
        request = build_score_request(self.model, prompt)
        raw, _ = self._call(lambda: self._client.completions.create(**request))
        try:
            return continuation_logprob(raw, prompt, continuation)
        except ValueError as exc:
            raise ProviderError(
                f"openai: cannot score at {self.base_url}: {exc}; {SCORING_SERVERS}. If this "
                "server is not vLLM or SGLang, remove prompt_logprobs from the student",
                provider=self.provider,
            ) from exc

    def _call(self, attempt: Callable[[], T]) -> tuple[T, int]:
        """One request with retries; SDK failures become ProviderErrors."""
        try:
            return self.retry.call(
                attempt,
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


def build_score_request(model: str, prompt: str) -> dict[str, Any]:
    """Keyword arguments for ``client.completions.create`` that echo ``prompt`` with log-probs.

    ``logprobs=1``, not 0: some servers read 0 as "no log-probabilities". ``max_tokens=1``, not
    0: vLLM refuses 0 (the forward pass samples a token anyway); the generated token is ignored.
    """
    return {
        "model": model,
        "prompt": prompt,
        "echo": True,
        "logprobs": 1,
        "max_tokens": 1,
        "temperature": 0.0,
    }


def continuation_logprob(raw: Any, prompt: str, continuation: str) -> float:
    """Sum of the log-probabilities of the echoed prompt tokens that make ``continuation``.

    ``prompt`` ends with ``continuation``. The prompt's tokens are the first
    ``usage.prompt_tokens`` of ``choices[0].logprobs`` (the rest were generated). Walking back
    from the prompt's end, tokens are taken until their text covers the continuation: a token
    belongs to the continuation when it holds at least one of its characters, so a token that
    straddles the boundary counts in full, for every candidate alike. Offsets are measured on
    the token strings from the end, not with ``text_offset``, which servers count from a
    decoded BOS (vLLM) or leave at -1 (SGLang).

    Args:
        raw: the SDK's ``Completion`` for an ``echo`` request.
        prompt: the prompt sent.
        continuation: its tail being scored (non-empty).

    Returns:
        The summed log-probability (nats).

    Raises:
        ValueError: the response holds no prompt log-probabilities, or its token strings do not
            spell the end of the prompt (the message says which).
    """
    try:
        logprobs = raw.choices[0].logprobs
        tokens = [str(t) for t in (logprobs.tokens or [])] if logprobs is not None else []
        values = list(logprobs.token_logprobs or []) if logprobs is not None else []
        usage = raw.usage
        n = int(usage.prompt_tokens) if usage is not None and usage.prompt_tokens else 0
    except (AttributeError, TypeError, IndexError) as exc:
        raise ValueError(f"unreadable logprobs ({type(exc).__name__}: {exc})") from exc
    n = n or len(tokens) - 1  # no usage: max_tokens=1 generated one token
    if len(values) != len(tokens) or n < 2 or n > len(tokens):
        raise ValueError(
            f"the response has log-probabilities for {len(values)} tokens but the prompt has "
            f"{n}: the server did not echo the prompt's log-probabilities"
        )
    start, covered = n, 0
    while covered < len(continuation) and start > 1:
        start -= 1
        covered += len(tokens[start])
    tail = "".join(tokens[start:n])
    if covered < len(continuation) or not prompt.endswith(tail):
        raise ValueError(
            f"the echoed tokens do not spell the end of the prompt ({tail[-60:]!r} against "
            f"{prompt[-60:]!r}); are tokens returned as ids, or is a character split across "
            "tokens?"
        )
    picked = values[start:n]
    if any(v is None for v in picked):
        raise ValueError("the echoed prompt tokens carry no log-probabilities")
    return float(sum(float(v) for v in picked))


def _read_template(value: str) -> str:
    """A chat template given inline (Jinja text) or as a file path."""
    if "{{" in value or "{%" in value:
        return value
    path = Path(value).expanduser()
    if not path.is_file():
        raise ProviderError(
            f"openai: chat_template {value!r} is neither a Jinja template nor a file",
            provider="openai",
        )
    return path.read_text(encoding="utf-8")


def render_prompt(template: str, messages: Sequence[Message]) -> str:
    """The prompt text a Jinja chat template makes of ``messages``, generation prompt appended.

    The environment is the one transformers' ``apply_chat_template`` uses (sandboxed,
    ``trim_blocks``, ``lstrip_blocks``, loop controls, ``tojson``, ``raise_exception``,
    ``strftime_now``). ``bos_token`` renders empty: the server's tokenizer adds it
    (``add_special_tokens`` defaults to true on ``/v1/completions``).

    Raises:
        ProviderError: jinja2 is missing, or the template fails to render.
    """
    try:
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:
        raise ProviderError(
            "openai: scoring renders the chat template with jinja2, which is not installed; "
            "run: pip install jinja2",
            provider="openai",
        ) from exc
    from upskills.llm.toolcalls import template_messages

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    def tojson(
        value: Any, indent: int | None = None, separators: Any = None, sort_keys: bool = False
    ) -> str:
        return json.dumps(
            value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys
        )

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    try:
        return env.from_string(template).render(
            messages=template_messages(messages),
            add_generation_prompt=True,
            bos_token="",
            eos_token="",
        )
    except jinja2.TemplateError as exc:
        raise ProviderError(
            f"openai: the chat_template failed to render: {exc}", provider="openai"
        ) from exc


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
