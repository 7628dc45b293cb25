"""Each rewrite the Triton interpreter makes reads the text compiled, and leaves nothing behind.

The interpreter runs a ``@jit`` function as its rewriter remakes it: the source read through
``inspect`` (so through ``linecache``), its assignments and comparisons rewritten, the result
defined in the function's own module with the interpreter module's globals copied in where
the module lacks them, and kept in ``InterpretedFunction.rewritten_fn`` for good. Three ways
through that passed the vector add with a subtraction compiled for sm_90 (2026-12-06):

- After a first launch the kernel's module held every global of the interpreter's: a forward
  set ``np.subtract = np.add``, or an instance attribute on the builder or the semantic.
- A module global of the candidate's named ``interpreter_semantic`` ran every assignment of
  the kernel (the rewriter did not copy the interpreter's over it).
- ``linecache.cache`` given new lines for ``triton/language/standard.py`` (with no time
  stamp, so ``linecache.checkcache`` keeps them): the interpreter rewrote ``tl.zeros_like``
  as ``input + input`` while the compile used the library's own.

So did a helper given another function's rewriter (``helper.rewriter =
numpy_helper.rewriter``), with the kept rewrite dropped by the forward after each launch.

So :func:`install_rewrite_scope` wraps the rewriter, and ``InterpretedFunction.rewrite``:
every function the interpreter rewrites or calls, the launch's kernel and each helper, must
be exactly Triton's with its own attributes and its own rewriter
(:func:`~upskills.verify.interpreter_integrity.check_own`). Before a rewrite the function's module
must hold the transformer's names as the interpreter's own, or not at all, and the text the
rewriter is about to read must be the text last compiled for that function
(:data:`COMPILED`, set by :mod:`upskills.verify.gpu_compile`) or, for a function the compile
did not carry (the library's own), the text of its file on disk. After it the copied globals
are taken back but for the transformer's names, the modules and the interpreter are checked
again (defining the rewritten function ran its defaults and annotations), and the rewrite is
remembered: a kept rewrite the wrapper did not make fails the launch
(:func:`check_kept_rewrites`).
"""

from __future__ import annotations

import inspect
import textwrap
import tokenize
from typing import Any

from upskills.verify.interpreter_integrity import (
    InterpreterChanged,
    check_injected,
    check_modules,
    check_own,
)
from upskills.verify.library_snapshot import callable_print

COMPILED: dict[Any, str] = {}
"""Function -> the (dedented) source the last compile for sm_90 carried for it."""

REWRITES: dict[Any, tuple[Any, tuple[int, ...]]] = {}
"""Function -> the rewrite made of it through :func:`install_rewrite_scope`, with its print
(:func:`~upskills.verify.library_snapshot.callable_print`: its code and defaults too; a grid
that set a kept rewrite's ``__code__`` to a NumPy kernel's passed until it was, 2026-12-06)."""


def install_rewrite_scope() -> None:
    """Wrap ``FunctionRewriter.rewrite_ast`` and ``InterpretedFunction.rewrite`` (see above)."""
    import triton.runtime.interpreter as interpreter  # pyright: ignore[reportMissingTypeStubs]

    from upskills.verify.interpreter_integrity import transformer_names

    found: Any = interpreter
    keep = transformer_names(found)
    rewrite_ast = found.FunctionRewriter.rewrite_ast
    for fn, made in found.InterpretedFunction.rewritten_fn.items():  # any made before
        REWRITES[fn] = (made, callable_print(made))

    def scoped(self: Any) -> Any:
        fn = self.fn
        fn_globals: dict[str, Any] = fn.__globals__
        check_injected(fn_globals)
        _check_source(fn)
        before = set(fn_globals)
        try:
            made = rewrite_ast(self)
        finally:
            for name in set(fn_globals) - before - keep:
                fn_globals.pop(name, None)
        check_modules()  # its definition ran its defaults and annotations
        REWRITES[fn] = (made, callable_print(made))
        return made

    found.FunctionRewriter.rewrite_ast = scoped
    rewrite = found.InterpretedFunction.rewrite

    def own_rewrite(self: Any) -> Any:  # a launch's kernel and each helper it calls
        check_own(self)
        return rewrite(self)

    found.InterpretedFunction.rewrite = own_rewrite


def _check_source(fn: Any) -> None:
    """The lines the rewriter is about to read are the text compiled, or the file's own."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):  # the rewriter cannot read it either: it runs fn as it is
        return
    name = getattr(fn, "__qualname__", "?")
    compiled = COMPILED.get(fn)
    if compiled is not None:
        if textwrap.dedent("".join(lines)) != compiled:
            raise InterpreterChanged(
                f"the interpreter would rewrite {name} from a text not compiled"
            )
        return
    path = fn.__code__.co_filename
    try:
        with tokenize.open(path) as handle:
            on_disk = handle.readlines()
    except (OSError, SyntaxError) as exc:
        raise InterpreterChanged(f"the source of {name} is not its file's ({exc})") from exc
    start = max(first - 1, 0)
    if on_disk[start : start + len(lines)] != lines:
        raise InterpreterChanged(f"the interpreter would rewrite {name} from a text not its file's")


def check_kept_rewrites(interpreted_function: Any) -> None:
    """Every rewrite the interpreter keeps is one :func:`install_rewrite_scope` made, as made."""
    kept: dict[Any, Any] = interpreted_function.rewritten_fn
    for fn, made in list(kept.items()):
        mine = REWRITES.get(fn)
        if mine is None or mine[0] is not made or callable_print(made) != mine[1]:
            name = getattr(fn, "__qualname__", "?")
            raise InterpreterChanged(f"the interpreter keeps a rewrite of {name} it did not make")
