"""``mock/...``: a scripted provider for tests. Never a default, never reported as a result.

``MockProvider(script=[...])`` plays back its items in order: a ``ModelResponse``, a str
(plain text), or a callable ``(messages, tools) -> ModelResponse | str``.
``MockProvider(fn=...)`` answers every request with ``fn(messages, tools)``.
``MockProvider(..., scorer=...)`` also answers ``score_batch`` (choose cases) with
``scorer(messages, prefix, continuations) -> scores``; without a scorer it cannot score, like an
API provider. ``get_provider("mock/FILE.json")`` plays back a JSON file: a list (or
``{"responses": [...]}``) whose items are strings or ``ModelResponse`` objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from upskills.llm.base import GenParams, Message, ModelResponse, ProviderError, ToolSpec

Reply = ModelResponse | str
"""What a script item or function may produce."""
ScriptItem = ModelResponse | str | Callable[[Sequence[Message], Sequence[ToolSpec]], Reply]
"""One scripted answer."""
Scorer = Callable[[Sequence[Message], str, Sequence[str]], Sequence[float]]
"""(conversation, answer prefix, continuations) -> a score (nats) per continuation."""


class MockProvider:
    """A test double: scripted responses or a function of the messages."""

    provider = "mock"

    def __init__(
        self,
        script: Sequence[ScriptItem] | None = None,
        *,
        fn: Callable[[Sequence[Message], Sequence[ToolSpec]], Reply] | None = None,
        model: str = "mock",
        scorer: Scorer | None = None,
    ) -> None:
        """Create a mock.

        Args:
            script: answers, played back one per request.
            fn: a function answering every request (instead of a script).
            model: model name to report.
            scorer: log-likelihood function for ``score_batch`` (none: the mock cannot score).

        Raises:
            ProviderError: neither or both of ``script`` and ``fn`` given.
        """
        if (script is None) == (fn is None):
            raise ProviderError(
                "mock: pass exactly one of script=[...] or fn=callable", provider="mock"
            )
        self.model = model
        self.script = list(script or [])
        self.fn = fn
        self.scorer = scorer
        self.calls: list[tuple[list[Message], list[ToolSpec], GenParams]] = []
        """Every request received: (messages, tools, params)."""

    @property
    def scores_log_likelihood(self) -> bool:
        """Whether ``score_batch`` works (a scorer was given)."""
        return self.scorer is not None

    def score_batch(
        self, requests: Sequence[tuple[Sequence[Message], str, Sequence[str]]]
    ) -> list[list[float]]:
        """The scorer's scores of each request's continuations.

        Raises:
            ProviderError: the mock was made without a scorer.
        """
        if self.scorer is None:
            raise ProviderError("mock: made without scorer=, so it cannot score", provider="mock")
        return [[float(v) for v in self.scorer(m, p, c)] for m, p, c in requests]

    def __repr__(self) -> str:
        return f"MockProvider(model={self.model!r}, calls={len(self.calls)})"

    def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        params: GenParams | None = None,
    ) -> ModelResponse:
        """Return the next scripted answer (or ``fn``'s), recording the request.

        Raises:
            ProviderError: the script is used up.
        """
        index = len(self.calls)
        self.calls.append((list(messages), list(tools), params or GenParams()))
        if self.fn is not None:
            item: ScriptItem = self.fn
        elif index < len(self.script):
            item = self.script[index]
        else:
            raise ProviderError(
                f"mock: script exhausted after {len(self.script)} responses; add more items",
                provider="mock",
            )
        reply = item(messages, tools) if callable(item) else item
        if isinstance(reply, str):
            reply = ModelResponse(text=reply, stop_reason="end_turn")
        if not isinstance(reply, ModelResponse):
            raise ProviderError(
                f"mock: script item {index} returned {type(reply).__name__}; return a "
                "ModelResponse or a str",
                provider="mock",
            )
        if not reply.model:
            reply = reply.model_copy(update={"model": self.model})
        return reply


def load_script(path: str | Path) -> list[Reply]:
    """Read a JSON playback script.

    Args:
        path: a ``.json`` file: a list, or ``{"responses": [...]}``, of strings or
            ``ModelResponse`` objects.

    Raises:
        ProviderError: missing file, bad JSON, or an item that is not a response (naming it).
    """
    path = Path(path)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProviderError(f"mock: no script file {path}", provider="mock") from exc
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"mock: {path}:{exc.lineno}: not valid JSON ({exc.msg})", provider="mock"
        ) from exc
    if isinstance(data, dict) and set(data) == {"responses"}:
        data = data["responses"]
    if not isinstance(data, list):
        raise ProviderError(
            f'mock: {path}: expected a list of responses or {{"responses": [...]}}',
            provider="mock",
        )
    items: list[Reply] = []
    for index, item in enumerate(data):
        if isinstance(item, str):
            items.append(item)
            continue
        try:
            items.append(ModelResponse.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(item)"
            raise ProviderError(
                f"mock: {path}: responses[{index}].{where}: {first['msg']}", provider="mock"
            ) from exc
    return items
