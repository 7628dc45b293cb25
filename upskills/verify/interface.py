"""Does ``ModelNew`` take the arguments ``Model`` takes? One rule, applied twice.

The candidate host applies it to the imported classes (``candidate_host.check_signature``). The
verifier applies it first to the sources, before anything is imported or compiled, so a
kernel whose constructor misses an argument fails in milliseconds on any machine, a CUDA
kernel on one without CUDA included (round 11 of the live corpus spent a GPU slot on one that
did). The source check decides only where both classes define the method plainly: a unique
top-level class, a method without decorators in its body. Anything else (a class made by a
factory, a decorated or inherited method) is left to the check on the imported classes.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence
from typing import Any

from upskills.verify.protocol import Param

_VAR_KINDS = ("VAR_POSITIONAL", "VAR_KEYWORD")
METHODS = ("__init__", "forward")
"""The methods whose signatures must match, in the order they are checked."""


def signature_problem(ref: Sequence[Param], cand: Sequence[inspect.Parameter]) -> str:
    """Why ``cand`` cannot be called with the reference's arguments by name ('' if it can)."""
    for i, rp in enumerate(ref):
        if rp.kind in _VAR_KINDS:
            return ""
        if i >= len(cand):
            return f"missing parameter {rp.name!r}"
        cp = cand[i]
        if cp.kind.name in _VAR_KINDS:
            return ""
        if cp.name != rp.name:
            return f"parameter {i + 1} is {cp.name!r}, expected {rp.name!r}"
    extra = [p for p in cand[len(ref) :] if p.kind.name not in _VAR_KINDS and p.default is p.empty]
    return f"extra parameter {extra[0].name!r} has no default" if extra else ""


def mismatch(
    display: str,
    line: int,
    method: str,
    ref: Sequence[Param],
    cand: Sequence[inspect.Parameter],
    problem: str,
) -> str:
    """The interface failure's message: where, both signatures, and what is wrong."""
    mine = "".join(", " + str(p) for p in cand)
    theirs = "".join(", " + p.text for p in ref)
    return (
        f"{display}:{line}: ModelNew.{method}(self{mine}) does not match "
        f"Model.{method}(self{theirs}): {problem}"
    )


class _Text:
    """A default or annotation shown as its source text."""

    def __init__(self, node: ast.expr) -> None:
        self.text = ast.unparse(node)

    def __repr__(self) -> str:
        return self.text


def _parameters(fn: ast.FunctionDef) -> list[inspect.Parameter]:
    """``fn``'s parameters without ``self``, as ``inspect`` would list them."""
    a = fn.args
    P = inspect.Parameter
    out: list[inspect.Parameter] = []

    def add(arg: ast.arg, kind: Any, default: ast.expr | None) -> None:  # kind: a Parameter kind
        ann = _Text(arg.annotation) if arg.annotation is not None else P.empty
        out.append(P(arg.arg, kind, default=_Text(default) if default else P.empty, annotation=ann))

    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + [*a.defaults]
    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        add(arg, P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD, default)
    if a.vararg:
        add(a.vararg, P.VAR_POSITIONAL, None)
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        add(arg, P.KEYWORD_ONLY, default)
    if a.kwarg:
        add(a.kwarg, P.VAR_KEYWORD, None)
    return out[1:] if out and out[0].name == "self" else out


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name`` (a definition, an import or an assignment)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Import | ast.ImportFrom):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id == name for g in targets for t in ast.walk(g))
    return False


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    """The module's top-level class ``name`` if nothing else anywhere binds that name."""
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    binders = sum(_binds(n, name) for n in ast.walk(tree))
    return found[0] if len(found) == 1 and binders == 1 else None


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    """The class body's one plain ``def name`` (no decorator, nothing else binding the name)."""
    found = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name]
    binders = sum(_binds(n, name) for n in cls.body)
    return found[0] if len(found) == 1 and binders == 1 and not found[0].decorator_list else None


def static_interface_issue(candidate: ast.Module, reference: str, display: str) -> str | None:
    """The interface failure the sources already show, or None (also when they cannot tell)."""
    try:
        ref_tree = ast.parse(reference)
    except SyntaxError:
        return None
    model, new = _class(ref_tree, "Model"), _class(candidate, "ModelNew")
    if model is None or new is None:
        return None
    line = min([new.lineno, *(d.lineno for d in new.decorator_list)])
    for method in METHODS:
        ref_fn, cand_fn = _method(model, method), _method(new, method)
        if ref_fn is None or cand_fn is None:
            continue
        ref = [Param(name=p.name, kind=p.kind.name, text=str(p)) for p in _parameters(ref_fn)]
        cand = _parameters(cand_fn)
        if problem := signature_problem(ref, cand):
            return mismatch(display, line, method, ref, cand, problem)
    return None
