"""What a change did: fix patterns found by comparing two kernels' ASTs, and change keys.

``analyze_kernel`` says which techniques a kernel uses; a repair often adds none (the loop bound,
an index or a divisor was wrong). ``fix_patterns(before, after)`` pairs the ``@triton.jit``
functions of the two modules and looks for a few specific repairs in the program structure:

- ``loop_bound_cdiv``: a ``range()`` trip count computed with ``//`` became a ``cdiv``;
- ``carry_accumulation``: ``x = e`` inside a loop became ``x += e`` (a carry that must sum);
- ``chunk_offset_index``: ``x = e`` inside a loop became ``x = e + i`` with ``i`` the loop variable
  (a chunk-local index made global);
- ``true_length_divisor``: ``e / BLOCK`` with ``BLOCK`` a ``tl.constexpr`` parameter became
  ``e / n`` with ``n`` a runtime parameter (mean over the real length, not the padded block).

``change_key`` names a change by its code alone (docstrings, comments and formatting ignored),
so the same repair in two traces gets the same key and different repairs do not.
"""

from __future__ import annotations

import ast
import difflib
import hashlib


def _jit_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    out: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
            _dotted(d).split(".")[-1] == "jit" for d in node.decorator_list
        ):
            out.setdefault(node.name, node)
    return out


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _pairs(before: ast.Module, after: ast.Module) -> list[tuple[ast.FunctionDef, ast.FunctionDef]]:
    """The jit functions of both modules, paired by name (a lone function each is paired too)."""
    jb, ja = _jit_functions(before), _jit_functions(after)
    pairs = [(jb[n], ja[n]) for n in sorted(jb.keys() & ja.keys())]
    if not pairs and len(jb) == 1 and len(ja) == 1:
        pairs = [(next(iter(jb.values())), next(iter(ja.values())))]
    return pairs


def _loops(fn: ast.FunctionDef) -> list[ast.For]:
    return [n for n in ast.walk(fn) if isinstance(n, ast.For)]


def _range_loops(fn: ast.FunctionDef) -> list[ast.Call]:
    return [
        loop.iter
        for loop in _loops(fn)
        if isinstance(loop.iter, ast.Call) and _dotted(loop.iter.func) == "range"
    ]


def _has(node: ast.AST, pred) -> bool:  # noqa: ANN001 - a small local predicate
    return any(pred(n) for n in ast.walk(node))


def _floordiv(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv)


def _cdiv(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _dotted(node.func).endswith("cdiv")


def _loop_bound_cdiv(fb: ast.FunctionDef, fa: ast.FunctionDef) -> bool:
    def counts(fn: ast.FunctionDef) -> tuple[int, int]:
        calls = _range_loops(fn)
        floor = sum(any(_has(a, _floordiv) for a in c.args) for c in calls)
        cdiv = sum(any(_has(a, _cdiv) for a in c.args) for c in calls)
        return floor, cdiv

    (floor_b, cdiv_b), (floor_a, cdiv_a) = counts(fb), counts(fa)
    return floor_a < floor_b and cdiv_a > cdiv_b


def _loop_assigns(fn: ast.FunctionDef) -> list[tuple[ast.For, ast.stmt]]:
    """(innermost enclosing loop, statement) for assignments inside loops."""
    out: dict[int, tuple[ast.For, ast.stmt]] = {}
    for loop in _loops(fn):  # outer loops first, so inner loops overwrite
        for node in ast.walk(loop):
            if isinstance(node, ast.Assign | ast.AugAssign):
                out[id(node)] = (loop, node)
    return list(out.values())


def _simple_assigns(fn: ast.FunctionDef) -> dict[str, list[tuple[ast.For, ast.expr]]]:
    """Map each name to (loop, value) for ``name = value`` inside loops."""
    out: dict[str, list[tuple[ast.For, ast.expr]]] = {}
    for loop, node in _loop_assigns(fn):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            out.setdefault(node.targets[0].id, []).append((loop, node.value))
    return out


def _carry_accumulation(fb: ast.FunctionDef, fa: ast.FunctionDef) -> bool:
    plain = {(name, ast.dump(value)) for name, vs in _simple_assigns(fb).items() for _, value in vs}
    had = {
        (n.target.id, ast.dump(n.value))
        for _, n in _loop_assigns(fb)
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
    }
    for _, node in _loop_assigns(fa):
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Add)
            and isinstance(node.target, ast.Name)
        ):
            key = (node.target.id, ast.dump(node.value))
            if key in plain and key not in had:
                return True
    return False


def _loop_var(loop: ast.For) -> str:
    return loop.target.id if isinstance(loop.target, ast.Name) else ""


def _chunk_offset_index(fb: ast.FunctionDef, fa: ast.FunctionDef) -> bool:
    before = {
        (name, ast.dump(value)) for name, vs in _simple_assigns(fb).items() for _, value in vs
    }
    for name, values in _simple_assigns(fa).items():
        for loop, value in values:
            var = _loop_var(loop)
            if not (var and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
                continue
            for kept, added in ((value.left, value.right), (value.right, value.left)):
                if (
                    isinstance(added, ast.Name)
                    and added.id == var
                    and (name, ast.dump(kept)) in before
                ):
                    return True
    return False


def _params(fn: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """(constexpr parameter names, runtime parameter names)."""
    const, runtime = set(), set()
    for arg in fn.args.args:
        ann = _dotted(arg.annotation) if arg.annotation is not None else ""
        (const if ann.endswith("constexpr") else runtime).add(arg.arg)
    return const, runtime


def _divisions(fn: ast.FunctionDef) -> list[tuple[str, str]]:
    """(dump of numerator, divisor name) for every ``a / name`` in the function."""
    return [
        (ast.dump(n.left), n.right.id)
        for n in ast.walk(fn)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and isinstance(n.right, ast.Name)
    ]


def _true_length_divisor(fb: ast.FunctionDef, fa: ast.FunctionDef) -> bool:
    const_b, _ = _params(fb)
    _, runtime_a = _params(fa)
    padded = {num for num, name in _divisions(fb) if name in const_b}
    return any(num in padded and name in runtime_a for num, name in _divisions(fa))


_PATTERNS = (
    ("loop_bound_cdiv", _loop_bound_cdiv),
    ("carry_accumulation", _carry_accumulation),
    ("chunk_offset_index", _chunk_offset_index),
    ("true_length_divisor", _true_length_divisor),
)


def fix_patterns(before: str, after: str) -> list[str]:
    """Repairs recognised in the change from ``before`` to ``after`` (Triton kernels).

    Args:
        before: the failing kernel module.
        after: the changed kernel module.

    Returns:
        Pattern ids (keys of ``TECHNIQUES``) in a fixed order; empty when none is recognised or
        a module does not parse.
    """
    try:
        tb, ta = ast.parse(before), ast.parse(after)
    except SyntaxError:
        return []
    found = []
    for name, test in _PATTERNS:
        if any(test(fb, fa) for fb, fa in _pairs(tb, ta)):
            found.append(name)
    return found


def launch_signature(source: str) -> list[str]:
    """Launch settings outside the jit functions (``num_warps=``, autotune configs, sizes)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    inside = {id(n) for fn in _jit_functions(tree).values() for n in ast.walk(fn)}
    out = []
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Call):
            short = _dotted(node.func).rpartition(".")[2]
            for kw in node.keywords:
                if kw.arg in ("num_warps", "num_stages"):
                    out.append(f"{kw.arg}={ast.unparse(kw.value)}")
            if short in ("next_power_of_2", "cdiv", "Config"):
                out.append(ast.unparse(node))
    return sorted(out)


def code_lines(source: str) -> list[str]:
    """The module's code without docstrings, comments or formatting (raw lines if unparsable)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [s for line in source.splitlines() if (s := line.strip()) and s[0] != "#"]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
            and isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree).splitlines()


def change_key(before: str, after: str) -> str:
    """A short hash of the code lines a change removed and added (12 hex).

    Two changes get the same key only when they remove and add the same code, ignoring
    docstrings, comments and formatting.
    """
    lines = difflib.unified_diff(code_lines(before), code_lines(after), n=0, lineterm="")
    changed = [
        line.strip() for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return hashlib.sha256("\n".join(changed).encode()).hexdigest()[:12]
