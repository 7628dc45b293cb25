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

Only this machine's limits leave a launch uncompiled: a Triton without the binder, a compiler
process that does not start or cannot run its tools. Those launches run as before and say why
in :data:`SKIPPED`. Nothing the candidate writes does: what a request cannot carry goes as a
stand-in Triton treats as it treats the real one (:func:`_describe`), and a launch that fails
before its compile (an argument or option a GPU launch refuses) fails the check.
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

from upskills.verify.rewrite_scope import COMPILED

ANSWER_S = 120.0
"""How long a compile may take (an honest kernel's takes 0.1-0.3 s here); a compile that
takes longer, or crashes the compiler process, fails the check, as it would fail the launch
on a GPU."""
START_S = 120.0
"""How long the compiler process may take to start and import Triton (about 0.5 s here);
if it does not, no launch of this process is compiled (this machine's limit)."""
SERVER_COMMAND = ("-m", "upskills.verify.gpu_compile_server")
"""The compiler process's arguments to this Python."""

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
_INTERPRETED: dict[str, Any] = {}
"""Each function a request carried, by its key (held, so the ``id`` in the key is not reused)."""
_SERVER: list[subprocess.Popen[str]] = []
"""The compiler process, once started."""
_BROKEN: list[str] = []
"""Why the compiler process could not start, once it could not (it is not tried again)."""


class GpuCompileError(Exception):
    """Triton's compiler refused a kernel that the interpreter ran."""


class _Unsupported(Exception):
    """A request this module cannot build; the launch is not compiled."""


class _Refused(Exception):
    """A launch that fails on a GPU before its compile (as ``JITFunction.run`` would)."""


def _describe(value: Any, functions: dict[str, Any]) -> dict[str, Any]:
    """A global or constexpr as the server rebuilds it.

    What cannot travel goes as a stand-in the compiler sees as Triton would see the real one
    where it matters: a module of the candidate's as an empty module (Triton takes a module
    global; the static check refuses reading torch or NumPy in a kernel), any other object of
    the candidate's as an object Triton's rule for globals refuses, as it refuses the real one.
    Nothing a candidate writes makes its launch go uncompiled. A library object is carried as
    itself only if it is one: found where its name says, of exactly the library's class (a
    subclass's operators or ``__call__`` would run in the interpreted kernel, unseen here).
    """
    import triton.language as tl  # pyright: ignore[reportMissingTypeStubs]
    from triton.runtime.interpreter import InterpretedFunction  # pyright: ignore[reportMissingTypeStubs]

    language: Any = tl
    cls: Any = cast(Any, type(value))
    if isinstance(value, types.ModuleType):
        name = value.__name__
        if name.split(".")[0] in SERVER_MODULES and sys.modules.get(name) is value:
            return {"module": name}
        # another module's import would run code; a module object of the candidate's that
        # calls itself Triton's is not Triton's
        return {"stub_module": str(name)}
    if cls is InterpretedFunction:  # exactly: a subclass's __call__ would run in the kernel
        return {"function": _add_function(value, functions)}
    if value is None or cls in (int, float, bool, str):
        return {"value": value}
    if cls is language.constexpr:  # exactly: a subclass's operators would run in the kernel
        return {"constexpr": _describe(value.value, functions)}
    if cls is language.dtype and type(value.name) is str:
        return {"dtype": value.name}
    if isinstance(value, type) and issubclass(value, tuple):  # Triton builds named tuples
        named: Any = cast(Any, value)
        fields: Any = getattr(named, "_fields", None)
        if type(fields) is tuple and all(type(f) is str for f in cast(tuple[Any, ...], fields)):
            return {"namedtuple": [named.__name__, list(cast(tuple[str, ...], fields))]}
    if (reference := _library_reference(value)) is not None:
        return {"ref": reference}
    return {"stand_in": f"{cls.__module__}.{cls.__qualname__}"}


def _library_reference(value: Any) -> list[str] | None:
    """``[module, qualname]`` of one of Triton's or ``math``'s own functions or classes.

    Found where its names say it is, and there the very object: a class of the candidate's
    that names itself ``math.pi`` is a stand-in, not ``math.pi``.
    """
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if type(module) is not str or type(qualname) is not str:
        return None
    if module.split(".")[0] not in SERVER_MODULES or module not in sys.modules:
        return None
    found: Any = sys.modules[module]
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return [module, qualname] if found is value else None


def _add_function(interpreted: Any, functions: dict[str, Any]) -> str:
    """Add an interpreted function (and the functions it names) to ``functions``."""
    fn = interpreted.fn
    key = str(id(fn))
    if key in functions:
        return key
    # a callable option (``repr``, ``launch_metadata``) names or reports a launch, never
    # changes what is compiled
    options = {k: v for k, v in interpreted.kwargs.items() if v is not None and not callable(v)}
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
    _INTERPRETED[key] = interpreted
    COMPILED[fn] = source  # the text the interpreter's rewrite must read (rewrite_scope.py)
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
    if not hasattr(jit, "create_function_from_signature") or not hasattr(
        jit.JITFunction, "_pack_args"
    ):
        raise _Unsupported("this Triton has no binder to specialize a launch with")
    fn = interpreted.fn
    try:  # what JITFunction.run does on a GPU up to its compile: a failure is the launch's
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
    except Exception as exc:  # noqa: BLE001 - e.g. an argument a GPU launch cannot take
        raise _Refused(f"its launch fails before compiling: {type(exc).__name__}: {exc}") from exc
    functions: dict[str, Any] = {}
    kernel = _add_function(interpreted, functions)
    launch_options = {k: v for k, v in named.items() if k not in signature}
    return {
        "kernel": kernel,
        "functions": functions,
        "signature": signature,
        "constexprs": [[list(p), _describe(v, functions)] for p, v in constexprs.items()],
        "attrs": [[list(p), specs] for p, specs in attrs.items()],
        "options": launch_options,
    }


def _server() -> subprocess.Popen[str] | None:
    """The compiler process, started if it is not running; None if it cannot start."""
    if _SERVER and _SERVER[0].poll() is None:
        return _SERVER[0]
    if _BROKEN:
        return None
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(
        [sys.executable, *SERVER_COMMAND],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    hello = _reply(proc, START_S)
    if hello is None or hello.get("ready") is not True:
        _stop(proc)
        _BROKEN.append(str(hello.get("why", "not ready")) if hello else f"no word in {START_S:g} s")
        return None
    _SERVER[:] = [proc]
    return proc


def _reply(proc: subprocess.Popen[str], seconds: float) -> dict[str, Any] | None:
    """The process's next line, or None if it wrote none in ``seconds`` (or ended)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    line = proc.stdout.readline() if ready else ""
    return json.loads(line) if line else None


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _ask(payload: str) -> dict[str, Any]:
    proc = _server()
    if proc is None:  # this machine's limit: the launch is not compiled
        return {"skip": f"the compiler process did not start ({_BROKEN[0]})"}
    assert proc.stdin is not None
    proc.stdin.write(payload + "\n")
    proc.stdin.flush()
    reply = _reply(proc, ANSWER_S)
    if reply is None:  # it started, so this kernel's compile hung or crashed it
        _stop(proc)
        return {"error": f"Triton's compiler crashed or did not finish in {ANSWER_S:g} s"}
    return reply


def compile_for_gpu(
    interpreted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, str]:
    """Compile an interpreted launch's kernel for sm_90 (once per specialization).

    Returns the source of each function the request carried (by key), none if it was not
    compiled. Raises :class:`GpuCompileError` with Triton's message when its compiler
    refuses it.
    """
    named = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
    name = getattr(getattr(interpreted, "fn", None), "__name__", "?")
    skipped = len(SKIPPED)
    outcome, sources = "refused", {}
    try:
        outcome, sources = _compile(interpreted, name, args, named)
    finally:
        log = os.environ.get(LOG_VARIABLE)
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{name}\t{outcome}\t{' '.join(SKIPPED[skipped:])}\n")
    return sources


def forget_rewrite(interpreted: Any) -> None:
    """Drop the interpreter's rewrite of ``interpreted``, so it reads the source again.

    The interpreter keeps each function's rewrite for good: a candidate that had it rewrite
    its kernel, then rewrote its own file, passed a compile of the new text while the
    interpreter ran the old (2026-12-06).
    """
    cls: Any = cast(Any, type(interpreted))
    rewrites = getattr(cls, "rewritten_fn", None)
    if isinstance(rewrites, dict):
        cast("dict[Any, Any]", rewrites).pop(getattr(interpreted, "fn", None), None)


def compile_at_grid(
    interpreted: Any, args: tuple[Any, ...], kwargs: dict[str, Any], before: dict[str, str]
) -> None:
    """The launch compiled again once its grid is set, after the candidate's grid and hooks.

    A function whose source is not the one compiled (and rewritten by the interpreter) before
    the launch fails the check; its helpers' rewrites are dropped, so its programs call the
    helpers as compiled now.
    """
    now = compile_for_gpu(interpreted, args, kwargs)
    kept = now.keys() & before.keys()
    changed = sorted(_INTERPRETED[k].fn.__name__ for k in kept if now[k] != before[k])
    if changed:
        name = getattr(interpreted.fn, "__name__", "?")
        raise _refusal(name, f"the source of {', '.join(changed)} changed during its launch")
    for key in now:
        if _INTERPRETED[key] is not interpreted:
            forget_rewrite(_INTERPRETED[key])


def _compile(
    interpreted: Any, name: str, args: tuple[Any, ...], named: dict[str, Any]
) -> tuple[str, dict[str, str]]:
    try:  # the request is the key: its functions' sources and globals, its specialization
        request = _request(interpreted, args, named)
        payload = json.dumps(request, sort_keys=True)
    except _Refused as exc:
        raise _refusal(name, str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - what this module cannot carry is not the kernel's
        SKIPPED.append(f"{name}: not compiled ({type(exc).__name__}: {exc})")
        return "skipped", {}
    sources = {key: spec["source"] for key, spec in request["functions"].items()}
    if payload in _DONE:
        return "compiled before", sources
    reply = _ask(payload)
    if "error" in reply:
        raise _refusal(name, reply["error"])
    if "skip" in reply:
        SKIPPED.append(f"{name}: not compiled ({reply['skip']})")
        return "skipped", {}
    _DONE[payload] = None
    return "compiled", sources


def _refusal(name: str, why: str) -> GpuCompileError:
    return GpuCompileError(
        f"kernel {name} runs under the Triton interpreter but does not compile for a GPU "
        f"(sm_90): {why}"
    )
