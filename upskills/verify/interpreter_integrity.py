"""The Triton interpreter a launch runs through is the one the verifier installed.

Each interpreted launch is compiled for sm_90 from its kernel's source
(:mod:`upskills.verify.gpu_compile`), and the interpreter runs what it rewrites from that
source. A candidate that changed the interpreter changed what runs, not what is compiled: a
kernel object whose ``rewrite`` was its own (an instance attribute), ``InterpretedFunction``'s
``rewrite`` patched on the class (through ``type(add_kernel)``), and a kernel given another
kernel's ``rewriter`` each ran a NumPy kernel while a compilable subtraction was compiled,
and passed the vector add (2026-12-06).

So, when the verifier's hooks are in place (:func:`take_snapshot`), the interpreter's classes
are fingerprinted (every name in their ``__dict__`` and the object it holds, the verifier's
own wrappers included), with the module's functions and the rewriter's AST transformer; and
before each launch's compile and again when its grid is set (:func:`check_interpreter`), all
must be as they were, the kernel object must be exactly an ``InterpretedFunction`` with only
its own attributes, none shadowing a method, and its rewriter exactly a ``FunctionRewriter``
of its own function.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, cast

CLASSES = ("InterpretedFunction", "FunctionRewriter", "GridExecutor", "InterpreterBuilder")
"""The interpreter's classes a launch runs through (``triton.runtime.interpreter``)."""


REWRITER_LATER = frozenset({"def_lineno"})
"""A rewriter's attributes set by its first rewrite (Triton 3.9's ``rewrite_ast``)."""


class InterpreterChanged(Exception):
    """The interpreter a launch runs through is not the one the verifier installed."""


@dataclass(frozen=True)
class _Snapshot:
    classes: dict[type, dict[str, Any]]
    """Each class's ``__dict__`` as the verifier left it."""
    module: dict[str, Any]
    """The interpreter module's functions and classes."""
    transformer: Any
    """The rewriter's AST transformer (a class attribute), with no attribute of its own."""
    kernel_keys: frozenset[str]
    rewriter_keys: frozenset[str]


_SNAPSHOT: list[_Snapshot] = []


def _sample(x_ptr: Any) -> None:  # a kernel whose object shows an interpreted kernel's names
    pass


def take_snapshot() -> None:
    """Fingerprint the interpreter as it is now (once, after the verifier's own patches)."""
    if _SNAPSHOT:
        return
    import triton.runtime.interpreter as interpreter  # pyright: ignore[reportMissingTypeStubs]

    found: Any = interpreter
    classes: dict[type, dict[str, Any]] = {
        getattr(found, name): dict(_vars(getattr(found, name))) for name in CLASSES
    }
    module = {
        name: value
        for name, value in _vars(found).items()
        if isinstance(value, types.FunctionType | type)
    }
    sample = found.InterpretedFunction(_sample)
    _SNAPSHOT.append(
        _Snapshot(
            classes=classes,
            module=module,
            transformer=found.FunctionRewriter.ast_transformer,
            kernel_keys=frozenset(_vars(sample)),
            rewriter_keys=frozenset(_vars(sample.rewriter)) | REWRITER_LATER,
        )
    )


def check_interpreter(interpreted: Any) -> None:
    """Raise :class:`InterpreterChanged` unless ``interpreted`` runs as the verifier installed."""
    if not _SNAPSHOT:
        return
    snap = _SNAPSHOT[0]
    import triton.runtime.interpreter as interpreter  # pyright: ignore[reportMissingTypeStubs]

    found: Any = interpreter
    for cls, saved in snap.classes.items():
        now = _vars(cls)
        if now.keys() != saved.keys() or any(now[k] is not v for k, v in saved.items()):
            changed = sorted(k for k in now.keys() | saved.keys() if now.get(k) is not saved.get(k))
            raise InterpreterChanged(
                f"the Triton interpreter's {cls.__name__} was changed ({', '.join(changed[:5])})"
            )
    now_module = _vars(found)
    if any(now_module.get(k) is not v for k, v in snap.module.items()):
        raise InterpreterChanged("a function of the Triton interpreter's module was replaced")
    transformer = found.FunctionRewriter.ast_transformer
    if transformer is not snap.transformer or _vars(transformer):
        raise InterpreterChanged("the Triton interpreter's AST transformer was changed")
    _own_attributes(interpreted, found.InterpretedFunction, snap.kernel_keys, "kernel")
    rewriter = _vars(interpreted)["rewriter"]
    _own_attributes(rewriter, found.FunctionRewriter, snap.rewriter_keys, "kernel's rewriter")
    if _vars(rewriter)["fn"] is not _vars(interpreted)["fn"]:
        raise InterpreterChanged("the kernel's rewriter rewrites another function")


def _vars(obj: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", vars(obj))


def _own_attributes(obj: Any, cls: type, keys: frozenset[str], what: str) -> None:
    if type(obj) is not cls:
        raise InterpreterChanged(f"the {what} is a {type(obj).__qualname__}, not Triton's")
    extra = _vars(obj).keys() - keys
    missing = keys - REWRITER_LATER - _vars(obj).keys()
    if extra or missing:
        names = ", ".join(sorted(extra | missing))
        raise InterpreterChanged(f"the {what} has attributes not its own or lacks its own: {names}")
