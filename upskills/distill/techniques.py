"""Technique detection by program analysis: Python AST for Triton, source analysis for CUDA.

``analyze_kernel(source)`` returns, for each technique a kernel uses, the first place it is used
(line and code). Triton kernels are read from the module's AST: ``@triton.jit`` function bodies
(loads, stores, reductions, dots, loops) and the launcher code around them (``num_warps``,
``triton.autotune``). CUDA kernels are the string literals passed to ``load_inline``; they are
scanned with patterns for the constructs that carry each technique. This is analysis of what the
code does, not a judgement of how well it does it: speed and correctness come from verdicts.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TechniqueInfo:
    """What a technique is, for rendering."""

    title: str
    family: str
    intent: str
    check: str


TECHNIQUES: dict[str, TechniqueInfo] = {
    "masking": TechniqueInfo(
        "Mask ragged edges",
        "memory-access",
        "Guard every load and store whose block can run past the end of the tensor.",
        "Every `tl.load`/`tl.store` on a block that may overhang the tensor has a `mask=` "
        "(CUDA: an `if (i < n)` guard), and masked loads feed reductions a neutral `other=`.",
    ),
    "coalesced_access": TechniqueInfo(
        "Coalesced access",
        "memory-access",
        "Let neighbouring lanes touch neighbouring addresses along the contiguous dimension.",
        "The fastest-varying index of each block maps to the tensor's contiguous (stride-1) "
        "dimension.",
    ),
    "strided_access": TechniqueInfo(
        "Strided access",
        "memory-access",
        "Read or write along a non-contiguous dimension with an explicit stride.",
        "Strided loads are deliberate (e.g. a column reduction) and strides come from "
        "`tensor.stride()`, not assumed.",
    ),
    "aligned_vector_path": TechniqueInfo(
        "Alignment check and scalar tail",
        "memory-access",
        "Take the 16-byte vector path only when every pointer is 16-byte aligned and the length "
        "a multiple of the vector width (`(ptr & 15) == 0`, `n % 4 == 0`); a scalar path or "
        "tail loop handles the rest.",
        "Every cast to a vector type is reached only after an alignment and length check, and "
        "the elements after the last full vector are handled by scalar code.",
    ),
    "atomic_update": TechniqueInfo(
        "Atomic updates",
        "memory-access",
        "Use atomics (`tl.atomic_add`, `atomicAdd`) where lanes or programs update the same "
        "address; a load-add-store loses updates.",
        "Scattered read-modify-write (histograms, scatter-add, cross-program sums) uses atomics "
        "or private copies merged afterwards.",
    ),
    "vectorized_memory": TechniqueInfo(
        "Vectorized loads and stores",
        "memory-access",
        "Move several elements per instruction (alignment hints, float4/half2 types).",
        "Alignment/contiguity hints (`tl.multiple_of`, `tl.max_contiguous`) or vector types "
        "are used only where the alignment really holds.",
    ),
    "block_reduction": TechniqueInfo(
        "Block reductions",
        "reductions",
        "Reduce a whole block at once: in Triton in registers (`tl.sum`, `tl.max`); in CUDA, "
        "per-thread partials combined through shared memory (or warp shuffles).",
        "Reductions run over a block that covers the row (or loop over blocks), with masked "
        "lanes set to the reduction's identity.",
    ),
    "warp_shuffle": TechniqueInfo(
        "Warp-shuffle reductions",
        "reductions",
        "Reduce within a warp with `__shfl_*_sync` before touching shared memory.",
        "Shuffle reductions use a full-warp mask and finish across warps through shared memory.",
    ),
    "online_softmax": TechniqueInfo(
        "Online softmax",
        "reductions",
        "Keep a running max and a rescaled running sum so a row is read in one pass.",
        "When the row does not fit one block, the running sum is rescaled by "
        "`exp(m_old - m_new)` at every step.",
    ),
    "thread_block_cluster": TechniqueInfo(
        "Rows held on chip by a thread-block cluster",
        "reductions",
        "When a row is too long for one SM (a reduction then an elementwise pass over it), hold "
        "it in the shared memory of a cluster of CTAs (sm90): each CTA keeps its slice, the "
        "partial results are read from peers' shared memory (`cluster.map_shared_rank`), and the "
        "row is read from DRAM once instead of twice.",
        "Peers' shared memory is read only between two `cluster.sync()`s, and no CTA exits while "
        "a peer may still read it (a last `cluster.sync()`).",
    ),
    "fp32_accumulation": TechniqueInfo(
        "fp32 accumulation",
        "reductions",
        "Accumulate low-precision inputs in float32 and cast once at the end.",
        "Sums, dots and norms of fp16/bf16 data accumulate in fp32 (`.to(tl.float32)`, "
        "`tl.zeros(..., dtype=tl.float32)`).",
    ),
    "tiling": TechniqueInfo(
        "Tiling",
        "tiling",
        "Split the output into tiles and loop over the reduction dimension tile by tile.",
        "Each program owns an output tile and walks K in `BLOCK_K` steps, masking the last "
        "partial tile.",
    ),
    "shared_memory": TechniqueInfo(
        "Shared memory staging",
        "tiling",
        "Stage reused data in shared memory, synchronising between phases.",
        "Every shared-memory phase is fenced by `__syncthreads()`.",
    ),
    "smem_padding": TechniqueInfo(
        "Shared-memory padding",
        "tiling",
        "Pad shared tiles (`[T][T+1]`, `[BK + PAD]`) so column accesses avoid bank conflicts.",
        "Shared tiles read by column (or by `wmma::load_matrix_sync`) are padded.",
    ),
    "async_copy": TechniqueInfo(
        "Asynchronous copies into shared memory",
        "tiling",
        "Double-buffer shared tiles and fill them with `cp.async`, so the next tile is in "
        "flight while the current one is used.",
        "Every `cp.async` group is waited for (`cp.async.wait_group`) and fenced with "
        "`__syncthreads()` before its tile is read.",
    ),
    "launch_config": TechniqueInfo(
        "Launch configuration",
        "launch-tuning",
        "Size blocks and warps to the problem (Triton: `next_power_of_2`, `num_warps`; CUDA: "
        "threads per block and the grid).",
        "Block sizes are powers of two derived from the shape, and the grid covers every "
        "element (`triton.cdiv`).",
    ),
    "autotune": TechniqueInfo(
        "Autotuning",
        "launch-tuning",
        "Let `triton.autotune` pick block sizes and warps per shape.",
        "Autotune keys include the sizes that change the best configuration.",
    ),
    "loop_bound_cdiv": TechniqueInfo(
        "Ceil-divided loop bounds",
        "tiling",
        "Run `cdiv(K, BLOCK_K)` loop steps, not `K // BLOCK_K`, so the last partial block is "
        "visited (and masked).",
        "Loop trip counts over a dimension use `tl.cdiv`/`triton.cdiv`, never floor division.",
    ),
    "carry_accumulation": TechniqueInfo(
        "Accumulated carries",
        "reductions",
        "A carry across chunks (scan offset, running sum) must accumulate (`carry += s`), not be "
        "overwritten by the last chunk.",
        "Running values carried across loop iterations are updated with `+=` (or an explicit "
        "combine), not reassigned.",
    ),
    "chunk_offset_index": TechniqueInfo(
        "Chunk offsets on indices",
        "reductions",
        "An index computed inside a chunk (`tl.argmax`, a block position) is local; add the "
        "chunk's start before using it as a row position.",
        "Indices produced per chunk have the chunk start added before they are stored or "
        "compared across chunks.",
    ),
    "true_length_divisor": TechniqueInfo(
        "Divide by the true length",
        "reductions",
        "Means and variances divide by the real length `n`, not the padded power-of-two block.",
        "Normalisers use the runtime length argument, never the `tl.constexpr` block size.",
    ),
}
"""Every technique the analyzers can report, in rendering order. The last four are repairs
recognised from a change (``upskills.distill.changes.fix_patterns``), never from one kernel."""

FAMILIES = ("memory-access", "reductions", "tiling", "launch-tuning")
"""Technique families, in rendering order."""


@dataclass(frozen=True)
class Finding:
    """Where a technique is used: 1-based line and that line's code."""

    technique: str
    line: int
    code: str


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""


def _call_name(node: ast.AST) -> str:
    return _dotted(node.func) if isinstance(node, ast.Call) else ""


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any(_dotted(d).split(".")[-1] == "jit" for d in fn.decorator_list)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _has_arange(node: ast.AST) -> bool:
    return any(_call_name(n).endswith("arange") for n in ast.walk(node))


class _Collector:
    def __init__(self, lines: list[str]):
        self.lines = lines
        self.found: dict[str, Finding] = {}

    def add(self, technique: str, line: int) -> None:
        if technique in self.found:
            return
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found[technique] = Finding(technique, line, code)


def _additive_terms(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        return _additive_terms(node.left) + _additive_terms(node.right)
    return [node]


def _strip_index(node: ast.AST) -> ast.AST:
    """``offs[:, None]`` -> ``offs``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _access_kind(addr: ast.AST, derived: set[str], defs: dict[str, ast.AST], depth: int = 0) -> str:
    """Classify a pointer expression: ``coalesced``, ``strided`` or ``""`` (unknown)."""
    kinds: set[str] = set()
    for term in _additive_terms(addr):
        core = _strip_index(term)
        if isinstance(core, ast.Name) and core.id in defs and depth < 4 and core.id in derived:
            inner = _access_kind(defs[core.id], derived, defs, depth + 1)
            kinds.add(inner or "coalesced")
        elif (
            isinstance(core, ast.Name)
            and core.id in derived
            or _has_arange(core)
            and not (isinstance(core, ast.BinOp) and isinstance(core.op, ast.Mult))
        ):
            kinds.add("coalesced")
        elif isinstance(core, ast.BinOp) and isinstance(core.op, ast.Mult):
            sides = [_strip_index(core.left), _strip_index(core.right)]
            touched = [s for s in sides if _names(s) & derived or _has_arange(s)]
            other = [s for s in sides if s not in touched]
            unit = all(isinstance(s, ast.Constant) and s.value == 1 for s in other)
            if touched and not unit:
                kinds.add("strided")
            elif touched:
                kinds.add("coalesced")
    if "coalesced" in kinds:
        return "coalesced"
    return "strided" if "strided" in kinds else ""


def _derived_names(
    fn: ast.FunctionDef, nodes: list[ast.AST]
) -> tuple[set[str], dict[str, ast.AST]]:
    """Names assigned from ``tl.arange`` (directly or through other such names)."""
    defs: dict[str, ast.AST] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                defs[target.id] = node.value
    uses = {name: (_has_arange(value), _names(value)) for name, value in defs.items()}
    derived = {name for name, (arange, _) in uses.items() if arange}
    changed = True
    while changed:
        changed = False
        for name, (_, names) in uses.items():
            if name not in derived and names & derived:
                derived.add(name)
                changed = True
    return derived, defs


def _analyze_call(
    node: ast.Call, derived: set[str], defs: dict[str, ast.AST], out: _Collector
) -> None:
    name = _call_name(node)
    short = name.rpartition(".")[2]
    if short in ("load", "store") and node.args:
        if any(k.arg == "mask" for k in node.keywords) or len(node.args) >= 3:
            out.add("masking", node.lineno)
        kind = _access_kind(node.args[0], derived, defs)
        if kind:
            out.add(f"{kind}_access", node.lineno)
    elif short in ("sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum") and (
        name.startswith("tl.") or name.startswith("triton.language.")
    ):
        out.add("block_reduction", node.lineno)
    elif short == "dot" and name.startswith("tl"):
        out.add("tiling", node.lineno)
        if any(k.arg == "out_dtype" for k in node.keywords):
            out.add("fp32_accumulation", node.lineno)
    elif short.startswith("atomic_") and name.startswith("tl"):
        out.add("atomic_update", node.lineno)
    elif short in ("multiple_of", "max_contiguous", "max_constancy"):
        out.add("vectorized_memory", node.lineno)
    elif short == "to" and any("float32" in _dotted(a) for a in node.args):
        out.add("fp32_accumulation", node.lineno)
    elif short in ("zeros", "full") and any(
        "float32" in _dotted(k.value) for k in node.keywords if k.arg == "dtype"
    ):
        out.add("fp32_accumulation", node.lineno)


def _has_exp_of_difference(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and _call_name(n).rpartition(".")[2] in ("exp", "exp2")
        and any(
            isinstance(x, ast.BinOp) and isinstance(x.op, ast.Sub)
            for a in n.args
            for x in ast.walk(a)
        )
        for n in ast.walk(node)
    )


def _rescales(loop: ast.For) -> bool:
    """Some running value is multiplied by ``exp(m_old - m_new)`` (directly or via a name)."""
    factors = {
        t.id
        for n in ast.walk(loop)
        if isinstance(n, ast.Assign) and _has_exp_of_difference(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }

    def is_factor(node: ast.AST) -> bool:
        return _has_exp_of_difference(node) or bool(_names(node) & factors)

    for n in ast.walk(loop):
        if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Mult) and is_factor(n.value):
            return True
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = _names(n.targets[0])
            for m in ast.walk(n.value):
                if isinstance(m, ast.BinOp) and isinstance(m.op, ast.Mult):
                    for own, other in ((m.left, m.right), (m.right, m.left)):
                        if _names(_strip_index(own)) & target and is_factor(other):
                            return True
    return False


def _analyze_loop(node: ast.For, out: _Collector) -> None:
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    shorts = {_call_name(n).rpartition(".")[2] for n in calls}
    if "maximum" in shorts and _rescales(node):
        out.add("online_softmax", node.lineno)
    if "dot" in shorts:
        out.add("tiling", node.lineno)


def _analyze_jit(fn: ast.FunctionDef, out: _Collector) -> None:
    nodes = list(ast.walk(fn))
    derived, defs = _derived_names(fn, nodes)
    for node in nodes:
        if isinstance(node, ast.Call):
            _analyze_call(node, derived, defs, out)
        elif isinstance(node, ast.For):
            _analyze_loop(node, out)


def _analyze_launcher(nodes: list[ast.AST], out: _Collector) -> None:
    for node in nodes:
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if _dotted(dec).endswith("autotune"):
                    out.add("autotune", dec.lineno)
        elif isinstance(node, ast.Call):
            short = _call_name(node).rpartition(".")[2]
            if any(k.arg in ("num_warps", "num_stages") for k in node.keywords):
                out.add("launch_config", node.lineno)
            elif short in ("next_power_of_2", "cdiv"):
                out.add("launch_config", node.lineno)


_VECTOR_TYPE = r"(?:float[24]|u?int[24]|__half2|half2|__nv_bfloat162)"

_CUDA_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("warp_shuffle", re.compile(r"__shfl_(?:down_|xor_|up_)?sync")),
    (
        "smem_padding",
        re.compile(r"__shared__[^;]*\[[^\]]+\]\s*\[[^\]]*\+\s*(?:1|PAD\w*)\s*\]"),
    ),
    ("shared_memory", re.compile(r"__shared__")),
    # a vector load or store (the cast) is the finding; a bare mention of the type otherwise
    ("vectorized_memory", re.compile(rf"reinterpret_cast<\s*(?:const\s+)?{_VECTOR_TYPE}\s*\*")),
    ("vectorized_memory", re.compile(rf"\b{_VECTOR_TYPE}\b")),
    # the branch that picks the vector path on alignment, else the test itself
    ("aligned_vector_path", re.compile(r"if\s*\([^\n]*&\s*(?:15|0xf|0xF)\b[^\n]*\{")),
    ("aligned_vector_path", re.compile(r"[^\n]*&\s*(?:15|0xf|0xF)\b")),
    ("masking", re.compile(r"if\s*\(\s*[\w.]+\s*(?:<|>=)\s*[\w.]+\s*(?:\)|&&|\|\|)")),
    ("atomic_update", re.compile(r"\batomic(?:Add|Max|Min|CAS|Exch)\s*\(")),
    ("fp32_accumulation", re.compile(r"__half2float|__bfloat162float|static_cast<float>")),
    (
        "coalesced_access",
        re.compile(
            r"blockIdx\.x\s*\*\s*blockDim\.x\s*\+\s*threadIdx\.x|\[\s*[\w.*+ ]*threadIdx\.x\s*\]"
        ),
    ),
    ("strided_access", re.compile(r"threadIdx\.x\s*\*\s*\w+|\w+\s*\*\s*stride")),
    ("async_copy", re.compile(r"cp\.async|__pipeline_memcpy_async|\bmemcpy_async\b")),
    # a read of a peer's shared memory is the finding; the cluster's declaration otherwise
    ("thread_block_cluster", re.compile(r"\bmap_shared_rank\b")),
    ("thread_block_cluster", re.compile(r"\bthis_cluster\s*\(|__cluster_dims__")),
    ("launch_config", re.compile(r"<<<")),
    ("launch_config", re.compile(r"__launch_bounds__")),
)

_WARP_PARTIAL = re.compile(r"\[\s*(?:warp|wid|warp_id|warpId)\s*\]\s*=[^=]")
"""One value per warp written to shared memory: the cross-warp step of a block reduction."""

_MMA = re.compile(r"\bmma_sync\b|\bmma\.sync\b")
"""Tensor-core matrix multiply-accumulate (WMMA or inline PTX) on tiles."""


def _analyze_cuda(code: str, first_line: int, out: _Collector) -> None:
    def line_of(pos: int) -> int:
        return first_line + code.count("\n", 0, pos)

    for technique, pattern in _CUDA_PATTERNS:
        match = pattern.search(code)
        if match:
            out.add(technique, line_of(match.start()))
    sync = code.find("__syncthreads")
    partial = _WARP_PARTIAL.search(code)
    if sync >= 0 and partial:
        out.add("block_reduction", line_of(partial.start()))
    elif sync >= 0 and re.search(r">>=\s*1|/=\s*2", code):
        out.add("block_reduction", line_of(sync))
    mma = _MMA.search(code)
    if "__shared__" in code and mma:
        out.add("tiling", line_of(mma.start()))
    elif "__shared__" in code and re.search(r"for\s*\([^)]*\+=\s*\w*(?:TILE|BK|BLOCK_K)", code):
        out.add("tiling", line_of(code.find("__shared__")))
    exp = re.search(r"expf?\(\s*\w*max\w*\s*-\s*\w*max\w*\s*\)", code)
    if exp and "fmaxf" in code:
        out.add("online_softmax", line_of(exp.start()))


def analyze_kernel(source: str) -> dict[str, Finding]:
    """Find the techniques a candidate kernel module uses (cached per source; see ``_analyze``).

    Args:
        source: a candidate module (Triton ``@triton.jit`` kernels and/or CUDA sources passed
            to ``load_inline``).

    Returns:
        Technique id -> its first finding. Empty when the source does not parse.
    """
    return dict(_analyze(source))


@functools.lru_cache(maxsize=64)
def _analyze(source: str) -> dict[str, Finding]:
    """Find the techniques a candidate kernel module uses.

    Args:
        source: a candidate module (Triton ``@triton.jit`` kernels and/or CUDA sources passed
            to ``load_inline``).

    Returns:
        Technique id -> its first finding. Empty when the source does not parse.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out = _Collector(source.splitlines())
    nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.FunctionDef) and _is_jit(node):
            _analyze_jit(node, out)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "__global__" in node.value:
                _analyze_cuda(node.value, node.lineno, out)
    _analyze_launcher(nodes, out)
    order = list(TECHNIQUES)
    return {k: out.found[k] for k in sorted(out.found, key=order.index)}
