"""Static device notes: where a candidate's host code asks which device its tensors are on.

A CPU check runs what the candidate does for CPU tensors. A forward that picks by device
(``if x.is_cuda:``, ``x.device.type == "cuda"``, ``torch.cuda.is_available()``) does something
else for GPU tensors, and no CPU trial runs it: a vector add whose forward passed ``SIGN=1`` to
its kernel on CPU and ``SIGN=-1`` on a GPU passed every CPU trial (2026-12-07). Choosing tile
sizes by device is ordinary (the known-good GEMMs do), so this is a note in the verdict, not a
guard: it names the lines, and the verdict's CPU note says what no CPU trial can see.

What counts as asking: ``.is_cuda``, ``.is_cpu``, ``.get_device()`` (or ``getattr`` naming
one), ``torch.cuda``'s device queries, and a ``.device`` read other than handing it on
(``device=x.device``, ``.to(x.device)``, a name bound to it and handed on the same way).
Kernel bodies are left out: there, ``static_interpreter`` and the GPU compile speak.
"""

from __future__ import annotations

import ast

from upskills.verify.static import _is_kernel_def  # pyright: ignore[reportPrivateUsage]

ASKING_ATTRIBUTES = frozenset({"is_cuda", "is_cpu", "get_device", "is_mps", "is_xpu"})
"""Tensor attributes that answer which device it is on."""

CUDA_QUERIES = frozenset(
    """is_available device_count current_device get_device_name get_device_capability
    get_device_properties is_initialized get_arch_list""".split()
)
"""``torch.cuda`` functions whose answer differs between a CPU check and a GPU run."""

HANDING_ON = frozenset({"to", "device", "empty", "zeros", "ones", "full", "arange", "tensor"})
"""Calls a device may be passed to positionally without being asked about."""


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _handed_on(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``node`` (a device value) only travels: a keyword's value or a call's argument."""
    up = parents.get(node)
    if isinstance(up, ast.keyword):
        return up.arg in {"device", None}
    if isinstance(up, ast.Call) and node in up.args:
        func = up.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in HANDING_ON
    return False


def _device_names(tree: ast.AST) -> set[str]:
    """Names bound to a ``.device`` read (``dev = x.device``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "device"
        ):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _asks(node: ast.AST, parents: dict[ast.AST, ast.AST], devices: set[str]) -> str | None:
    """What ``node`` asks about the device, as written, or None."""
    if isinstance(node, ast.Attribute):
        if node.attr in ASKING_ATTRIBUTES:
            return ast.unparse(node) + ("()" if isinstance(parents.get(node), ast.Call) else "")
        if node.attr in CUDA_QUERIES and ast.unparse(node.value).endswith("cuda"):
            return f"{ast.unparse(node)}()"
        if node.attr == "device" and isinstance(node.ctx, ast.Load):
            up = parents.get(node)
            bound = isinstance(up, ast.Assign) and up.value is node
            if not bound and not _handed_on(node, parents):
                return ast.unparse(up if isinstance(up, ast.Attribute) else node)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "hasattr"}
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in ASKING_ATTRIBUTES | {"device"}
    ):
        return ast.unparse(node)
    if isinstance(node, ast.Name) and node.id in devices and isinstance(node.ctx, ast.Load):
        if not _handed_on(node, parents):
            return node.id
    return None


def device_notes(tree: ast.Module, filename: str) -> list[str]:
    """One note per line of host code that asks which device a tensor is on.

    Returns:
        Messages with ``file:line`` first, in line order, one per line.
    """
    parents = _parents(tree)
    kernel_nodes = {
        id(n)
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef) and _is_kernel_def(fn)
        for n in ast.walk(fn)
    }
    devices = _device_names(tree)
    seen: dict[int, str] = {}
    for node in ast.walk(tree):
        if id(node) in kernel_nodes:
            continue
        what = _asks(node, parents, devices)
        if what is not None:
            seen.setdefault(getattr(node, "lineno", 0), what)
    return [
        f"{filename}:{line}: the host code asks which device its tensors are on ({what}): "
        "what it does for GPU tensors did not run in this CPU check"
        for line, what in sorted(seen.items())
    ]
