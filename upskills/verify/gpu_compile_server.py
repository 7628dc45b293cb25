"""The compiler behind :mod:`upskills.verify.gpu_compile`: Triton with no interpreter.

Run as ``python -m upskills.verify.gpu_compile_server`` by a CPU check's candidate process (as
the same sandbox user, in the same working folder), it first says whether Triton's compiler
loads (``{"ready": true}``), then reads one JSON request a line and answers one JSON line:
``{"ok": true}``, ``{"error": message}`` (Triton's compiler refused the kernel) or
``{"skip": reason}`` (this process could not try). A request carries each
function's source, the globals it names (modules by name, constants by value, other kernels
by reference, objects of the candidate's as stand-ins) and the launch's specialization as
``JITFunction.run`` computed it (signature, constexprs, attributes, options). Only ``def``
statements are executed here, with their decorators and defaults taken off and their
annotations kept as text: none of the candidate's module-level code runs.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import collections
import importlib
import json
import linecache
import os
import subprocess
import sys
import tempfile
import types
import warnings
from typing import Any

TARGET = ("cuda", 90, 32)
"""sm_90 (H100/H200), 32-lane warps: the GPU every CPU verdict's kernels are compiled for."""

ANNOTATIONS_AS_TEXT = __future__.annotations.compiler_flag
"""How the ``def`` statements are compiled: their annotations are strings, never run."""

FRONT_END_ERRORS = frozenset(
    {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"}
)
"""Triton's front end refusing a kernel: its message is quoted as it is."""

ENVIRONMENT_ERRORS = (OSError, ImportError, subprocess.SubprocessError, MemoryError)
"""This machine failing the compile (a tool that does not run, a module that does not
import): the launch is not compiled, not refused. Any other failure from the launch's options
to the binary is the kernel's, as it would be in ``JITFunction.run`` on a GPU."""


def front_end_error(exc: BaseException) -> bool:
    """Is ``exc`` Triton's compiler refusing the kernel?"""
    return bool({cls.__name__ for cls in type(exc).__mro__} & FRONT_END_ERRORS)


class StandIn:
    """An object of the candidate's, stood in for.

    Triton's compiler refuses it as a global (its rule takes only modules, ``@jit`` functions,
    constexprs, dtypes, named tuples and the library's own objects), as it refuses the real
    one; as a constexpr it shows nothing of the real one but its identity.
    """

    __slots__ = ("of",)

    def __init__(self, of: str) -> None:
        self.of = of

    def __repr__(self) -> str:
        return f"<a {self.of}>"


def _rebuild(described: dict[str, Any], functions: dict[str, Any], built: dict[str, Any]) -> Any:
    """A global or constexpr as :func:`upskills.verify.gpu_compile._describe` described it."""
    import triton.language as tl  # pyright: ignore[reportMissingTypeStubs]

    language: Any = tl
    ((kind, payload),) = described.items()
    if kind == "value":
        return payload
    if kind == "module":
        return importlib.import_module(payload)
    if kind == "stub_module":  # a module Triton takes; none of its names are carried
        return types.ModuleType(payload)
    if kind == "function":
        return built[payload]
    if kind == "constexpr":
        return language.constexpr(_rebuild(payload, functions, built))
    if kind == "dtype":
        return language.dtype(payload)
    if kind == "namedtuple":  # the class (Triton takes a named tuple's class as a global)
        name, fields = payload
        return collections.namedtuple(name, fields)  # pyright: ignore[reportUntypedNamedTuple]
    if kind == "ref":
        module, qualname = payload
        value: Any = importlib.import_module(module)
        for part in qualname.split("."):
            value = getattr(value, part)
        return value
    if kind == "stand_in":
        return StandIn(payload)
    raise ValueError(f"a global of an unknown kind: {kind}")


def _read_as_sent(functions: dict[str, Any]) -> None:
    """Make the request's sources what Triton reads of their files here.

    Triton's compiler reads a kernel's source itself (``inspect.getsource``); from the file
    it would read what is on disk now, not what the interpreter runs (the candidate's process
    read its source through ``linecache``, whose entry the candidate can set). Each file is
    held in ``linecache`` as the request's functions at their lines, blank elsewhere.
    """
    files: dict[str, list[str]] = {}
    for spec in functions.values():
        lines = files.setdefault(spec["filename"], [])
        body = spec["source"].splitlines(keepends=True)
        start = spec["line"] - 1
        lines.extend(["\n"] * max(0, start + len(body) - len(lines)))
        lines[start : start + len(body)] = body
    for filename, lines in files.items():  # no modification time: never read from disk again
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)


def _functions(functions: dict[str, Any]) -> dict[str, Any]:
    """Each function's ``JITFunction``, its globals filled in once all are made.

    So functions that name each other are built as Triton sees them.
    """
    import triton.runtime.jit as jit  # pyright: ignore[reportMissingTypeStubs]

    jit_function: Any = jit.JITFunction
    built: dict[str, Any] = {}
    scopes: dict[str, dict[str, Any]] = {}
    _read_as_sent(functions)
    for key, spec in functions.items():
        scope: dict[str, Any] = {"__builtins__": builtins, "__name__": spec["module"]}
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
        built[key] = jit_function(scope[node.name], **spec["options"])
        scopes[key] = scope
    for key, spec in functions.items():
        for name, described in spec["globals"].items():
            scopes[key][name] = _rebuild(described, functions, built)
    return built


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
    try:  # rebuilding the request: this process's limit if it fails, not the kernel's
        built = _functions(request["functions"])
        constexprs = {
            tuple(path): _rebuild(value, request["functions"], built)
            for path, value in request["constexprs"]
        }
    except Exception as exc:  # noqa: BLE001
        return {"skip": f"{type(exc).__name__}: {exc}"}
    try:  # what JITFunction.run does on a GPU from here: its failure is the launch's
        target = gpu_target(*TARGET)
        backend = compiler.make_backend(target)
        options = backend.parse_options(request["options"])
        attrs = {tuple(path): specs for path, specs in request["attrs"]}
        kernel = built[request["kernel"]]
        source = compiler.ASTSource(kernel, request["signature"], constexprs, attrs)
        compiler.compile(source, target=target, options=options.__dict__)
    except Exception as exc:  # noqa: BLE001 - sorted by its class
        if isinstance(exc, ENVIRONMENT_ERRORS) and not front_end_error(exc):
            return {"skip": f"{type(exc).__name__}: {exc}"}
        return {"error": str(exc) if front_end_error(exc) else f"{type(exc).__name__}: {exc}"}
    return {"ok": True}


def main() -> None:
    """Say whether Triton's compiler is here, then serve requests from stdin until it closes.

    Every request is compiled from its source, in a cache of this process's own that no
    compile reads back: Triton's cache key holds a kernel's source, not the module objects
    it names, so a kernel compiled once with Triton's own module would have been answered
    from the cache when sent again with a stand-in (a module of the candidate's under
    Triton's name passed so, 2026-12-06), and a binary compiled here would otherwise sit in
    the user's cache for a GPU launch to load.
    """
    here = os.getcwd()  # the candidate's working folder, removed with it if this is killed
    folder = here if os.access(here, os.W_OK) else None
    scratch = tempfile.TemporaryDirectory(prefix="upskills-gpu-compile-", dir=folder)
    os.environ["TRITON_CACHE_DIR"] = scratch.name  # read by Triton when it is imported below
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    try:
        import triton.backends.compiler as backends  # pyright: ignore[reportMissingTypeStubs]
        import triton.compiler as compiler_module  # pyright: ignore[reportMissingTypeStubs]

        compiler: Any = compiler_module
        gpu_target: Any = backends.GPUTarget
        compiler.make_backend(gpu_target(*TARGET))
        hello: dict[str, Any] = {"ready": True}
    except Exception as exc:  # noqa: BLE001 - this machine's limit: no launch is compiled
        hello = {"ready": False, "why": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(hello) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - a bad request answers, never ends the loop
            reply = {"skip": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    scratch.cleanup()


if __name__ == "__main__":
    main()
