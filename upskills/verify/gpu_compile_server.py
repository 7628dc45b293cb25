"""The compiler behind :mod:`upskills.verify.gpu_compile`: Triton with no interpreter.

Run as ``python -m upskills.verify.gpu_compile_server`` by a CPU check's candidate process (as
the same sandbox user, in the same working folder), it reads one JSON request a line and
answers one JSON line: ``{"ok": true}``, ``{"error": message}`` (Triton's compiler refused
the kernel) or ``{"skip": reason}`` (this process could not try). A request carries each
function's source, the globals it names (modules by name, constants by value, other kernels
by reference) and the launch's specialization as ``JITFunction.run`` computed it
(signature, constexprs, attributes, options). Only ``def`` statements are executed here, with
their decorators and defaults taken off and their annotations kept as text: none of the
candidate's module-level code runs.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import importlib
import json
import sys
import warnings
from typing import Any, cast

TARGET = ("cuda", 90, 32)
"""sm_90 (H100/H200), 32-lane warps: the GPU every CPU verdict's kernels are compiled for."""

ANNOTATIONS_AS_TEXT = __future__.annotations.compiler_flag
"""How the ``def`` statements are compiled: their annotations are strings, never run."""

FRONT_END_ERRORS = frozenset(
    {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"}
)
"""Triton's own errors for a kernel it refuses (anything else is this process's limit)."""


def front_end_error(exc: BaseException) -> bool:
    """Is ``exc`` Triton's compiler refusing the kernel?"""
    return bool({cls.__name__ for cls in type(exc).__mro__} & FRONT_END_ERRORS)


def _value(described: Any) -> Any:
    import triton.language as tl  # pyright: ignore[reportMissingTypeStubs]

    language: Any = tl
    if not isinstance(described, dict):
        return described
    table = cast("dict[str, Any]", described)
    if "dtype" in table:
        return language.dtype(table["dtype"])
    if "constexpr" in table:
        return language.constexpr(_value(table["constexpr"]))
    return table


def _function(
    functions: dict[str, Any],
    key: str,
    built: dict[str, Any],
    building: frozenset[str] = frozenset(),
) -> Any:
    """The ``JITFunction`` of ``functions[key]``, its helpers built first."""
    import triton.runtime.jit as jit  # pyright: ignore[reportMissingTypeStubs]

    if key in built:
        return built[key]
    spec = functions[key]
    scope: dict[str, Any] = {"__builtins__": builtins, "__name__": spec["module"]}
    for name, described in spec["globals"].items():
        if "module" in described:
            scope[name] = importlib.import_module(described["module"])
        elif "function" in described:
            if described["function"] in building:
                raise ValueError(f"{spec['name']}: functions that name each other")
            scope[name] = _function(functions, described["function"], built, building | {key})
        else:
            scope[name] = _value(described["value"])
    tree = ast.parse(spec["source"])
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise ValueError(f"{spec['name']}: not a function definition")
    node.decorator_list = []
    node.args.defaults, node.args.kw_defaults = [], [None] * len(node.args.kwonlyargs)
    ast.increment_lineno(tree, spec["line"] - 1)
    # annotations kept as strings, never evaluated (Triton reads "tl.constexpr" as text)
    code = compile(tree, spec["filename"], "exec", flags=ANNOTATIONS_AS_TEXT, dont_inherit=True)
    exec(code, scope)  # noqa: S102 - the def statement only
    fn = scope[node.name]
    jit_function: Any = jit.JITFunction
    jitted = jit_function(fn, **spec["options"])
    built[key] = jitted
    return jitted


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """Compile one launch's kernel; ``ok``, ``error`` or ``skip``."""
    with warnings.catch_warnings():  # Triton 3.9's note on its FP fusion default, and such
        warnings.simplefilter("ignore")
        return _handle(request)


def _handle(request: dict[str, Any]) -> dict[str, Any]:
    import triton.backends.compiler as backends  # pyright: ignore[reportMissingTypeStubs]
    import triton.compiler as compiler_module  # pyright: ignore[reportMissingTypeStubs]

    compiler: Any = compiler_module
    gpu_target: Any = backends.GPUTarget
    try:
        jitted = _function(request["functions"], request["kernel"], {})
        target = gpu_target(*TARGET)
        backend = compiler.make_backend(target)
        options = backend.parse_options(request["options"])
        constexprs = {tuple(path): _value(value) for path, value in request["constexprs"]}
        attrs = {tuple(path): specs for path, specs in request["attrs"]}
        source = compiler.ASTSource(jitted, request["signature"], constexprs, attrs)
    except Exception as exc:  # noqa: BLE001 - this process's limit, not the kernel's
        if front_end_error(exc):
            return {"error": str(exc)}
        return {"skip": f"{type(exc).__name__}: {exc}"}
    try:
        compiler.compile(source, target=target, options=options.__dict__)
    except Exception as exc:  # noqa: BLE001 - sorted by its class
        if front_end_error(exc):
            return {"error": str(exc)}
        return {"skip": f"{type(exc).__name__}: {exc}"}
    return {"ok": True}


def main() -> None:
    """Serve requests from stdin until it closes."""
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - a bad request answers, never ends the loop
            reply = {"skip": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
