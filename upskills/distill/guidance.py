"""The guidance a weaker model needs, around the mined lessons: workflow, lowering notes, sizing.

The workflow is fixed text (how to approach any kernel, in five steps); the notes per technique
say what a construct compiles to and when it pays (Triton's ``tl.sum``/``tl.max`` lower to
warp shuffles; vector types need aligned, contiguous data); the sizing rules are *derived* from
the pack's own measured perf lessons (only effects measured in isolation or by ablation, never
confounded ones), so a rule is shown only when a measurement supports it.
"""

from __future__ import annotations

from upskills.distill.lessons import Lesson

WORKFLOW = (
    "1. **Bytes moved.** Count the bytes the op must read and write once (inputs + outputs); "
    "divide by the GPU's bandwidth (H200: ~4.8 TB/s) for the memory-bound floor, and count "
    "FLOPs against tensor-core peak for GEMM-like ops.",
    "2. **Roofline target.** Memory-bound ops (elementwise, reductions, norms, softmax, "
    "transposes) aim at that floor: one pass over the data, no extra round trips; compute-bound "
    "ops (GEMM, attention, convolution) aim at tensor cores (`tl.dot`, fp32 accumulation).",
    "3. **Pattern.** Pick the pattern for the op: coalesced, vectorized loads along the "
    "contiguous dimension; a row per program (or per warp) with a block reduction for "
    "row-wise ops; output tiles with a K loop for GEMMs.",
    "4. **Ragged shapes.** Sizes that are not multiples of the block: mask every load and store "
    "(neutral `other=` for reductions), `cdiv` grids and loop bounds, divide by the true length.",
    "5. **Measure against compile.** `upskills check TASK kernel.py --device cuda` gives the "
    "speedup vs eager *and* vs `torch.compile`; a kernel slower than compile is not done. "
    "Change one thing at a time and re-measure, so you know what helped.",
)
"""The five steps, in order (SKILL.md shows them all; the compact variant one line each)."""

WORKFLOW_COMPACT = (
    "- Workflow: bytes moved -> roofline target -> pattern -> mask ragged shapes -> measure vs "
    "eager and `torch.compile`, one change at a time."
)
"""The workflow in one line."""

LOWERING: dict[str, str] = {
    "block_reduction": (
        "Triton's `tl.sum`/`tl.max` over a block lower to warp shuffles (`shfl.sync.bfly`) within "
        "each warp, then shared memory across warps: you get the warp-shuffle reduction without "
        "writing it. Keep the reduced axis within one program's block."
    ),
    "warp_shuffle": (
        "In CUDA, reduce within a warp with `__shfl_down_sync(0xffffffff, v, offset)` for "
        "offset = 16, 8, 4, 2, 1 (or `__shfl_xor_sync` for an all-reduce), write one value per "
        "warp to shared memory, `__syncthreads()`, and let the first warp reduce those."
    ),
    "vectorized_memory": (
        "16 bytes per thread per access is the target: `float4` (4 x fp32), or 8 x fp16 via "
        "`uint4`/two `half2`; only where the pointer is 16-byte aligned and the row length a "
        "multiple of the vector width (handle the tail separately). In Triton, contiguous "
        "`tl.arange` offsets with `tl.multiple_of`/`tl.max_contiguous` let the compiler emit "
        "128-bit loads; a hint on offsets that are not really aligned gives wrong results."
    ),
    "coalesced_access": (
        "Consecutive threads (lanes) must touch consecutive addresses: map `threadIdx.x` (or the "
        "`tl.arange` axis) to the stride-1 dimension; for a transpose, stage a tile in shared "
        "memory (padded `[TILE][TILE + 1]`) so both the read and the write are coalesced."
    ),
    "smem_padding": (
        "Shared memory has 32 banks of 4 bytes: in a `float tile[32][32]` a column lives in one "
        "bank, so reading it by column is a 32-way conflict; `[32][33]` puts the column's "
        "elements in 32 different banks. Half tiles read by `wmma::load_matrix_sync` are "
        "padded by 8 halves, which keeps the row pitch a multiple of 16 bytes."
    ),
    "async_copy": (
        "`cp.async` (sm80+) copies global -> shared memory without going through registers: "
        "issue the copies for tile k + 1, compute on tile k, then `cp.async.wait_group` and "
        "`__syncthreads()` before using the next buffer. In Triton, `num_stages` >= 2 on the "
        "loop around `tl.dot` asks the compiler for the same pipeline."
    ),
    "thread_block_cluster": (
        "A 1.5 MiB softmax row does not fit one SM's 228 KiB of shared memory, so a two-pass "
        "kernel reads it twice (about two thirds of copy bandwidth at best). A cluster of 8 CTAs "
        "(`__cluster_dims__(8, 1, 1)`, or 16 with `cudaFuncAttributeNonPortableClusterSizeAllowed` "
        "and `cudaLaunchKernelEx`) holds it: reduce each slice, `cluster.sync()`, read the peers' "
        "partials through `cluster.map_shared_rank(ptr, rank)`, `cluster.sync()` again, then "
        "write each slice from shared memory. One CTA per SM leaves the SM idle during the "
        "reduce and the barriers: measure the achieved bandwidth, not just the read count."
    ),
    "tiling": (
        "Each block owns an output tile and walks K through shared memory. Tensor cores are "
        "reached in CUDA through WMMA (`wmma::load_matrix_sync`, `wmma::mma_sync` on 16x16x16 "
        "fp16 fragments with fp32 accumulators); Triton's `tl.dot` emits them for you."
    ),
}
"""Technique -> what it compiles to and when it pays (shown with the technique's lesson)."""


def sizing_rules(lessons: list[Lesson], limit: int = 6) -> list[str]:
    """Sizing rules backed by measurements: retunes measured alone that moved speed >= 5%.

    Args:
        lessons: the pack's merged lessons.
        limit: most rules returned.

    Returns:
        One line per rule (``num_warps 4 -> 8: 1.10x -> 1.42x eager on NVIDIA H200 (row_sum)``),
        largest effect first; confounded effects never make a rule.
    """
    rows: list[tuple[float, str]] = []
    for x in lessons:
        e = x.effect
        if x.kind != "perf" or e.attribution not in ("isolated", "ablated"):
            continue
        if x.technique not in ("launch_config", "autotune"):
            continue
        if not (e.speedup_before and e.speedup_after):
            continue
        retunes = [c for c in e.changes if "->" in c or "(new)" in c]
        what = "; ".join(retunes[:2]) or "launch configuration"
        gpus = ", ".join(x.preconditions.gpus) or "unknown GPU"
        tasks = ", ".join(sorted({s.task for s in x.sources}))
        verb = "helped" if x.supported else "hurt"
        how = "alone" if e.attribution == "ablated" else "as the only change"
        rows.append(
            (
                -abs(e.speedup_after / e.speedup_before - 1),
                f"- {what}: {e.speedup_before:.2f}x -> {e.speedup_after:.2f}x eager on {gpus} "
                f"({tasks}; {verb}, measured {how}).",
            )
        )
    return [r for _, r in sorted(rows)[:limit]]
