"""Comparing a candidate's output with the reference's: structure, shape, dtype, values.

Tolerances are dtype-aware and scale with the reference's magnitude: an element passes when
``|out - ref| <= atol + rtol * |ref|`` with ``atol = base_atol[dtype] * rms(ref)``. float32 is
judged strictly (1e-4) unless the task is matmul-class (tags gemm, attention, conv, or no tags
at all, as for a loaded KernelBench file), where TF32 tensor-core products are allowed (4e-3:
truncated TF32 operands reach ~3e-3 of the output's RMS). On top of the element test, the
relative L2 error ``||out - ref|| / ||ref||`` must stay under a dtype bound; an all-zeros output
has relative L2 error 1, so it fails every task whose reference is not all zeros, however small
its values. Integer and bool outputs must match exactly; NaN and Inf must appear at the same
positions (with the same sign for Inf). Strides do not matter: values are compared, not memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from upskills.verify.verdict import ErrorClass

BASE_TOLERANCES: dict[str, tuple[float, float, float]] = {
    "float64": (1e-7, 1e-7, 1e-6),
    "float32": (1e-4, 1e-4, 1e-3),
    "float16": (1e-2, 1e-2, 2e-2),
    "bfloat16": (2e-2, 2e-2, 4e-2),
}
"""dtype -> (base atol relative to the output's RMS, rtol, max relative L2 error)."""

FLOAT32_MATMUL = (4e-3, 4e-3, 1e-2)
"""float32 tolerances for matmul-class tasks: TF32 tensor-core products (10-bit mantissa)."""

MATMUL_TAGS = frozenset({"gemm", "attention", "conv"})
"""Task tags whose float32 outputs may come from TF32 products."""

_FALLBACK = (1e-2, 1e-2, 2e-2)
"""Tolerances for float dtypes not listed (float8 and friends)."""


@dataclass
class Comparison:
    """The outcome of comparing one output (or output structure) with the reference."""

    passed: bool
    """Whether the outputs match."""
    error_class: ErrorClass | None = None
    """Why not, if they do not."""
    message: str = ""
    """Where and how they differ."""
    max_abs_err: float | None = None
    """Largest absolute error over finite elements."""
    max_rel_err: float | None = None
    """Largest absolute error divided by the reference's RMS."""
    atol: float | None = None
    """Absolute tolerance applied."""
    rtol: float | None = None
    """Relative tolerance applied."""


def tolerances(dtype_name: str, matmul: bool = False) -> tuple[float, float, float]:
    """Base (atol, rtol, relative L2 bound) for a torch dtype name without prefix."""
    if matmul and dtype_name == "float32":
        return FLOAT32_MATMUL
    return BASE_TOLERANCES.get(dtype_name, _FALLBACK)


def is_matmul_class(tags: list[str]) -> bool:
    """True for tasks whose float32 math may run on TF32 tensor cores, or whose tags are unknown."""
    return not tags or bool(MATMUL_TAGS.intersection(tags))


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    for size in reversed(shape):
        out.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(out))


def _first(mask: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    import torch

    flat = int(torch.nonzero(mask.reshape(-1))[0, 0])
    return _index(flat, shape)


def compare_tensors(
    ref: Any,
    out: Any,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    where: str = "",
    matmul: bool = False,
) -> Comparison:
    """Compare one output tensor with the reference's.

    Args:
        ref: The reference output tensor.
        out: The candidate's output.
        atol: Absolute tolerance override (already scaled); None for the dtype default.
        rtol: Relative tolerance override; None for the dtype default.
        where: Prefix for messages (``output[1]``).
        matmul: allow TF32-level error on float32 outputs (matmul-class tasks).

    Returns:
        The comparison; ``error_class`` is SHAPE, DTYPE, DEVICE, NAN or MISMATCH on failure.
    """
    import torch

    label = where or "output"
    if not isinstance(out, torch.Tensor):
        return Comparison(
            False, ErrorClass.SHAPE, f"{label}: expected a tensor, got {type(out).__name__}"
        )
    if out.device.type != ref.device.type:
        return Comparison(
            False, ErrorClass.DEVICE, f"{label}: on {out.device}, expected on {ref.device}"
        )
    if tuple(out.shape) != tuple(ref.shape):
        return Comparison(
            False,
            ErrorClass.SHAPE,
            f"{label}: shape {tuple(out.shape)}, expected {tuple(ref.shape)}",
        )
    if out.dtype != ref.dtype:
        return Comparison(
            False, ErrorClass.DTYPE, f"{label}: dtype {out.dtype}, expected {ref.dtype}"
        )
    shape = tuple(ref.shape)
    if not (ref.is_floating_point() or ref.is_complex()):
        differ = out != ref
        count = int(differ.sum())
        if count:
            at = _first(differ, shape)
            return Comparison(
                False,
                ErrorClass.MISMATCH,
                f"{label}: {count} of {ref.numel()} elements differ (exact match required for "
                f"{ref.dtype}); first at {list(at)}: got {out[at].item()}, "
                f"expected {ref[at].item()}",
                max_abs_err=float((out.double() - ref.double()).abs().max()),
                atol=0.0,
                rtol=0.0,
            )
        return Comparison(True, max_abs_err=0.0, max_rel_err=0.0, atol=0.0, rtol=0.0)
    return _compare_floats(ref, out, atol, rtol, label, shape, matmul)


CHUNK = 1 << 26
"""Elements compared at a time: a comparison's temporaries stay ~1.5 GiB at any output size."""


def _compare_floats(
    ref: Any,
    out: Any,
    atol: float | None,
    rtol: float | None,
    label: str,
    shape: tuple[int, ...],
    matmul: bool,
) -> Comparison:
    """Element and L2 tests, over ``CHUNK``-element slices (GiB-scale outputs fit beside them)."""
    import torch

    dtype_name = str(ref.dtype).removeprefix("torch.")
    base_atol, base_rtol, rel_l2_bound = tolerances(dtype_name, matmul)
    work = torch.float64 if ref.dtype == torch.float64 else torch.float32
    ref_flat, out_flat = ref.reshape(-1), out.reshape(-1)
    n = ref_flat.numel()
    spans = [(a, min(n, a + CHUNK)) for a in range(0, n, CHUNK)]

    def pair(a: int, b: int) -> tuple[Any, Any]:
        return ref_flat[a:b].to(work), out_flat[a:b].to(work)

    special, first_special, n_finite, ref_sq = 0, -1, 0, 0.0
    for a, b in spans:  # pass 1: NaN/Inf positions and the reference's RMS
        r, c = pair(a, b)
        r_nan, c_nan = torch.isnan(r), torch.isnan(c)
        r_inf, c_inf = torch.isinf(r), torch.isinf(c)
        bad_special = (r_nan != c_nan) | (r_inf != c_inf) | (r_inf & c_inf & (r != c))
        k = int(bad_special.sum())
        if k and first_special < 0:
            first_special = a + int(torch.nonzero(bad_special)[0, 0])
        special += k
        finite = torch.isfinite(r)
        n_finite += int(finite.sum())
        r_f = torch.where(finite, r, torch.zeros_like(r))
        ref_sq += float((r_f * r_f).sum())
    if special:
        at = _index(first_special, shape)
        return Comparison(
            False,
            ErrorClass.NAN,
            f"{label}: NaN/Inf positions differ at {special} elements; first at {list(at)}: "
            f"got {float(out_flat[first_special])}, expected {float(ref_flat[first_special])}",
        )
    rms = math.sqrt(ref_sq / max(n_finite, 1))
    atol_used = atol if atol is not None else base_atol * (rms if rms > 0 else 1.0)
    rtol_used = rtol if rtol is not None else base_rtol
    max_abs, worst, count, err_sq = 0.0, 0, 0, 0.0
    for a, b in spans:  # pass 2: errors against the tolerances
        r, c = pair(a, b)
        finite = torch.isfinite(r)
        r_f = torch.where(finite, r, torch.zeros_like(r))
        diff = (torch.where(finite, c, torch.zeros_like(c)) - r_f).abs()
        top = float(diff.max())
        if top > max_abs:
            max_abs, worst = top, a + int(torch.argmax(diff))
        count += int((diff > atol_used + rtol_used * r_f.abs()).sum())
        err_sq += float((diff * diff).sum())
    max_rel = max_abs / rms if rms > 0 else (0.0 if max_abs == 0 else float("inf"))
    result = Comparison(True, None, "", max_abs, max_rel, atol_used, rtol_used)
    if count:
        at = _index(worst, shape)
        result.passed = False
        result.error_class = ErrorClass.MISMATCH
        result.message = (
            f"{label}: {count} of {n} elements exceed tolerance "
            f"(atol={atol_used:.3g}, rtol={rtol_used:.3g}); max abs err {max_abs:.4g} at "
            f"{list(at)}: got {float(out_flat[worst]):.6g}, expected {float(ref_flat[worst]):.6g}"
        )
        return result
    ref_norm = math.sqrt(ref_sq)
    if (atol is not None or rtol is not None) and rms > 0:
        # a task that loosens the element test loosens this one as far (but zeros still fail)
        rel_l2_bound = max(rel_l2_bound, min(0.5, (atol_used + rtol_used * rms) / rms))
    if ref_norm > 0:
        rel_l2 = math.sqrt(err_sq) / ref_norm
        if rel_l2 > rel_l2_bound:
            result.passed = False
            result.error_class = ErrorClass.MISMATCH
            result.message = (
                f"{label}: relative L2 error {rel_l2:.3g} exceeds {rel_l2_bound:g} although "
                f"every element is within atol={atol_used:.3g} (is the output ~zero?)"
            )
    return result


def compare_outputs(
    ref: Any,
    out: Any,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    where: str = "",
    matmul: bool = False,
) -> Comparison:
    """Compare outputs of any structure (tensor, tuple/list of tensors, Python number).

    Args:
        ref: The reference output.
        out: The candidate's output.
        atol: Absolute tolerance override (the task's), or None.
        rtol: Relative tolerance override (the task's), or None.
        where: Path of this output within the whole (for messages).
        matmul: allow TF32-level error on float32 outputs (matmul-class tasks).

    Returns:
        The first failing comparison, or a passing one carrying the largest errors.
    """
    import torch

    label = where or "output"
    if isinstance(ref, torch.Tensor):
        return compare_tensors(ref, out, atol=atol, rtol=rtol, where=label, matmul=matmul)
    if isinstance(ref, list | tuple):
        refs = cast("list[Any] | tuple[Any, ...]", ref)
        outs = cast("list[Any] | tuple[Any, ...]", out) if isinstance(out, list | tuple) else None
        if outs is None or len(outs) != len(refs):
            got_type = type(cast(object, out)).__name__
            got = f"{got_type} of {len(outs)}" if outs is not None else got_type
            return Comparison(
                False,
                ErrorClass.SHAPE,
                f"{label}: expected a {type(refs).__name__} of {len(refs)} outputs, got {got}",
            )
        merged = Comparison(True, max_abs_err=0.0, max_rel_err=0.0)
        for i, (r, o) in enumerate(zip(refs, outs, strict=True)):
            part = compare_outputs(r, o, atol=atol, rtol=rtol, where=f"{label}[{i}]", matmul=matmul)
            if not part.passed:
                return part
            merged.max_abs_err = max(merged.max_abs_err or 0.0, part.max_abs_err or 0.0)
            merged.max_rel_err = max(merged.max_rel_err or 0.0, part.max_rel_err or 0.0)
            merged.atol, merged.rtol = part.atol, part.rtol
        return merged
    if isinstance(ref, bool | int | float):
        if isinstance(out, torch.Tensor) and out.numel() == 1:
            out = out.item()
        if not isinstance(out, bool | int | float):
            return Comparison(
                False, ErrorClass.SHAPE, f"{label}: expected a number, got {type(out).__name__}"
            )
        return compare_tensors(
            torch.tensor(ref, dtype=torch.float64),
            torch.tensor(out, dtype=torch.float64),
            atol=atol if atol is not None else 1e-4 * max(1.0, abs(float(ref))),
            rtol=rtol if rtol is not None else 1e-4,
            where=label,
        )
    if ref != out:
        return Comparison(False, ErrorClass.MISMATCH, f"{label}: got {out!r}, expected {ref!r}")
    return Comparison(True)
