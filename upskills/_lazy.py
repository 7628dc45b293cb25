"""Lazy package faces: a package's public names resolve on first use, not at import.

A package ``__init__`` lists ``name -> module`` and calls :func:`lazy_face`, so ``import
upskills.verify`` stays cheap and importing a low layer never drags in a higher one. Type
checkers see the names through ``if TYPE_CHECKING:`` imports in the same ``__init__``.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any


class _Face(types.ModuleType):
    """A package whose public names are not overwritten by same-named submodules.

    Importing ``upskills.agent.teach`` (the module) makes Python set the package attribute
    ``teach`` to the module, which would shadow the lazily exported ``teach`` function. An
    eager ``from .teach import teach`` in ``__init__`` used to win that race; this keeps it won.
    """

    _lazy_names: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            name in self._lazy_names
            and isinstance(value, types.ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
        ):
            return
        super().__setattr__(name, value)


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
    face = sys.modules[package]
    face.__class__ = _Face
    object.__setattr__(face, "_lazy_names", frozenset(names))

    def __getattr__(name: str) -> Any:  # noqa: N807
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(names)

    return __getattr__, __dir__
