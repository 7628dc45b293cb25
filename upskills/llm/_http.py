"""Failure handling shared by the HTTP adapters (the anthropic and openai SDKs share a shape).

Both SDKs raise ``APIStatusError`` (with ``status_code`` and ``response.headers``),
``APITimeoutError`` and ``APIConnectionError``. Their own retries are disabled; this module
decides what is transient, and turns everything else into a one-line ``ProviderError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from upskills.llm.base import ProviderError, Transient, parse_retry_after, scrub

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
"""HTTP statuses worth retrying (any other 5xx is retried too)."""

_REASONS = {
    408: "request timeout",
    409: "conflict",
    425: "too early",
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "service unavailable",
    504: "gateway timeout",
    529: "overloaded",
}


def classify(exc: BaseException, sdk: ModuleType) -> Transient | None:
    """Return a ``Transient`` for errors worth retrying, None for the rest."""
    if isinstance(exc, sdk.APIStatusError):
        status = int(getattr(exc, "status_code", 0))
        if status in RETRYABLE_STATUS or status >= 500:
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None)
            reason = f"HTTP {status} {_REASONS.get(status, 'server error')}"
            return Transient(reason=reason, retry_after_s=parse_retry_after(headers), status=status)
        return None
    if isinstance(exc, sdk.APITimeoutError):
        return Transient(reason="request timed out")
    if isinstance(exc, sdk.APIConnectionError):
        return Transient(reason="could not connect")
    return None


def status_advice(status: int, *, key_env: str, model: str) -> str:
    """What to do about a non-retryable HTTP status."""
    if status == 401:
        return f"authentication failed: check {key_env} or the api_key option"
    if status == 403:
        return "permission denied: check that the API key may use this model"
    if status == 404:
        return f"not found: check the model name {model!r} and base_url"
    if status == 413:
        return "request too large: shorten the conversation or the tool outputs"
    return "check the model name and the request parameters"


def to_provider_error(
    exc: BaseException,
    sdk: ModuleType,
    *,
    provider: str,
    model: str,
    key_env: str,
    secrets: Sequence[str | None],
) -> ProviderError:
    """Turn a non-retryable SDK exception into a one-line ProviderError (secrets scrubbed)."""
    if isinstance(exc, sdk.APIStatusError):
        status = int(getattr(exc, "status_code", 0))
        detail = scrub(_short(getattr(exc, "message", str(exc))), secrets)
        advice = status_advice(status, key_env=key_env, model=model)
        return ProviderError(
            f"{provider}: HTTP {status}: {detail}; {advice}", provider=provider, status=status
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return malformed(provider, scrub(_short(str(exc)), secrets))
    detail = scrub(_short(f"{type(exc).__name__}: {exc}"), secrets)
    return ProviderError(f"{provider}: request failed: {detail}", provider=provider)


def malformed(provider: str, detail: str) -> ProviderError:
    """The error for a response body we cannot read."""
    return ProviderError(
        f"{provider}: malformed response from the server ({_short(detail)}); check that "
        f"base_url points to a server speaking the {provider} API",
        provider=provider,
    )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
