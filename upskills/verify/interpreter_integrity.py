"""The Triton interpreter a launch runs through is the one the verifier installed.

Each interpreted launch is compiled for sm_90 from its kernel's source
(:mod:`upskills.verify.gpu_compile`), and the interpreter runs what it rewrites from that
source. A candidate that changed the interpreter changed what runs, not what is compiled: a
kernel object whose ``rewrite`` was its own (an instance attribute), ``InterpretedFunction``'s
``rewrite`` patched on the class (through ``type(add_kernel)``), and a kernel given another
kernel's ``rewriter`` each ran a NumPy kernel while a compilable subtraction was compiled,
and passed the vector add (2026-12-06).

So did Triton's language changed through an alias the static check does not follow
(``T = tl.tensor``, then ``T.__sub__`` set to a function of the candidate's).

So, when the verifier's hooks are in place (:func:`take_snapshot`), the interpreter's classes
are fingerprinted (every name in their ``__dict__`` and the object it holds, the verifier's
own wrappers included), with the module's functions, the rewriter's AST transformer and
Triton's language (:data:`LANGUAGE`); and before each launch's compile and again when its
grid is set (:func:`check_interpreter`), all must be as they were (a name the interpreter
patches may hold its own stand-in), the kernel object must be exactly an
``InterpretedFunction`` with only its own attributes, none shadowing a method, and its
rewriter exactly a ``FunctionRewriter`` of its own function.
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass
from typing import Any, cast

CLASSES = ("InterpretedFunction", "FunctionRewriter", "GridExecutor", "InterpreterBuilder")
"""The interpreter's classes a launch runs through (``triton.runtime.interpreter``)."""


REWRITER_LATER = frozenset({"def_lineno"})
"""A rewriter's attributes set by its first rewrite (Triton 3.9's ``rewrite_ast``)."""


class InterpreterChanged(Exception):
    """The interpreter a launch runs through is not the one the verifier installed."""


LANGUAGE = (
    "triton.language",
    "triton.language.core",
    "triton.language.math",
    "triton.language.standard",
    "triton.language.core.tensor",
    "triton.language.core.constexpr",
    "triton.language.core.dtype",
    "triton.language.core.block_type",
    "triton.language.core.pointer_type",
    "triton.language.core.tensor_descriptor_base",
    "triton.language.semantic.TritonSemantic",
)
"""Triton's language a kernel's body runs through (modules and classes, by dotted name)."""


@dataclass(frozen=True)
class _Snapshot:
    classes: dict[type, dict[str, Any]]
    """Each class's ``__dict__`` as the verifier left it."""
    language: dict[Any, dict[str, Any]]
    """Each language namespace's ``__dict__`` (unpatched: outside any launch)."""
    patched: dict[tuple[int, str], Any]
    """What the interpreter patches for a launch's length: (``id`` of the namespace, name) ->
    what makes its stand-in the one it is (:func:`_stand_in`)."""
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
    import triton.language as tl  # pyright: ignore[reportMissingTypeStubs]

    language_module: Any = tl
    seen_by = types.FunctionType(_sample.__code__, {"tl": tl, "core": language_module.core})
    scope = found._patch_lang(seen_by)  # every patch a launch makes (tl and tl.core seen)
    patched = {(id(obj), name): _stand_in(getattr(obj, name)) for obj, name, _ in scope._changes}
    scope.restore()  # which leaves an inherited name it patched on the class itself: as after
    language = {space: dict(_vars(space)) for space in map(_resolve, LANGUAGE)}  # any launch
    sample = found.InterpretedFunction(_sample)
    _SNAPSHOT.append(
        _Snapshot(
            classes=classes,
            language=language,
            patched=patched,
            module=module,
            transformer=found.FunctionRewriter.ast_transformer,
            kernel_keys=frozenset(_vars(sample)),
            rewriter_keys=frozenset(_vars(sample.rewriter)) | REWRITER_LATER,
        )
    )


def _resolve(dotted: str) -> Any:
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ImportError(dotted)


def _stand_in(value: Any) -> Any:
    """What makes one of the interpreter's stand-ins the one it is.

    The code of a function or a property's getter, a partial's function code and arguments,
    else the object itself.
    """
    if isinstance(value, functools.partial):
        part: Any = cast(Any, value)
        keywords = tuple(sorted(part.keywords.items()))
        return ("partial", _stand_in(part.func), part.args, keywords)
    target = value.fget if isinstance(value, property) else value
    return target.__code__ if isinstance(target, types.FunctionType) else value


def _check_language(snap: _Snapshot, injected: dict[str, Any]) -> None:
    """Triton's language as it was, but for the interpreter's own stand-ins.

    The interpreter patches the language for a launch's length, and leaves its patches in
    place after a call of one ``@jit`` function from another (``InterpretedFunction.__call__``
    never restores them). A stand-in must be one the interpreter makes (its code) and wrap
    the name's own original member: an alias of a module-level name (``T = tl.tensor``) that
    set ``T.__sub__`` to a function of the candidate's ran it as the kernel's subtraction
    (2026-12-06). And rewriting a ``@jit`` function of the library's own (``tl.sum`` in
    ``triton/language/standard.py``) copies the interpreter module's globals (``injected``)
    into that module where it lacks them: those new names are the interpreter's too.
    """
    for space, saved in snap.language.items():
        now = _vars(space)
        for name in (now.keys() | saved.keys()) - LAZY:
            value, original = now.get(name, _ABSENT), saved.get(name, _ABSENT)
            if value is original:
                continue
            if original is _ABSENT and isinstance(space, types.ModuleType):
                if value is injected.get(name, _ABSENT):  # the rewriter's own (see above)
                    continue
            key = (id(space), name)
            defaults: dict[str, Any] = getattr(value, "__kwdefaults__", None) or {}
            member = defaults.get("member", original)
            stand_in = key in snap.patched and _stand_in(value) == snap.patched[key]
            if not (stand_in and member is original):
                where = getattr(space, "__qualname__", getattr(space, "__name__", "?"))
                raise InterpreterChanged(f"Triton's language was changed: {where}.{name}")


_ABSENT = object()
LAZY = frozenset({"__annotations__", "__warningregistry__"})
"""Names Python itself sets when first needed: a class's empty ``__annotations__``, a
module's ``__warningregistry__`` once a warning is issued from it (a corpus kernel's
``cross_entropy`` launch warned from ``triton.language.core``, 2026-12-06)."""


def check_interpreter(interpreted: Any) -> None:
    """Raise :class:`InterpreterChanged` unless ``interpreted`` runs as the verifier installed."""
    if not _SNAPSHOT:
        return
    snap = _SNAPSHOT[0]
    import triton.runtime.interpreter as interpreter  # pyright: ignore[reportMissingTypeStubs]

    _check_language(snap, _vars(interpreter))
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
