"""The modules the Triton interpreter's path runs through, kept as they were.

A CPU verdict runs each kernel through the Triton interpreter in the candidate's process,
and the interpreter computes with NumPy and rewrites the kernel with ``inspect``, ``ast`` and
``textwrap`` before it runs. A candidate that changed one of those functions changed what
runs, not what is compiled for sm_90: ``ast.increment_lineno`` or
``ast.NodeTransformer.visit`` wrapped to turn the kernel's subtraction into an addition, and
``numpy.subtract`` set to ``numpy.add``, each passed the vector add with a subtraction
compiled (2026-12-06).

So, once the verifier's hooks are in place, :class:`WatchedModules` keeps every function,
class and module held by the modules under :data:`ROOTS` and by the classes they define, and
:meth:`WatchedModules.changed` names one that was replaced or removed, a callable that took a
value's place, or a new name that shadows a builtin (in a module) or a base's (in a class).
A namespace equal to the last one seen is passed in C (1.2 ms for ~1,100 namespaces); only
one that changed is read name by name.

It also keeps the attributes of Triton's language objects that modules hold by name (the
dtypes, ``tl.float16`` and the rest): ``tl.float16.name`` and ``primitive_bitwidth`` set to
float32's, through a helper's parameters where the static check does not see the library,
made the interpreter compute a kernel's fp16 rounding in fp32, and a vector add that rounds
through fp16 (wrong on a GPU) passed (2026-12-07). Those attributes never change once made.
So do the contents of the lists, dicts and sets that Triton's language and interpreter hold
in their modules and classes (``tl.dtype.FP_TYPES``, the builder's map of atomic ops to the
interpreter's), but for the interpreter's cache of rewrites (``interpreter_integrity``'s).
"""

from __future__ import annotations

import builtins
import sys
import types
from dataclasses import dataclass
from typing import Any, cast

ROOTS = frozenset(
    """triton numpy ast _ast inspect textwrap linecache tokenize token dis keyword functools
    _functools dataclasses typing math types operator _operator collections _collections_abc
    abc _abc enum re copy weakref _weakref contextlib itertools warnings numbers os posixpath
    genericpath importlib sys builtins""".split()
)
"""Top-level packages watched: Triton, NumPy and the standard library the interpreter and
its rewriter call (``builtins`` itself too: a launch is checked, not only the import)."""


@dataclass
class _Space:
    name: str
    space: Any
    """A module or a class."""
    kept: dict[str, Any]
    """Its functions, classes, modules and descriptors as the snapshot found them."""
    plain: frozenset[str]
    """Its other names at the snapshot (values, which may change)."""
    last: dict[str, Any]
    """The whole namespace as last seen with nothing watched changed."""


FROZEN_MODULE = "triton.language.core"
"""Instances of classes defined here (dtypes, constexprs) are held attribute by attribute
(:func:`_frozen`). The interpreter's builder and semantic are held by
``interpreter_integrity``'s own rule."""


FROZEN_CONTAINERS = ("triton.language", "triton.runtime.interpreter", "triton._utils")
"""Modules (and their submodules and classes) whose lists, dicts and sets are held by content
(not Python's own: ``__all__``, ``__path__``, ``__annotations__``, a module's ``__builtins__``)."""

CACHES = frozenset({"rewritten_fn", "_triton_jit_function_registry"})
"""Containers in those that grow as kernels are defined and run."""


def _contents(value: Any) -> tuple[Any, ...]:
    """A container's contents, compared by identity (a value's own == could lie)."""
    if isinstance(value, dict):
        return tuple(x for pair in cast("dict[Any, Any]", value).items() for x in pair)
    if isinstance(value, set):
        return tuple(sorted(cast("set[Any]", value), key=id))
    return tuple(cast("list[Any]", value))


def _is_container(value: Any) -> bool:
    return isinstance(value, list | dict | set)


def _same(now: tuple[Any, ...], kept: tuple[Any, ...]) -> bool:
    return len(now) == len(kept) and all(a is b for a, b in zip(now, kept, strict=True))


def _frozen(value: Any) -> bool:
    """An instance of one of Triton's language classes (a dtype), with attributes of its own."""
    kind: Any = cast(Any, type(value))
    return (
        getattr(kind, "__module__", None) == FROZEN_MODULE
        and not isinstance(value, type | types.ModuleType)
        and isinstance(getattr(value, "__dict__", None), dict)
    )


def _watched(value: Any) -> bool:
    """A function, class, module or descriptor: what code runs through (library objects only)."""
    kind: Any = cast(Any, type(value))
    return callable(value) or isinstance(value, types.ModuleType) or hasattr(kind, "__get__")


def _namespace(space: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", vars(space))


class WatchedModules:
    """What the modules under :data:`ROOTS` hold, fingerprinted now."""

    def __init__(self, skip: tuple[Any, ...] = (), roots: frozenset[str] = ROOTS) -> None:
        """Fingerprint the modules under ``roots``, but for the namespaces in ``skip``.

        Those are watched by rules of their own: Triton's language, which the interpreter
        patches for a launch's length (``interpreter_integrity._check_language``).
        """
        self._spaces: list[_Space] = []
        self._instances: dict[int, tuple[str, Any, dict[str, Any]]] = {}
        self._containers: dict[int, tuple[str, Any, tuple[Any, ...]]] = {}
        skipped = {id(space) for space in skip}
        modules: dict[str, Any] = dict(sys.modules)
        for name, module in modules.items():
            if module is None or name.split(".")[0] not in roots:
                continue
            names = dict(_namespace(module))
            spaces = [(name, module)] + [
                (f"{name}.{value.__qualname__}", value)
                for value in names.values()
                if isinstance(value, type) and getattr(value, "__module__", None) == name
            ]
            for where, space in spaces:
                self._add(where, space, skipped)
            for key, value in names.items():
                if _frozen(value) and id(value) not in self._instances:
                    self._instances[id(value)] = (f"{name}.{key}", value, dict(_namespace(value)))
            if any(name == p or name.startswith(p + ".") for p in FROZEN_CONTAINERS):
                self._hold_containers(spaces)

    def _hold_containers(self, spaces: list[tuple[str, Any]]) -> None:
        """Keep the contents of the lists, dicts and sets these namespaces hold."""
        for where, space in spaces:
            for key, value in list(_namespace(space).items()):
                if key in CACHES or key.startswith("__") or value is sys.modules:
                    continue  # sys.modules: triton.language.extra holds it as ``modules``
                if _is_container(value) and id(value) not in self._containers:
                    self._containers[id(value)] = (f"{where}.{key}", value, _contents(value))

    def _add(self, name: str, space: Any, skipped: set[int]) -> None:
        if id(space) in skipped:
            return
        now = dict(_namespace(space))
        kept = {key: value for key, value in now.items() if _watched(value)}
        plain = frozenset(now.keys() - kept.keys())
        self._spaces.append(_Space(name, space, kept, plain, now))

    def changed(self) -> str | None:
        """The first watched name changed since the snapshot (``module.name``), or None."""
        for where, value, kept in self._instances.values():
            now = _namespace(value)  # by identity: a value's own == could say it is unchanged
            names = sorted(
                k for k in now.keys() | kept.keys() if now.get(k, _ABSENT) is not kept.get(k)
            )
            if names:
                return f"{where}'s attributes changed ({', '.join(names)})"
        for where, value, kept in self._containers.values():
            if not _same(_contents(value), kept):
                return f"{where}'s contents changed"
        for entry in self._spaces:
            now = _namespace(entry.space)
            try:
                if now == entry.last:  # identical values compare equal without running code
                    continue
            except Exception:  # noqa: BLE001 - a value whose == raises (an array): read on
                pass
            found = _change(entry, dict(now))
            if found is not None:
                return found
            entry.last = dict(now)
        return None


def _change(entry: _Space, now: dict[str, Any]) -> str | None:
    """What changed in one namespace, if it is watched; None for a value's change alone."""
    where = entry.name
    for key, value in entry.kept.items():
        if now.get(key, _ABSENT) is not value:
            return f"{where}.{key} was replaced" if key in now else f"{where}.{key} was removed"
    is_class = isinstance(entry.space, type)
    for key in now.keys() - entry.kept.keys():
        value = now[key]
        if key in entry.plain:
            if callable(value) and not isinstance(value, type | types.ModuleType):
                return f"{where}.{key} became a function"  # a hook that was None, say
            continue
        if is_class:
            if any(key in vars(base) for base in entry.space.__mro__[1:]):
                return f"{where}.{key} is new and shadows a base class's"
        elif key in vars(builtins):
            return f"{where}.{key} is new and shadows the builtin"
    return None


_ABSENT = object()
