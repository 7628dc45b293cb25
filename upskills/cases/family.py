"""Task families: the hash that groups dtype, shape and layout siblings of one operation.

``family_hash(source)`` hashes a reference module's *operation*: the AST of ``class Model`` (the
whole module less imports, module-level assignments and ``get_inputs``/``get_init_inputs``, where
shapes, dtypes and input layouts live, when there is no ``Model``) with comments, blank
lines, docstrings, numeric and string constants, dtype names and module-level shape constants
abstracted away, and layout/dtype conversions on tensors (``.contiguous()``, ``.t()``,
``.transpose(...)``, ``.to(...)``, ``.half()``...) replaced by their receiver, unless that leaves
``forward`` returning its input unchanged (the operation *is* the layout or dtype change: a
transpose, a cast), in which case the calls stay. ``row_sum`` and ``row_sum_fp16`` (same
computation, other dtype and sizes) get the same family; ``row_sum`` and ``row_max`` (another
reduction op) do not. A lift recomputes each case's family from its source and refuses a case
whose stored family disagrees, so a hand-edited split cannot bypass held-out discipline.

This is the one family hash: the distiller (``upskills.distill``) and the ladder use it, and
``upskills.distill.family`` re-exports it.

What it does not do: decide that two differently written programs compute the same thing
(``x.sum(-1)`` and ``torch.sum(x, dim=1)`` are different families).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence

DTYPE_NAMES = frozenset(
    {
        "float16",
        "half",
        "bfloat16",
        "float32",
        "float",
        "float64",
        "double",
        "int8",
        "uint8",
        "int16",
        "int32",
        "int",
        "int64",
        "long",
        "bool",
        "float8_e4m3fn",
        "float8_e5m2",
    }
)
"""Attribute names treated as dtypes (``torch.float16`` -> ``torch.<dtype>``)."""

LAYOUT_CALLS = frozenset(
    {"contiguous", "t", "transpose", "permute", "to", "type", "as_strided", "clone", "detach"}
    | DTYPE_NAMES
)
"""Tensor methods that change layout or dtype, not the operation."""


class _Normalise(ast.NodeTransformer):
    """Replaces constants, dtype names and docstrings by placeholders; drops layout calls."""

    def __init__(self, strip_layout: bool = True) -> None:
        self.strip_layout = strip_layout

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if self.strip_layout and isinstance(func, ast.Attribute) and func.attr in LAYOUT_CALLS:
            return self.visit(func.value)
        self.generic_visit(node)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, bool) or node.value is None:
            return node
        return ast.copy_location(ast.Name(id="_CONST", ctx=ast.Load()), node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr in DTYPE_NAMES:
            return ast.copy_location(
                ast.Attribute(value=node.value, attr="_DTYPE", ctx=node.ctx), node
            )
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in DTYPE_NAMES:
            return ast.copy_location(ast.Name(id="_DTYPE", ctx=node.ctx), node)
        return node

    def _strip_docstring(self, body: list[ast.stmt]) -> list[ast.stmt]:
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                return body[1:] or [ast.Pass()]
        return body

    def visit_Module(self, node: ast.Module) -> ast.AST:
        node.body = self._strip_docstring(node.body)
        # module-level shape constants (M = 4096, N_SMALL = 77): drop the assignments
        node.body = [s for s in node.body if not _is_constant_assign(s)]
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.body = self._strip_docstring(node.body)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.body = self._strip_docstring(node.body)
        self.generic_visit(node)
        return node


def _is_constant_assign(stmt: ast.stmt) -> bool:
    """``NAME = <literal or arithmetic of literals, or a dtype>`` at module level."""
    if not isinstance(stmt, ast.Assign | ast.AnnAssign):
        return False
    value = stmt.value
    if value is None:
        return False
    for sub in ast.walk(value):
        if isinstance(sub, ast.Call | ast.Lambda | ast.ListComp | ast.DictComp):
            return False
        if isinstance(sub, ast.Name) and sub.id not in DTYPE_NAMES and sub.id != "torch":
            return False
    return True


def normalised_source(source: str) -> str:
    """The reference source with comments, docstrings, constants and dtype names abstracted.

    Args:
        source: a Python module (a KernelBench-format reference).

    Returns:
        ``ast.unparse`` of the normalised tree.

    Raises:
        SyntaxError: the source does not parse.
    """
    tree = _Normalise().visit(_operation(ast.parse(source)))
    if _forward_is_identity(tree):  # the operation *is* a layout or dtype change
        tree = _Normalise(strip_layout=False).visit(_operation(ast.parse(source)))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


SIBLING_ONLY = frozenset({"get_inputs", "get_init_inputs"})
"""Module-level functions that hold shapes and input layouts (siblings differ there)."""


def _operation(tree: ast.Module) -> ast.Module:
    """The module cut down to what it computes: ``class Model``, else its non-input code."""
    model = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"]
    if not model:
        model = [
            n
            for n in tree.body
            if not (isinstance(n, ast.FunctionDef) and n.name in SIBLING_ONLY)
            and not isinstance(n, ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign)
        ]
    return ast.Module(body=list(model), type_ignores=[])


def _forward_is_identity(tree: ast.AST) -> bool:
    """``forward`` returns one of its arguments unchanged (after layout calls were dropped)."""
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
            returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
            args = {a.arg for a in fn.args.args}
            return bool(returns) and all(
                isinstance(r.value, ast.Name) and r.value.id in args for r in returns
            )
    return False


def family_hash(source: str) -> str:
    """The family hash (16 hex) of a task's reference source.

    Comments, whitespace, docstrings, dtype names and shape/size constants do not change it; a
    different operation does.

    Args:
        source: the reference module's source.

    Returns:
        sha256 of the normalised source, 16 hex characters.

    Raises:
        SyntaxError: the source does not parse.
    """
    return hashlib.sha256(normalised_source(source).encode()).hexdigest()[:16]


def pack_families(packs: Sequence[object]) -> set[str]:
    """Family hashes of the tasks that fed skill packs (from their provenance's task names).

    A provenance task is resolved in the built-in suite by name; when its recorded
    ``task_hash`` names another version of the task, the built-in source still gives the
    family (a family ignores the constants a version changes).

    Args:
        packs: skill packs (``upskills.skills.pack.SkillPack``).

    Returns:
        Family hashes of every fed task that can be resolved.
    """
    from upskills.tasks import builtin_names, load_task

    names: set[str] = set()
    for pack in packs:
        prov = getattr(pack, "provenance", None)
        if prov is not None:
            names |= {t.task for t in prov.traces if t.task}
            names |= {t.task for t in prov.templates if t.task}
    known = set(builtin_names())
    return {family_hash(load_task(n).source) for n in sorted(names & known)}
