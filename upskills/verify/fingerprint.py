"""Fingerprints of timed calls' outputs, checked on calls the judge draws after the run.

The judge checks whole outputs of only a few timed calls (the kept calls), chosen before the
run. The choice sits in the timer's locals in the candidate's process, and a forward can read it
(``PEEK_AT_KEPT_CALLS`` in ``tests/verify/test_adversarial.py``) and compute only those calls.
With an audit, the host also returns a fingerprint of *every* timed call's outputs, computed
outside the events, and only after the reply does the judge draw the calls it verifies: for
each, it rebuilds the call's inputs, runs the reference and fingerprints the reference.

A fingerprint is ``PROJECTIONS`` signed sums ``d_j = sum_i s_ij out_i`` in float64, the signs
``s_ij = +-1`` hashed from the element's position, the call and the run's seed. For an output
the judge's element test passes, the error ``e_i = out_i - ref_i`` has ``|e_i| <= t_i =
atol + rtol |ref_i|`` (:func:`upskills.verify.compare.compare_tensors`), and ``e`` does not
depend on the signs, so each ``(d_j(out) - d_j(ref)) / ||t||`` is sub-Gaussian with variance
proxy at most 1 (Hoeffding). The judge sums their squares over every verified projection (M of
them, signs independent across calls and projections) and fails the audit when the mean exceeds
``threshold(M)``: by the moment bound ``E exp(z^2 / 4) <= sqrt(2)``, an honest output does so
with probability at most ``exp(-20.7)`` (1e-9). A result not computed for the call's inputs
(stale, partly computed, zeros) has ``||e||`` many times ``||t||``; it is caught when such calls
are a share ``f`` of those verified and ``f ||e||^2 / ||t||^2`` exceeds the threshold (about 2
with 16 calls verified).

Until 2026-12-03 the fingerprint was one sum with weights in [0, 1) and a worst-case bound
``sum w_i t_i``: errors of random sign cancel as ``sqrt(n)`` while that bound grows as ``n``, so
a stale output (the same input set under another call's perturbation) passed at 1M float32
elements and at any size in float16 (``tests/verify/test_fingerprint.py``).

A forward that knows the seed (it can read it) could forge the projections of a wrong output
only by knowing those of the right one, which takes a pass over the inputs at least.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

PROJECTIONS = 8
"""Signed sums a fingerprint has per output tensor (8 bits of one hash an element)."""
CHUNK = 1 << 22
"""Elements fingerprinted at once by the PyTorch path (float64 temporaries of this size)."""
FUSED_BLOCK = 2048
"""Elements per program of the fused kernel."""
_M1 = 0xD6E8FEB86659FD93 - (1 << 64)  # odd 64-bit multipliers (as signed int64)
_M2 = 0xA0761D6478BD642F - (1 << 64)
_LOW32 = 0xFFFFFFFF
ROUNDING = 1e-9
"""Slack for float64 summation in another order, relative to ``sum |ref_i|``."""
FALSE_ALARM_LOG = 20.7
"""``-ln`` of the bound on an honest output's chance to fail an audit (1e-9)."""


@dataclass
class Expected:
    """A reference tensor's fingerprint and the scale its deviations are measured in."""

    values: list[float]
    """The reference's ``PROJECTIONS`` signed sums."""
    scale: float
    """``||t||_2``, ``t_i = atol + rtol |ref_i|``: 0 for integers (exact)."""
    slack: float
    """Float64 summation slack each deviation is allowed before it counts."""


def salt(seed: int, call: int, k: int) -> int:
    """The signs' salt for output ``k`` of timed call ``call`` (a signed int64)."""
    s = (seed * 0x9FB21C651E98DF25 + call * 0xD1342543DE82EF95 + k * 0xC2B2AE3D27D4EB4F + 1) & (
        (1 << 64) - 1
    )
    return s - (1 << 64) if s >= 1 << 63 else s


def _hash(start: int, stop: int, salt_: int, device: Any) -> Any:
    """The int64 hash of positions ``start..stop-1``; bits 40.. are the signs (negative if 1)."""
    import torch

    h = torch.arange(start, stop, device=device, dtype=torch.int64)
    h.mul_(_M1).add_(salt_)  # int64 arithmetic wraps around
    h.bitwise_xor_(torch.bitwise_right_shift(h, 31).bitwise_and_(_LOW32))
    h.mul_(_M2)
    h.bitwise_xor_(torch.bitwise_right_shift(h, 29).bitwise_and_((1 << 35) - 1))
    return h


def signs(start: int, stop: int, salt_: int, device: Any) -> Any:
    """``s_ij`` for positions ``start..stop-1``: a float64 ``(n, PROJECTIONS)`` tensor of +-1."""
    import torch

    h = _hash(start, stop, salt_, device)
    shifts = torch.arange(40, 40 + PROJECTIONS, device=device, dtype=torch.int64)
    bits = torch.bitwise_right_shift(h[:, None], shifts).bitwise_and_(1)
    return bits.to(torch.float64).mul_(-2.0).add_(1.0)


def _projections_torch(flat: Any, salt_: int) -> Any:
    import torch

    acc = torch.zeros(PROJECTIONS, dtype=torch.float64, device=flat.device)
    for a in range(0, flat.numel(), CHUNK):
        b = min(flat.numel(), a + CHUNK)
        acc += flat[a:b].to(torch.float64) @ signs(a, b, salt_, flat.device)
    return acc


_fused_failed: list[str] = []
"""Why the fused kernel failed in this process, once it has (the PyTorch ops then serve)."""
_FUSABLE = ("float16", "bfloat16", "float32", "float64", "int32", "int64")


def projections(tensor: Any, salt_: int) -> Any:
    """The ``PROJECTIONS`` signed sums of a tensor's elements (row-major), float64, no sync.

    On a GPU one Triton kernel reads each element once; elsewhere, or where it fails, PyTorch
    ops give the same sums up to float64 rounding.
    """
    import torch

    flat = tensor.reshape(-1)
    if flat.numel() == 0:
        return torch.zeros(PROJECTIONS, dtype=torch.float64, device=tensor.device)
    dtype = str(flat.dtype).removeprefix("torch.")
    if flat.is_cuda and dtype in _FUSABLE and not _fused_failed:
        try:
            return _projections_fused(flat.contiguous(), salt_)
        except Exception as exc:  # noqa: BLE001 - any Triton failure: the PyTorch path instead
            _fused_failed.append(f"{type(exc).__name__}: {exc}")
            print(
                f"upskills: the fused fingerprint kernel failed ({_fused_failed[0][:200]}); "
                "fingerprinting with PyTorch ops instead",
                file=sys.stderr,
            )
    return _projections_torch(flat, salt_)


def _projections_fused(flat: Any, salt_: int) -> Any:
    """The fused kernel's sums (any device Triton runs on, the interpreter's CPU included)."""
    import torch

    from upskills.verify.fingerprint_kernel import projection_kernel

    blocks = -(-flat.numel() // FUSED_BLOCK)
    partial = torch.empty(blocks * PROJECTIONS, dtype=torch.float64, device=flat.device)
    projection_kernel()[(blocks,)](
        flat, partial, flat.numel(), salt_, _M1, _M2, BLOCK=FUSED_BLOCK, K=PROJECTIONS
    )
    return partial.view(blocks, PROJECTIONS).sum(0)


def fingerprints(outputs: list[Any], seed: int, call: int) -> Any:
    """Timed call ``call``'s fingerprint: ``PROJECTIONS`` sums an output (1-d, float64, no sync)."""
    import torch

    sums = [projections(t, salt(seed, call, k)) for k, t in enumerate(outputs)]
    return torch.cat(sums) if sums else torch.zeros(0, dtype=torch.float64)


def expected(
    refs: list[Any],
    seed: int,
    call: int,
    atol: float | None,
    rtol: float | None,
    matmul: bool,
) -> list[Expected | None]:
    """Per reference tensor of timed call ``call``: its fingerprint, or None if untellable.

    The tolerances are :func:`upskills.verify.compare.compare_tensors`': the task's, else the
    dtype's (atol scaled by the reference's RMS); exact for integers. A reference with a NaN or
    an infinity is not fingerprinted (its sums are not numbers).
    """
    import torch

    from upskills.verify.compare import tolerances

    out: list[Expected | None] = []
    for k, ref in enumerate(refs):
        flat = ref.reshape(-1)
        if flat.numel() == 0:
            out.append(Expected([0.0] * PROJECTIONS, 0.0, 0.0))
            continue
        floating = ref.is_floating_point() or ref.is_complex()
        if floating and not bool(torch.isfinite(ref).all()):
            out.append(None)
            continue
        values = [float(v) for v in projections(ref, salt(seed, call, k)).tolist()]
        chunks = [flat[a : a + CHUNK].to(torch.float64) for a in range(0, flat.numel(), CHUNK)]
        size = sum(float(c.abs().sum()) for c in chunks)
        scale = 0.0
        if floating:
            base_atol, base_rtol, _ = tolerances(str(ref.dtype).removeprefix("torch."), matmul)
            rms = math.sqrt(sum(float(c.square().sum()) for c in chunks) / flat.numel())
            a = atol if atol is not None else base_atol * (rms if rms > 0 else 1.0)
            r = rtol if rtol is not None else base_rtol
            scale = math.sqrt(sum(float((c.abs() * r + a).square().sum()) for c in chunks))
        out.append(Expected(values, scale, ROUNDING * size + 1e-12))
    return out


def squared_deviations(got: list[float], want: Expected) -> list[float]:
    """``((|d_j| - slack)+ / scale)^2`` for each projection (inf past the slack at scale 0)."""
    squares: list[float] = []
    for j, value in enumerate(want.values):
        g = got[j] if j < len(got) else float("nan")
        excess = abs(g - value) - want.slack
        if excess != excess:  # a NaN fingerprint (max() would drop it)
            squares.append(math.inf)
        elif excess <= 0.0:
            squares.append(0.0)
        else:
            squares.append((excess / want.scale) ** 2 if want.scale > 0 else math.inf)
    return squares


def threshold(m: int) -> float:
    """The largest mean of ``m`` squared deviations an audit passes.

    With ``z_j`` sub-Gaussian (proxy 1) and independent, ``E exp(z^2/4) <= sqrt(2)``, so
    ``P(sum z_j^2 > m tau) <= exp(-m tau / 4) 2^(m/2)``; ``tau`` makes that ``exp(-20.7)``.
    """
    return (FALSE_ALARM_LOG + 0.5 * m * math.log(2.0)) / (0.25 * max(m, 1))
