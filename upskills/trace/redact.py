"""Redaction: API keys, auth headers and tokens never reach a trace file.

Two layers: keys whose *name* says they hold a secret (``api_key``, ``authorization``,
``x-api-key``, ``token``...) have their values replaced wholesale, and string values anywhere are
scanned for well-known secret shapes (``sk-ant-...``, ``sk-...``, ``Bearer ...``, ``hf_...``,
GitHub tokens, AWS access keys). Values of the secret environment variables present in this
process are also masked wherever they appear. This is defence in depth, not a guarantee for
secrets of unknown shape embedded in free text.
"""

from __future__ import annotations

import os
import re
from typing import Any, cast

REDACTED = "[REDACTED]"
"""Replacement text."""

_SECRET_KEY = re.compile(
    r"(api[_-]?key|authorization|auth[_-]?token|access[_-]?token|refresh[_-]?token|secret|"
    r"password|passwd|x-api-key|bearer|session[_-]?key|^token$|_token$)",
    re.IGNORECASE,
)
_TOKEN_KEYS_ALLOWED = re.compile(
    r"(input|output|max|cache|prompt|completion|total).*tokens?$", re.I
)

_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{10,}"),
    re.compile(r"sk-(?:proj-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)bearer\s+[A-Za-z0-9_\-\.=]{8,}"),
    re.compile(r"hf_[A-Za-z0-9]{20,}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"xox[baprs]-[A-Za-z0-9\-]{10,}"),
]

_SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD|AUTH)", re.IGNORECASE)


def env_secret_values() -> list[str]:
    """Values of environment variables whose names look secret (8+ characters), longest first."""
    return sorted(
        (v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= 8),
        key=len,
        reverse=True,
    )


def redact_text(text: str, env_secrets: list[str] | None = None) -> str:
    """Mask secret-shaped substrings and known secret environment values in ``text``."""
    for value in env_secrets if env_secrets is not None else env_secret_values():
        if value in text:
            text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a secret (token *counts* are not secrets)."""
    if _TOKEN_KEYS_ALLOWED.search(key):
        return False
    return bool(_SECRET_KEY.search(key))


def redact(obj: Any, env_secrets: list[str] | None = None) -> Any:
    """Return a copy of a JSON-like object with secrets masked (see module docstring)."""
    secrets = env_secrets if env_secrets is not None else env_secret_values()
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        items = cast(dict[Any, Any], obj).items()
        for key, value in items:
            if isinstance(key, str) and is_secret_key(key) and isinstance(value, str | bytes):
                out[key] = REDACTED if value else value
            else:
                out[key] = redact(value, secrets)
        return out
    if isinstance(obj, list | tuple):
        return [redact(v, secrets) for v in cast(list[Any], obj)]
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    return obj
