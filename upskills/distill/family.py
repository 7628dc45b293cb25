"""Task families: dtype, shape and layout siblings of one operation share one family hash.

A held-out case must not be a sibling of a task that fed the skill: the fp16 softmax template
passes the fp32 softmax case unchanged. ``family_hash(source)`` hashes what a KernelBench
reference *computes*, read from its AST with everything a sibling may change taken out:

- comments, docstrings and formatting (the AST has none of them), so near-duplicates (a comment
  added, code re-wrapped) are the same family;
- every numeric constant (sizes, shape lists, ``eps``-free scalars) and the module-level size
  constants and ``get_inputs``/``get_init_inputs`` (shapes and input layouts live there);
- dtype names (``torch.float16``, ``.half()``) and layout/dtype conversions on tensors
  (``.contiguous()``, ``.t()``, ``.transpose(...)``, ``.permute(...)``, ``.to(...)``,
  ``.float()``...): each call is replaced by its receiver, unless that leaves ``forward``
  returning its input unchanged (the operation *is* the layout or dtype change: a transpose,
  a cast), in which case the calls stay and only dtype names and constants are erased.

What is left is ``class Model`` (its ``__init__`` and ``forward``): the operation. The hash is
always recomputed from the source (never read from a file), at distillation and at lift time.

(Issue 12 adds ``upskills.cases.family.family_hash`` with the same name and signature; this
module is the distiller's own until the two are merged.)
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterable

DTYPE_NAMES = frozenset(
    {
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "half",
        "float",
        "double",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
        "float8_e4m3fn",
        "float8_e5m2",
    }
)
"""Attribute names that are dtypes (``torch.float16``) or dtype casts (``x.half()``)."""

LAYOUT_CALLS = frozenset(
    {"contiguous", "t", "transpose", "permute", "to", "type", "as_strided", "clone", "detach"}
    | DTYPE_NAMES
)
"""Tensor methods that change layout or dtype, not the operation."""

SIBLING_ONLY = frozenset({"get_inputs", "get_init_inputs"})
"""Module-level functions that hold shapes and input layouts."""


class _Normalize(ast.NodeTransformer):
    def __init__(self, strip_layout: bool = True) -> None:
        self.strip_layout = strip_layout

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, int | float | complex) and not isinstance(node.value, bool):
            return ast.copy_location(ast.Constant(value=0), node)
        if isinstance(node.value, str):
            return ast.copy_location(ast.Constant(value=""), node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr in DTYPE_NAMES:
            return ast.copy_location(ast.Name(id="DTYPE", ctx=ast.Load()), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if self.strip_layout and isinstance(func, ast.Attribute) and func.attr in LAYOUT_CALLS:
            return self.visit(func.value)
        self.generic_visit(node)
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring
        self.generic_visit(node)
        return node


def _operation(tree: ast.Module) -> list[ast.stmt]:
    model = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"]
    if model:
        return list(model)
    return [
        n
        for n in tree.body
        if not (isinstance(n, ast.FunctionDef) and n.name in SIBLING_ONLY)
        and not isinstance(n, ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign)
    ]


def _identity(body: list[ast.AST]) -> bool:
    """``forward`` returns one of its inputs unchanged (after layout calls were stripped)."""
    for node in body:
        for fn in ast.walk(node):
            if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
                args = {a.arg for a in fn.args.args}
                return bool(returns) and all(
                    isinstance(r.value, ast.Name) and r.value.id in args for r in returns
                )
    return False


@functools.lru_cache(maxsize=1024)
def family_hash(source: str) -> str:
    """The family of a task, from its reference source (sha256, 16 hex characters).

    Args:
        source: a KernelBench-format reference module.

    Returns:
        The same hash for dtype, shape and layout siblings and near-duplicates of one
        operation; a hash of the whitespace-normalised text when the source does not parse.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        text = " ".join(source.split())
        return hashlib.sha256(text.encode()).hexdigest()[:16]
    body = [_Normalize().visit(n) for n in _operation(tree)]
    if _identity(body):  # the operation *is* a layout or dtype change: keep the calls
        body = [_Normalize(strip_layout=False).visit(n) for n in _operation(ast.parse(source))]
    dump = "\n".join(ast.dump(n, annotate_fields=False) for n in body if n is not None)
    return hashlib.sha256(dump.encode()).hexdigest()[:16]


def fed_families(sources: Iterable[str]) -> set[str]:
    """Family hashes of the reference sources that fed a skill."""
    return {family_hash(s) for s in sources}


def same_family(case_source: str, fed: set[str]) -> bool:
    """Whether a case's reference (hash recomputed from its source) is in a fed family."""
    return family_hash(case_source) in fed
