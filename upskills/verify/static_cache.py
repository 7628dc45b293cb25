"""Static guard (c): a ``ModelNew`` that memoizes instead of computing.

Memoizing decorators on its methods (``functools.cache``, ``lru_cache``, ...) and stores inside
``forward`` keyed by its inputs themselves, ``id(input)``, ``hash(input)`` or
``input.data_ptr()``. Part of :func:`upskills.verify.static.static_guards`.
"""

from __future__ import annotations

import ast

from upskills.verify.static import StaticIssue, dotted_name, param_names
from upskills.verify.verdict import ErrorClass

CACHE_DECORATORS = {"cache", "lru_cache", "cached_property", "memoize"}
"""Decorator names that memoize results (rejected on ModelNew's methods)."""


def _keys_on_inputs(key: ast.AST, params: set[str]) -> bool:
    """True when a subscript key is an input itself, ``id(input)`` or ``input.data_ptr()``."""
    if isinstance(key, ast.Name):
        return key.id in params
    if isinstance(key, ast.Tuple):
        return any(_keys_on_inputs(elt, params) for elt in key.elts)
    if isinstance(key, ast.Call):
        func = key.func
        if isinstance(func, ast.Name) and func.id in {"id", "hash"} and key.args:
            return _keys_on_inputs(key.args[0], params)
        if isinstance(func, ast.Attribute) and func.attr == "data_ptr":
            return _keys_on_inputs(func.value, params)
    return False


def cache_issues(cls: ast.ClassDef, filename: str) -> list[StaticIssue]:
    """(c) memoizing decorators on ModelNew's methods; stores keyed by forward's inputs."""
    issues: list[StaticIssue] = []
    for item in cls.body:
        if not isinstance(item, ast.FunctionDef):
            continue
        for dec in item.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            name = (dotted_name(target) or "").split(".")[-1]
            if name in CACHE_DECORATORS:
                issues.append(
                    StaticIssue(
                        ErrorClass.GUARD,
                        dec.lineno,
                        f"{filename}:{dec.lineno}: guard (c) @{name} on ModelNew.{item.name} "
                        "returns cached results instead of computing them",
                        "cache",
                    )
                )
        if item.name != "forward":
            continue
        params = param_names(item)
        for node in ast.walk(item):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "setdefault" and node.args:
                    targets = [ast.Subscript(value=node.func.value, slice=node.args[0])]
                    targets[0].lineno = node.lineno  # type: ignore[attr-defined]
            for target in targets:
                if isinstance(target, ast.Subscript) and _keys_on_inputs(target.slice, params):
                    line = getattr(target, "lineno", item.lineno)
                    issues.append(
                        StaticIssue(
                            ErrorClass.GUARD,
                            line,
                            f"{filename}:{line}: guard (c) forward stores results keyed by its "
                            "inputs (a cache of results is not a kernel)",
                            "cache",
                        )
                    )
    return issues
