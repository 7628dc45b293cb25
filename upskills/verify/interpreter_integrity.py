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

from upskills.verify.module_watch import WatchedModules

CLASSES = ("InterpretedFunction", "FunctionRewriter", "GridExecutor", "InterpreterBuilder")
"""The interpreter's classes a launch runs through (``triton.runtime.interpreter``)."""


REWRITER_LATER = frozenset({"def_lineno"})
"""A rewriter's attributes set by its first rewrite (Triton 3.9's ``rewrite_ast``)."""

FUNCTION_DOC = frozenset({"__doc__"})
"""A ``@jit`` function's attribute that only some have: the library's (``tl.sum``,
``tl.softmax``: Triton's decorators set their docstrings), never one a launch reads."""


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


INSTANCES: dict[str, frozenset[str]] = {
    "interpreter_builder": frozenset({"grid_idx", "grid_dim"}),
    "interpreter_semantic": frozenset(),
}
"""The interpreter module's own instances every launch runs through, with the names each
gains in its first launch; the builder's ``options`` and ``codegen_fns`` are kept too."""


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
    watch: WatchedModules
    """Triton, NumPy and the standard library the interpreter calls (:mod:`module_watch`)."""
    instances: list[tuple[str, Any, dict[str, Any], frozenset[str]]]
    """Each of :data:`INSTANCES` (and the builder's options): name, object, its attributes as
    they were, the names it may gain."""
    injected: dict[str, Any]
    """The names the rewriter's AST transformer adds to a kernel's code, and their objects."""


_SNAPSHOT: list[_Snapshot] = []


def _sample(x_ptr: Any) -> None:  # a kernel whose object shows an interpreted kernel's names
    pass


def take_snapshot() -> None:
    """Fingerprint the interpreter as it is now (once, after the verifier's own patches)."""
    if _SNAPSHOT:
        return
    import importlib

    for lazy in ("triton.compiler", "triton.backends.compiler"):  # gpu_compile's, at a launch:
        importlib.import_module(lazy)  # imported now, so they are watched
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
    builder = found.interpreter_builder
    objects = {name: getattr(found, name) for name in INSTANCES}
    objects["interpreter_builder.options"] = builder.options
    objects["interpreter_builder.codegen_fns"] = builder.codegen_fns  # a dict: its items
    instances = [
        (name, obj, dict(_attributes(obj)), INSTANCES.get(name, frozenset()))
        for name, obj in objects.items()
    ]
    _SNAPSHOT.append(
        _Snapshot(
            classes=classes,
            language=language,
            patched=patched,
            module=module,
            transformer=found.FunctionRewriter.ast_transformer,
            kernel_keys=frozenset(_vars(sample)) | FUNCTION_DOC,
            rewriter_keys=frozenset(_vars(sample.rewriter)) | REWRITER_LATER,
            watch=WatchedModules(skip=tuple(language)),  # the language: _check_language
            instances=instances,
            injected={name: _vars(found)[name] for name in transformer_names(found)},
        )
    )


def transformer_names(found: Any) -> set[str]:
    """Globals the rewriter's AST transformer makes a kernel's code read.

    In Triton 3.9: ``interpreter_semantic`` (every assignment) and ``_InterpreterComparison``.
    """
    import ast

    sample = "def f(a):\n    b = a\n    return 0 < a < 1 < b\n"
    before = {n.id for n in ast.walk(ast.parse(sample)) if isinstance(n, ast.Name)}
    tree = found.FunctionRewriter.ast_transformer.visit(ast.parse(sample))
    args = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return {name for name in names - before - args if name in _vars(found)}


def check_injected(fn_globals: dict[str, Any]) -> None:
    """A kernel's module holds the transformer's names as the interpreter's own, or not at all.

    The rewriter copies them in only where the module lacks them, so a module global of the
    candidate's named ``interpreter_semantic`` ran every assignment of the kernel: its
    ``to_tensor`` returned the sum where a subtraction was compiled (2026-12-06).
    """
    if _SNAPSHOT:
        for name, value in _SNAPSHOT[0].injected.items():
            if fn_globals.get(name, value) is not value:
                raise InterpreterChanged(f"the kernel's module holds its own {name}")


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
    found = check_modules()
    check_own(interpreted)
    check_injected(_vars(interpreted)["fn"].__globals__)
    from upskills.verify.rewrite_scope import check_kept_rewrites

    check_kept_rewrites(found.InterpretedFunction)


def check_own(interpreted: Any) -> None:
    """An interpreted function exactly Triton's, with its own attributes and its own rewriter.

    Checked for the launch's kernel, and for every function the interpreter rewrites or
    calls (``rewrite_scope``): a helper given another function's rewriter, its kept rewrite
    dropped by the forward after each launch, ran a NumPy helper while the subtraction it
    shows was compiled, and passed (2026-12-06).
    """
    if not _SNAPSHOT:
        return
    snap = _SNAPSHOT[0]
    import triton.runtime.interpreter as interpreter  # pyright: ignore[reportMissingTypeStubs]

    found: Any = interpreter
    _own_attributes(interpreted, found.InterpretedFunction, snap.kernel_keys, "@jit function")
    rewriter, fn = _vars(interpreted)["rewriter"], _vars(interpreted)["fn"]
    if type(fn) is not types.FunctionType:  # exactly: its attributes are read below
        raise InterpreterChanged(f"a @jit function wraps a {type(fn).__qualname__}")
    name = fn.__qualname__
    _own_attributes(rewriter, found.FunctionRewriter, snap.rewriter_keys, f"rewriter of {name}")
    if _vars(rewriter)["fn"] is not fn:
        raise InterpreterChanged(f"the rewriter of {name} rewrites another function")


def check_modules() -> Any:
    """Raise :class:`InterpreterChanged` unless what every launch runs through is as installed.

    Triton's language, the modules of :mod:`module_watch`, the interpreter's instances and
    classes, its module's functions and its AST transformer. Returns the interpreter module.
    """
    import triton.runtime.interpreter as interpreter  # pyright: ignore[reportMissingTypeStubs]

    found: Any = interpreter
    if not _SNAPSHOT:
        return found
    snap = _SNAPSHOT[0]
    _check_language(snap, _vars(interpreter))
    if (change := snap.watch.changed()) is not None:
        raise InterpreterChanged(f"a module the Triton interpreter runs through changed: {change}")
    for name, obj, saved, later in snap.instances:
        now = _attributes(obj)
        changed = sorted(
            k
            for k in now.keys() | saved.keys()
            if k not in later and now.get(k, _ABSENT) is not saved.get(k, _ABSENT)
        )
        if changed:
            raise InterpreterChanged(
                f"the Triton interpreter's {name} was changed ({', '.join(changed[:5])})"
            )
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
    return found


def _attributes(obj: Any) -> dict[str, Any]:
    """A dict's items, any other object's ``__dict__``."""
    return cast("dict[str, Any]", obj) if type(obj) is dict else _vars(obj)


def _vars(obj: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", vars(obj))


def _own_attributes(obj: Any, cls: type, keys: frozenset[str], what: str) -> None:
    if type(obj) is not cls:
        raise InterpreterChanged(f"the {what} is a {type(obj).__qualname__}, not Triton's")
    extra = _vars(obj).keys() - keys
    missing = keys - REWRITER_LATER - FUNCTION_DOC - _vars(obj).keys()
    if extra or missing:
        names = ", ".join(sorted(extra | missing))
        raise InterpreterChanged(f"the {what} has attributes not its own or lacks its own: {names}")
