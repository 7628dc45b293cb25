"""Model providers behind one interface: anthropic, openai(-compatible), transformers, mock.

``get_provider("anthropic/claude-sonnet-4-5")`` returns an object with ``generate(messages,
tools, params) -> ModelResponse``. Adapters and their SDKs are imported only when a provider
of that kind is created, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from upskills.llm.base import (
    GenParams,
    Message,
    ModelResponse,
    Provider,
    ProviderError,
    RetryPolicy,
    ToolCallRequest,
    ToolSpec,
    Usage,
)

__all__ = [
    "GenParams",
    "Message",
    "ModelResponse",
    "Provider",
    "ProviderError",
    "RetryPolicy",
    "ToolCallRequest",
    "ToolSpec",
    "Usage",
    "get_provider",
    "provider_names",
    "register_provider",
]

Factory = Callable[..., Provider]
"""Builds a provider from the part of the spec after ``provider/`` and keyword options."""

_BUILTIN: dict[str, tuple[str, str]] = {
    "anthropic": ("upskills.llm.anthropic_api", "AnthropicProvider"),
    "openai": ("upskills.llm.openai_api", "OpenAIProvider"),
    "transformers": ("upskills.llm.local", "TransformersProvider"),
}
_REGISTERED: dict[str, Factory] = {}


def _mock(name: str, **options: Any) -> Provider:
    from upskills.llm.mock import MockProvider, load_script

    if name.endswith(".json"):
        return MockProvider(load_script(name), model=options.pop("model", name), **options)
    return MockProvider(model=options.pop("model", name), **options)


def register_provider(name: str, factory: Factory) -> None:
    """Make ``get_provider("NAME/MODEL")`` call ``factory(MODEL, **options)``."""
    _REGISTERED[name] = factory


def provider_names() -> list[str]:
    """Every provider prefix ``get_provider`` accepts."""
    return sorted({*_BUILTIN, "mock", *_REGISTERED})


def get_provider(spec: str, **options: Any) -> Provider:
    """Create a provider from ``provider/model``.

    Args:
        spec: ``anthropic/MODEL``, ``openai/MODEL``, ``transformers/PATH_OR_GGUF`` (a folder,
            a ``.gguf`` file, or ``smollm2-135m``), or ``mock/NAME`` / ``mock/FILE.json``
            (tests only).
        **options: passed to the provider: ``api_key``, ``base_url``, ``timeout_s``,
            ``retry`` (anthropic, openai); ``gguf_file``, ``device``, ``chat_template``,
            ``dtype``, ``batch_size`` (transformers); ``script``, ``fn`` (mock).

    Returns:
        The provider.

    Raises:
        ProviderError: a malformed spec, an unknown provider, a missing SDK or key.
    """
    kind, sep, model = spec.partition("/")
    if not sep or not kind or not model:
        raise ProviderError(
            f"bad provider spec {spec!r}: write PROVIDER/MODEL, e.g. anthropic/claude-sonnet-4-5 "
            f"(providers: {', '.join(provider_names())})"
        )
    if kind in _REGISTERED:
        return _REGISTERED[kind](model, **options)
    if kind == "mock":
        return _mock(model, **options)
    if kind not in _BUILTIN:
        raise ProviderError(
            f"unknown provider {kind!r} in {spec!r}; use one of: {', '.join(provider_names())}"
        )
    module_name, class_name = _BUILTIN[kind]
    cls = getattr(importlib.import_module(module_name), class_name)
    try:
        return cls(model, **options)
    except TypeError as exc:
        if "unexpected keyword argument" not in str(exc):
            raise
        raise ProviderError(f"{kind}: bad option for {spec!r}: {exc}", provider=kind) from exc
