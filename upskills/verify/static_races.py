"""Static race notes: non-atomic read-modify-write of shared memory across Triton programs.

The CPU interpreter runs programs one after another, so a load-add-store of the same global
location from several programs never races there; these notes say so in the verdict. Index
names derived from ``tl.program_id`` are followed through assignments, and so are values read
with ``tl.load``; a store to a pointer the kernel also loads from, at offsets that are not
program-private (or that come from loaded data, like a histogram's bin), is a read-modify-write
another program can interleave.
"""

from __future__ import annotations

import ast

from upskills.verify.static import _is_kernel_def  # pyright: ignore[reportPrivateUsage]


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _pointer_base(node: ast.AST) -> str | None:
    """The leftmost name of ``ptr + offsets`` (the pointer argument a load/store targets)."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node = node.left
    return node.id if isinstance(node, ast.Name) else None


def _is_load(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load"
        for n in ast.walk(node)
    )


def _derived(fn: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """Names computed from ``tl.program_id`` (index arithmetic) and names holding loaded data.

    A value read with ``tl.load`` is data, even when its address depends on the program id:
    an index made from data (a histogram's bin) can collide across programs.
    """
    pid: set[str] = set()
    data: set[str] = set()
    assigns: list[tuple[set[str], ast.AST]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            targets: set[str] = set()
            for t in node.targets:
                targets |= _names_in(t)
            assigns.append((targets, node.value))
        elif isinstance(node, ast.AugAssign):
            assigns.append((_names_in(node.target), node.value))
        elif isinstance(node, ast.For):
            assigns.append((_names_in(node.target), node.iter))
    changed = True
    while changed:
        changed = False
        for targets, value in assigns:
            names = _names_in(value)
            if (_is_load(value) or names & data) and not targets <= data:
                data |= targets
                changed = True
            uses_pid = any(
                isinstance(n, ast.Attribute) and n.attr == "program_id" for n in ast.walk(value)
            )
            if (uses_pid or names & pid) and not targets <= pid:
                pid |= targets
                changed = True
    return pid - data, data


def race_notes(tree: ast.Module, filename: str) -> list[str]:
    """Non-atomic read-modify-writes across programs, which the CPU interpreter cannot show.

    A ``@triton.jit`` kernel that uses ``tl.program_id`` and both loads from and stores to a
    pointer at offsets that do not depend on the program id makes every program update the same
    elements: on a GPU the programs race; in the interpreter, which runs them one after another,
    the result comes out right.

    Returns:
        One message per such pointer, ``file:line`` first.
    """
    notes: list[str] = []
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and _is_kernel_def(fn)):
            continue
        uses_pid = any(
            isinstance(n, ast.Attribute) and n.attr == "program_id" for n in ast.walk(fn)
        )
        if not uses_pid:
            continue
        private, data = _derived(fn)
        loads: set[str] = set()
        stores: list[tuple[str, ast.Call]] = []
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if not node.args:
                continue
            base = _pointer_base(node.args[0])
            if base is None:
                continue
            if node.func.attr == "load":
                loads.add(base)
            elif node.func.attr == "store":
                offsets = _names_in(node.args[0]) - {base}
                if not offsets & private or offsets & data:
                    stores.append((base, node))
        for base, node in stores:
            if base in loads:
                notes.append(
                    f"{filename}:{node.lineno}: kernel {fn.name} loads and stores {base!r} at "
                    "offsets that are not private to the program (not from tl.program_id, or "
                    "made from loaded data): programs can update the same elements without "
                    "atomics (a race on a GPU, invisible on CPU); use tl.atomic_add or give "
                    "each program its own elements"
                )
    return notes
