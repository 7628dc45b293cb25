"""Static guard (e) over what the Triton interpreter leaves within a candidate's reach.

The interpreter runs a CPU verdict's kernels in the candidate's own process: its rewriter
copies the interpreter module's globals into the kernel's module (NumPy as ``np``, the builder
and the semantic every assignment and operator runs through), and the verifier's wrappers
around Triton's launch path kept the functions they wrap. Each of these let a subtraction,
compiled for sm_90 as a subtraction, pass the vector add on CPU (2026-12-06): a module global
named ``interpreter_semantic`` whose ``to_tensor`` returned the sum, ``np.subtract = np.add``
or an instance attribute on the builder or the semantic set after a first launch, and
``type(kernel).run.__wrapped__`` launching an uncompiled NumPy kernel past the launch guards.
So were two ways to NumPy the ``.np`` rule did not see (``[F][0].np`` and ``m.np`` with ``m``
a parameter). The run-time fingerprint (:mod:`upskills.verify.interpreter_integrity`) catches
what a rename hides from this; these rules name the way in the candidate's own terms.
"""

from __future__ import annotations

import ast

from upskills.verify.static_host import NUMPY_WAYS

REACH_DUNDERS = {
    "__wrapped__": "(e) a wrapper's __wrapped__ reaches past the verifier's launch guards",
    "__self__": "(e) a builtin's __self__ reaches the module it came from",
    "__defaults__": "(d) editing a function's defaults changes what it does",
    "__kwdefaults__": "(d) editing a function's defaults changes what it does",
}
"""Dunder attributes that reach what a candidate must not touch (read or written, on any
object, or named to ``getattr``): merged into ``static.DUNDER_ATTRIBUTES``."""

INTERPRETER_NAMES = frozenset(
    {"interpreter_semantic", "interpreter_builder", "_InterpreterComparison"}
)
"""The Triton interpreter's own objects its rewriter puts into a kernel's module."""

INTERPRETER_WHY = (
    "(e) the Triton interpreter's own objects are not a kernel's: a GPU never has them"
)


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the source binds anywhere: assigned, imported, defined or a parameter."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return bound


def interpreter_issues(tree: ast.Module) -> list[tuple[ast.AST, str, str]]:
    """``(node, why, rule)`` for each way to the interpreter's objects or NumPy in ``tree``."""
    bound = _bound_names(tree)
    out: list[tuple[ast.AST, str, str]] = []
    for node in ast.walk(tree):
        word = None
        if isinstance(node, ast.Name):
            word = node.id
            if word == "np" and isinstance(node.ctx, ast.Load) and "np" not in bound:
                out.append(
                    (node, f"{NUMPY_WAYS}: np, the interpreter's name for it", "python_fallback")
                )
        elif isinstance(node, ast.Attribute):
            word = node.attr
            if word == "np":  # on whatever object: ``[F][0].np``, a parameter's ``m.np``
                out.append((node, f"{NUMPY_WAYS}: .np", "python_fallback"))
        elif isinstance(node, ast.arg | ast.FunctionDef | ast.ClassDef | ast.keyword):
            word = node.arg if isinstance(node, ast.arg | ast.keyword) else node.name
        if word in INTERPRETER_NAMES:
            out.append((node, f"{INTERPRETER_WHY}: {word}", "namespace"))
    return out
