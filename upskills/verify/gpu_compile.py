"""Interpreted launches compiled for the GPU too: a kernel only the interpreter runs fails.

The Triton interpreter runs a ``@triton.jit`` body as Python, so it accepts what Triton's
compiler refuses: a ``tl.arange`` with a runtime bound, Python on a block's values, a call of
a Python helper. A CPU verdict of "correct" for such a kernel says nothing about the GPU the
product targets. So each kernel an interpreted launch runs is also compiled, once per
specialization, for sm_90 by Triton's own compiler, as ``JITFunction.run`` would launch it
there: the launch's specialization is computed here by Triton's binder, and the compiling is
done by :mod:`upskills.verify.gpu_compile_server`, a process started without
``TRITON_INTERPRET`` (inside the interpreting process Triton's own ``@jit`` functions are
interpreted ones, which its compiler cannot call; ``verifier.md``). A refusal fails the check
as ``compile``, with Triton's message, before the interpreted launch runs.

What cannot be compiled that way is not held against the kernel: a global the request cannot
carry (an object of the candidate's), a Triton whose internals differ, a compiler process that
does not answer. Those launches run as before and say why in :data:`SKIPPED`.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import select
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, cast

ANSWER_S = 120.0
"""How long a compile may take before the launch goes on uncompiled."""

SERVER_MODULES = frozenset({"triton", "math"})
"""The packages a request may name by module; the compiler process imports them (no other
module's code runs there: a module of the candidate's own is not carried)."""
SKIPPED: list[str] = []
"""Why launches could not be compiled (not the kernel's fault), in order."""
LOG_VARIABLE = "UPSKILLS_GPU_COMPILE_LOG"
"""A file each launch's outcome is appended to, when set (compiled, skipped and why, refused):
how to see that a suite's kernels were compiled rather than skipped."""
_DONE: dict[str, None] = {}
"""Requests answered "compiled" in this process (a launch repeated is not compiled again)."""
_BINDERS: dict[int, tuple[Any, Any, Any, Any]] = {}
"""Each interpreted function's ``JITFunction``, backend and binder, by ``id`` of its Python
function (held, so the ``id`` is not reused)."""
_SERVER: list[subprocess.Popen[str]] = []
"""The compiler process, once started."""


class GpuCompileError(Exception):
    """Triton's compiler refused a kernel that the interpreter ran."""


class _Unsupported(Exception):
    """A request this module cannot build; the launch is not compiled."""


def _describe(value: Any, functions: dict[str, Any]) -> dict[str, Any]:
    """A global or constexpr as the server rebuilds it."""
    from triton.runtime.interpreter import InterpretedFunction  # pyright: ignore[reportMissingTypeStubs]

    cls: Any = cast(Any, type(value))
    if isinstance(value, types.ModuleType):
        if value.__name__.split(".")[0] not in SERVER_MODULES:  # its import would run code
            raise _Unsupported(f"the module {value.__name__}")
        return {"module": value.__name__}
    if isinstance(value, InterpretedFunction):
        return {"function": _add_function(value, functions)}
    if value is None or cls in (int, float, bool, str):
        return {"value": value}
    if cls.__name__ == "constexpr" and cls.__module__.startswith("triton."):
        return {"value": {"constexpr": _describe(value.value, functions)["value"]}}
    if cls.__name__ == "dtype" and cls.__module__.startswith("triton.") and type(value.name) is str:
        return {"value": {"dtype": value.name}}
    raise _Unsupported(f"a {cls.__module__}.{cls.__qualname__}")


def _add_function(interpreted: Any, functions: dict[str, Any]) -> str:
    """Add an interpreted function (and the functions it names) to ``functions``."""
    fn = interpreted.fn
    key = str(id(fn))
    if key in functions:
        return key
    options = {k: v for k, v in interpreted.kwargs.items() if v is not None}
    if any(callable(v) for v in options.values()):
        raise _Unsupported(f"{fn.__name__}: a callable option")
    source = textwrap.dedent(inspect.getsource(fn))
    spec: dict[str, Any] = {
        "name": fn.__qualname__,
        "module": fn.__module__,
        "source": source,
        "filename": fn.__code__.co_filename,
        "line": fn.__code__.co_firstlineno,
        "options": options,
        "globals": {},
    }
    functions[key] = spec
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    names -= set(fn.__code__.co_varnames)  # its parameters and locals
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
    for name in sorted(names):
        if name in closure:
            spec["globals"][name] = _describe(closure[name].cell_contents, functions)
        elif name in fn.__globals__:
            spec["globals"][name] = _describe(fn.__globals__[name], functions)
    return key


def _request(interpreted: Any, args: tuple[Any, ...], named: dict[str, Any]) -> dict[str, Any]:
    """The launch's specialization, computed as ``JITFunction.run`` computes it."""
    import triton.backends.compiler as backends  # pyright: ignore[reportMissingTypeStubs]
    import triton.compiler as compiler_module  # pyright: ignore[reportMissingTypeStubs]
    import triton.runtime.jit as jit_module  # pyright: ignore[reportMissingTypeStubs]

    from upskills.verify.gpu_compile_server import TARGET

    compiler: Any = compiler_module
    jit: Any = jit_module
    fn = interpreted.fn
    if id(fn) not in _BINDERS:  # a kernel's binder depends on its signature alone
        jitted = jit.JITFunction(fn, **interpreted.kwargs)
        backend = compiler.make_backend(backends.GPUTarget(*TARGET))
        binder = jit.create_function_from_signature(jitted.signature, jitted.params, backend)
        _BINDERS[id(fn)] = (fn, jitted, backend, binder)
    _, jitted, backend, binder = _BINDERS[id(fn)]
    bound, specialization, options = binder(*args, **named)
    _, signature, constexprs, attrs = jitted._pack_args(
        backend, named, bound, specialization, options
    )  # pyright: ignore[reportPrivateUsage]
    functions: dict[str, Any] = {}
    kernel = _add_function(interpreted, functions)
    launch_options = {k: v for k, v in named.items() if k not in signature}
    return {
        "kernel": kernel,
        "functions": functions,
        "signature": signature,
        "constexprs": [[list(p), _describe(v, functions)["value"]] for p, v in constexprs.items()],
        "attrs": [[list(p), specs] for p, specs in attrs.items()],
        "options": launch_options,
    }


def _server() -> subprocess.Popen[str]:
    if _SERVER and _SERVER[0].poll() is None:
        return _SERVER[0]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", "upskills.verify.gpu_compile_server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    _SERVER[:] = [proc]
    return proc


def _ask(payload: str) -> dict[str, Any]:
    proc = _server()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(payload + "\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], ANSWER_S)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        return {"skip": "the compiler process did not answer"}
    return json.loads(line)


def compile_for_gpu(interpreted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Compile an interpreted launch's kernel for sm_90 (once per specialization).

    Raises :class:`GpuCompileError` with Triton's message when its compiler refuses it.
    """
    named = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
    name = getattr(getattr(interpreted, "fn", None), "__name__", "?")
    skipped = len(SKIPPED)
    outcome = "refused"
    try:
        outcome = _compile(interpreted, name, args, named)
    finally:
        log = os.environ.get(LOG_VARIABLE)
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{name}\t{outcome}\t{' '.join(SKIPPED[skipped:])}\n")


def _compile(interpreted: Any, name: str, args: tuple[Any, ...], named: dict[str, Any]) -> str:
    try:  # the request is the key: its functions' sources and globals, its specialization
        payload = json.dumps(_request(interpreted, args, named), sort_keys=True)
    except Exception as exc:  # noqa: BLE001 - what this module cannot carry is not the kernel's
        SKIPPED.append(f"{name}: not compiled ({type(exc).__name__}: {exc})")
        return "skipped"
    if payload in _DONE:
        return "compiled before"
    reply = _ask(payload)
    if "error" in reply:
        raise GpuCompileError(
            f"kernel {name} runs under the Triton interpreter but does not compile for a GPU "
            f"(sm_90): {reply['error']}"
        )
    if "skip" in reply:
        SKIPPED.append(f"{name}: not compiled ({reply['skip']})")
        return "skipped"
    _DONE[payload] = None
    return "compiled"
