"""The provider interface: messages, tool specs, sampling parameters, responses and retries.

Every model backend (``anthropic``, ``openai``, ``transformers``, ``mock``) takes a list of
``Message`` and a list of ``ToolSpec`` and returns a ``ModelResponse`` whose usage is normalised
into ``upskills.trace.events.Usage``. Failures a caller can act on surface as one
``ProviderError`` whose one-line message says what to do. This module imports no SDK.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from upskills.trace.events import ToolCallRequest, Usage

__all__ = [
    "GenParams",
    "Message",
    "ModelResponse",
    "Provider",
    "ProviderError",
    "RetryPolicy",
    "ToolCallRequest",
    "ToolSpec",
    "Transient",
    "Usage",
    "parse_retry_after",
]

T = TypeVar("T")


class Message(BaseModel):
    """One chat message, in the provider-neutral form the agent keeps its history in."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks: system prompt, user, the model, or a tool result."""
    content: str = ""
    """Text content (for ``tool``: the tool's output)."""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    """Tool calls the assistant made in this turn (assistant messages only)."""
    tool_call_id: str | None = None
    """For ``tool`` messages: the id of the call this result answers."""
    name: str | None = None
    """For ``tool`` messages: the tool's name."""


class ToolSpec(BaseModel):
    """A tool the model may call."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Tool name, as the model must spell it."""
    description: str = ""
    """What the tool does, for the model."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments object."""


class GenParams(BaseModel):
    """Sampling parameters, shared by all providers (each maps what it supports)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature; 0 means greedy where the backend allows it."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass; 1.0 disables it (and it is then not sent)."""
    max_tokens: int = Field(default=4096, ge=1)
    """Most tokens to generate."""
    seed: int | None = None
    """Sampling seed (openai-compatible servers and transformers; anthropic has none)."""
    stop: list[str] | None = None
    """Stop sequences."""


class ModelResponse(BaseModel):
    """What a model returned for one request."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    """Text content (tool-call markup removed for local models)."""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    """Well-formed tool calls the model asked for, in order."""
    stop_reason: str | None = None
    """Why generation stopped, as the provider says it (``end_turn``, ``tool_use``, ``stop``...)."""
    usage: Usage = Field(default_factory=Usage)
    """Normalised token usage."""
    model: str = ""
    """Model that answered (as the provider reports it)."""
    latency_s: float = 0.0
    """Wall time of the request, retries included."""
    retries: int = 0
    """Retries the request needed (0 when the first attempt succeeded)."""
    errors: list[str] = Field(default_factory=list)
    """Problems found parsing the response (a tool call whose arguments were not a JSON
    object is dropped from ``tool_calls`` and described here)."""


@runtime_checkable
class Provider(Protocol):
    """A model backend: ``generate`` one response for a conversation."""

    provider: str
    """Provider name (``anthropic``, ``openai``, ``transformers``, ``mock``)."""
    model: str
    """Model name or path."""

    def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        params: GenParams | None = None,
    ) -> ModelResponse:
        """Generate one response; raises ProviderError on failure."""
        ...


class ProviderError(Exception):
    """A provider failed in a way the caller should report; the message says what to do."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        retries: int = 0,
    ) -> None:
        message = " ".join(str(message).split())
        super().__init__(message)
        self.provider = provider
        """Provider that failed."""
        self.status = status
        """HTTP status of the last failed attempt, when there was one."""
        self.retries = retries
        """Retries made before giving up."""


@dataclass(frozen=True)
class Transient:
    """A failure worth retrying: what it was, and the server's Retry-After if it sent one."""

    reason: str
    """Short description (``HTTP 429 rate limited``)."""
    retry_after_s: float | None = None
    """Delay the server asked for, in seconds."""
    status: int | None = None
    """HTTP status, when there was one."""


def _system_random() -> float:
    return random.random()


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter, honouring Retry-After.

    The n-th retry (0-based) waits ``min(max_delay_s, initial_delay_s * multiplier**n)``
    scaled by a random factor in ``[1 - jitter, 1 + jitter]``; when the server sent a
    Retry-After, that delay is used instead (capped at ``max_retry_after_s``).
    ``sleep`` and ``random`` are injectable so tests run instantly and deterministically.
    """

    max_retries: int = 4
    """Retries after the first attempt (0 disables retrying)."""
    initial_delay_s: float = 1.0
    """Delay before the first retry."""
    multiplier: float = 2.0
    """Backoff growth per retry."""
    max_delay_s: float = 60.0
    """Upper bound of a computed delay."""
    jitter: float = 0.25
    """Relative jitter: the delay is scaled by a factor drawn from [1 - jitter, 1 + jitter]."""
    max_retry_after_s: float = 300.0
    """Upper bound on a server's Retry-After."""
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    """How to wait (tests pass a recorder)."""
    random: Callable[[], float] = field(default=_system_random, repr=False, compare=False)
    """Uniform [0, 1) source for jitter."""

    def delay(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after_s is not None and retry_after_s >= 0:
            return min(retry_after_s, self.max_retry_after_s)
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier**attempt)
        factor = 1.0 + self.jitter * (2.0 * self.random() - 1.0)
        return max(0.0, base * factor)

    def call(
        self,
        attempt_fn: Callable[[], T],
        classify: Callable[[BaseException], Transient | None],
        *,
        provider: str,
        advice: str = "try again later",
    ) -> tuple[T, int]:
        """Run ``attempt_fn`` until it succeeds, a failure is not transient, or retries run out.

        Args:
            attempt_fn: one attempt; raises on failure.
            classify: maps an exception to ``Transient`` (retry) or None (re-raise as is).
            provider: provider name, for the error.
            advice: what the user should do when retries run out.

        Returns:
            The attempt's result and the number of retries it took.

        Raises:
            ProviderError: retries exhausted on transient failures.
        """
        retries = 0
        while True:
            try:
                return attempt_fn(), retries
            except Exception as exc:
                transient = classify(exc)
                if transient is None:
                    raise
                if retries >= self.max_retries:
                    raise ProviderError(
                        f"{provider}: {transient.reason}, still failing after {retries} "
                        f"retries; {advice}",
                        provider=provider,
                        status=transient.status,
                        retries=retries,
                    ) from exc
                self.sleep(self.delay(retries, transient.retry_after_s))
                retries += 1


def parse_retry_after(headers: Any) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms``, or ``Retry-After`` secs or date).

    Args:
        headers: a mapping of response headers (case-insensitive lookups if it supports them).

    Returns:
        The delay in seconds, or None when absent or unreadable.
    """
    if headers is None:
        return None
    get = getattr(headers, "get", None)
    if get is None:
        return None
    value = get("retry-after-ms") or get("Retry-After-Ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = get("retry-after") or get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def scrub(text: str, secrets: Sequence[str | None]) -> str:
    """Replace every non-empty secret in ``text`` with ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
