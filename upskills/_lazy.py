"""Lazy package faces: a package's public names resolve on first use, not at import.

A package ``__init__`` lists ``name -> module`` and calls :func:`lazy_face`, so ``import
upskills.verify`` stays cheap and importing a low layer never drags in a higher one. Type
checkers see the names through ``if TYPE_CHECKING:`` imports in the same ``__init__``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_face(
    package: str, names: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Build a package's ``__getattr__`` and ``__dir__`` for lazily imported public names.

    Args:
        package: the package's ``__name__`` (for error messages).
        names: public name -> module that defines it.

    Returns:
        ``(__getattr__, __dir__)`` to assign at module level.
    """

    def __getattr__(name: str) -> Any:  # noqa: N807
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(names)

    return __getattr__, __dir__
