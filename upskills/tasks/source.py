"""Static checks of a KernelBench-format reference, without executing it.

Task files may come from anywhere (a KernelBench checkout, a user's folder), so the loader only
parses them with :mod:`ast`. Executing a reference is the verifier's job, in a child process
(``upskills.tasks.runtime``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

NOT_LITERAL = object()
"""Placeholder value of a module global whose right-hand side is not a plain literal."""


class TaskError(Exception):
    """A malformed task file or task metadata; the message names the file (and line)."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        where = self.path or ""
        if where and line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}" if where else message)


@dataclass
class SourceInfo:
    """What the loader learns from a reference's source by reading it."""

    docstring: str | None
    """The module docstring, if any."""
    globals: dict[str, object] = field(default_factory=dict)
    """Module-level names assigned once, with literal values (or ``NOT_LITERAL``)."""
    init_params: list[str] = field(default_factory=list)
    """Parameter names of ``Model.__init__`` after ``self`` (empty when it has none)."""
    forward_params: list[str] = field(default_factory=list)
    """Parameter names of ``Model.forward`` after ``self``."""
    dtypes: list[str] = field(default_factory=list)
    """``torch.<dtype>`` names mentioned in the source, in order of first appearance."""


_DTYPE_NAMES = {
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "int32": "int32",
    "int": "int32",
    "int64": "int64",
    "long": "int64",
    "bool": "bool",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
}
"""``torch.<attr>`` spellings of dtypes and their canonical names."""

KNOWN_DTYPES = tuple(sorted(set(_DTYPE_NAMES.values())))
"""Dtype names a task may declare."""


def inspect_source(source: str, path: str | Path) -> SourceInfo:
    """Check that ``source`` is a KernelBench-format reference and describe it.

    Args:
        source: the module's Python source.
        path: where it came from, for error messages.

    Returns:
        The module docstring, its literal globals, and ``Model``'s signatures.

    Raises:
        TaskError: a syntax error (with its line), no ``class Model`` with a ``forward``
            method, or no top-level ``get_inputs``/``get_init_inputs`` function.
    """
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskError(f"syntax error: {exc.msg}", path, exc.lineno) from None
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    functions = {
        n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    model = classes.get("Model")
    if model is None:
        raise TaskError(
            "no top-level `class Model(nn.Module)`: a KernelBench reference defines the "
            "PyTorch model to reproduce as `Model`",
            path,
        )
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    if "forward" not in methods:
        raise TaskError("`class Model` has no `forward` method", path, model.lineno)
    for name in ("get_inputs", "get_init_inputs"):
        if name not in functions:
            raise TaskError(
                f"no top-level `def {name}()`: a KernelBench reference defines "
                "`get_inputs()` (forward arguments) and `get_init_inputs()` (Model arguments)",
                path,
            )
    init = methods.get("__init__")
    return SourceInfo(
        docstring=ast.get_docstring(tree),
        globals=_literal_globals(tree),
        init_params=_params(init) if init is not None else [],
        forward_params=_params(methods["forward"]),
        dtypes=_mentioned_dtypes(tree),
    )


def _params(fn: ast.FunctionDef) -> list[str]:
    """Positional parameter names of a method, without ``self``."""
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return names[1:]


def _literal_globals(tree: ast.Module) -> dict[str, object]:
    """Module-level ``name = value`` assignments (literal values where possible)."""
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            literal = NOT_LITERAL
        for target in targets:
            if isinstance(target, ast.Name):
                found[target.id] = literal
    return found


def _mentioned_dtypes(tree: ast.Module) -> list[str]:
    """Canonical names of ``torch.<dtype>`` attributes in the source, first appearance first."""
    seen: dict[str, int] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "torch"
            and node.attr in _DTYPE_NAMES
        ):
            name = _DTYPE_NAMES[node.attr]
            position = (node.lineno, node.col_offset)
            key = position[0] * 10_000 + position[1]
            seen[name] = min(seen.get(name, key), key)
    return sorted(seen, key=seen.__getitem__)
