"""Worked examples: the smallest complete span of a kernel that shows a technique.

A technique's finding is a line. The example around it is chosen from the program structure,
never a fixed window of lines, so it neither stops one line short of the point nor runs into
the next class:

- Python (Triton and launcher code): the innermost loop/branch/``with`` statement around the
  line when it is short; otherwise the statement itself with the earlier statements of the same
  block that bind the names it reads (a launch with its grid, a load with its offsets and
  mask); a decorator (``@triton.autotune``) on its own;
- CUDA inside a ``load_inline`` string: the innermost ``{...}`` block around the line when it
  is short (a ``__device__`` warp-reduce helper, a vectorized loop), else the statement.

Every example is checked to contain the technique's construct (``MARKERS``); when it does not,
there is no example rather than a misleading one.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from dataclasses import dataclass

MAX_LINES = 14
"""Longest example, in lines."""

CONTEXT_LINES = 6
"""Longest statement-with-its-inputs example, in lines."""

MARKERS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in {
        "masking": r"mask\s*=|if\s*\(|tl\.where",
        "coalesced_access": r"tl\.(?:load|store)|threadIdx",
        "strided_access": r"stride",
        "atomic_update": r"atomic",
        "vectorized_memory": r"multiple_of|max_contiguous|float4|half2|bfloat162|float2|int4",
        "aligned_vector_path": r"&\s*(?:15|0xf|0xF)\b",
        "block_reduction": r"tl\.(?:sum|max|min|argmax|argmin|reduce|xor_sum)\b|__syncthreads"
        r"|\[\s*(?:warp|wid|warp_id|warpId)\s*\]",
        "warp_shuffle": r"__shfl_",
        "online_softmax": r"exp",
        "fp32_accumulation": r"float32|__half2float|__bfloat162float|static_cast<float>",
        "tiling": r"tl\.dot|TILE|__shared__|mma_sync|mma\.sync",
        "shared_memory": r"__shared__",
        "smem_padding": r"\+\s*(?:1|PAD\w*)\s*\]",
        "async_copy": r"cp\.async|cp_async|memcpy_async",
        "thread_block_cluster": r"map_shared_rank|this_cluster|cluster\.sync",
        "launch_config": r"num_warps|num_stages|next_power_of_2|cdiv|<<<|__launch_bounds__",
        "autotune": r"autotune",
    }.items()
}
"""Technique -> a construct its example must show."""

_COMPOUND = (ast.For, ast.While, ast.If, ast.With)


def _statements(tree: ast.AST, line: int) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    """Statements containing ``line``, outermost first, each with the block it sits in."""
    chain: list[tuple[ast.stmt, list[ast.stmt]]] = []
    node: ast.AST = tree
    while True:
        found = None
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for stmt in block:
                if isinstance(stmt, ast.stmt) and stmt.lineno <= line <= (
                    stmt.end_lineno or stmt.lineno
                ):
                    found = (stmt, block)
        if found is None:
            return chain
        chain.append(found)
        node = found[0]


def _span(lines: list[str], lo: int, hi: int) -> str:
    return textwrap.dedent("\n".join(lines[lo - 1 : hi])).strip("\n")


def _with_context(stmt: ast.stmt, block: list[ast.stmt]) -> tuple[int, int]:
    """The statement and the statements just before it that bind names it reads directly."""
    reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    end = stmt.end_lineno or stmt.lineno
    lo = stmt.lineno
    for prev in reversed(block[: block.index(stmt)]):
        if end - prev.lineno >= CONTEXT_LINES:
            break
        bound = {
            n.id for n in ast.walk(prev) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        if bound & reads:
            lo = prev.lineno
    return lo, end


@dataclass(frozen=True)
class _Parsed:
    tree: ast.Module
    lines: list[str]
    decorators: list[tuple[int, int]]
    strings: list[tuple[int, int]]


@functools.lru_cache(maxsize=8)
def _parse(source: str) -> _Parsed | None:
    """The module parsed once, with its decorator and multi-line string line ranges."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    decorators, strings = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            decorators += [(d.lineno, d.end_lineno or d.lineno) for d in node.decorator_list]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            end = node.end_lineno or node.lineno
            if end > node.lineno:
                strings.append((node.lineno + 1, end - 1))
    return _Parsed(tree, source.splitlines(), decorators, strings)


def _python_candidates(parsed: _Parsed, line: int) -> list[tuple[int, int]]:
    for lo, hi in parsed.decorators:
        if lo <= line <= hi:
            return [(lo, hi)]
    tree = parsed.tree
    chain = _statements(tree, line)
    if not chain:
        return []
    out: list[tuple[int, int]] = []
    inner, block = chain[-1]
    for stmt, _ in reversed(chain):
        if isinstance(stmt, _COMPOUND):
            end = stmt.end_lineno or stmt.lineno
            if end - stmt.lineno < MAX_LINES:
                out.append((stmt.lineno, end))
            break
    if not isinstance(inner, ast.FunctionDef | ast.ClassDef):
        out.append(_with_context(inner, block))
        out.append((inner.lineno, inner.end_lineno or inner.lineno))
    return out


def _cuda_candidates(lines: list[str], line: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """Spans around ``line`` in string lines ``[lo, hi]``.

    In order: the block the line opens (with its ``else``), when short; the innermost block
    around the line, when short; the line's statement.
    """
    out: list[tuple[int, int]] = []
    opened = _opened_block(lines, line, hi)
    if opened is not None and opened[1] - opened[0] < MAX_LINES:
        out.append(opened)
    depth = 0
    start = None
    for i in range(line, lo - 1, -1):
        text = lines[i - 1] if i != line else ""
        depth += text.count("}") - text.count("{")
        if depth < 0:
            start = i
            break
    if start is not None:
        depth = 0
        for j in range(start, hi + 1):
            depth += lines[j - 1].count("{") - lines[j - 1].count("}")
            if depth <= 0 and "}" in lines[j - 1]:
                if j - start < MAX_LINES:
                    out.append((start, j))
                break
    first = line
    while first > lo and not lines[first - 2].rstrip().endswith((";", "{", "}")):
        first -= 1
    last = line
    while last < hi and not lines[last - 1].rstrip().endswith((";", "{", "}")):
        last += 1
    out.append((first, last))
    return out


def _opened_block(lines: list[str], line: int, hi: int) -> tuple[int, int] | None:
    """``(line, end)`` of the block that ``line`` opens (``if (...) {``), its ``else`` included."""
    if not lines[line - 1].rstrip().endswith("{"):
        return None
    depth = 0
    for j in range(line, hi + 1):
        text = lines[j - 1]
        depth += text.count("{") - text.count("}")
        if j == line and depth <= 0:
            return None
        if depth <= 0 and not text.rstrip().endswith("{"):
            return line, j
    return None


def _string_range(parsed: _Parsed, line: int) -> tuple[int, int] | None:
    for lo, hi in parsed.strings:
        if lo - 1 <= line <= hi + 1:
            return lo, hi
    return None


def technique_snippet(source: str, technique: str, line: int) -> str:
    """The smallest complete span of ``source`` around ``line`` that shows ``technique``.

    Args:
        source: the kernel module.
        technique: technique id (its ``MARKERS`` construct must be in the example).
        line: 1-based line of the finding.

    Returns:
        The example, dedented; "" when no span contains the technique's construct.
    """
    parsed = _parse(source)
    if parsed is None:
        return ""
    lines = parsed.lines
    inside = _string_range(parsed, line)
    if inside is not None:
        candidates = _cuda_candidates(lines, max(inside[0], min(line, inside[1])), *inside)
    else:
        candidates = _python_candidates(parsed, line)
    marker = MARKERS.get(technique)
    for lo, hi in candidates:
        text = _span(lines, lo, hi)
        if text.strip() and (marker is None or marker.search(text)):
            return text
    return ""
