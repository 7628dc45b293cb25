"""Fingerprints of timed calls' outputs, checked on calls the judge draws after the run.

The judge used to check only the outputs of a few timed calls (the kept calls), chosen before
the run. The choice sits in the timer's locals in the candidate's process, and a forward can
read it (``PEEK_AT_KEPT_CALLS`` in ``tests/verify/test_adversarial.py``) and compute only those
calls. With an audit, the host also returns a fingerprint of *every* timed call's outputs,
computed outside the events: the sum of ``w_i * out_i`` in float64, with weights ``w_i`` in
[0, 1) hashed from the element's position and the run's seed. Only after the reply does the
judge draw the calls it verifies. For each, it rebuilds the call's inputs, runs the reference
and computes the reference's fingerprint. An output within the element test of
:func:`upskills.verify.compare.compare_tensors` (``|out_i - ref_i| <= atol + rtol |ref_i|``)
differs from it by at most ``sum w_i (atol + rtol |ref_i|)``: the bound. A forward that skipped
a fraction f of the calls escapes k verified calls with probability about (1 - f)^k. It cannot
fake a fingerprint without the output.
"""

from __future__ import annotations

import math
from typing import Any

CHUNK = 1 << 24
"""Elements fingerprinted at once (float64 temporaries of this size)."""
_M1 = 0xD6E8FEB86659FD93 - (1 << 64)  # odd 64-bit multipliers (as signed int64)
_M2 = 0xA0761D6478BD642F - (1 << 64)
_LOW32 = 0xFFFFFFFF
_BITS = 23
ROUNDING = 1e-9
"""Slack for float64 summation, relative to ``sum w_i |ref_i|``."""


def _salt(seed: int, k: int) -> int:
    s = (seed * 0x9FB21C651E98DF25 + k * 0xC2B2AE3D27D4EB4F + 1) & ((1 << 64) - 1)
    return s - (1 << 64) if s >= 1 << 63 else s


def weights(start: int, stop: int, salt: int, device: Any) -> Any:
    """``w_i`` in [0, 1) for positions ``start..stop-1``: an integer hash of ``i`` and ``salt``."""
    import torch

    h = torch.arange(start, stop, device=device, dtype=torch.int64)
    h.mul_(_M1).add_(salt)  # int64 arithmetic wraps around
    h.bitwise_xor_(torch.bitwise_right_shift(h, 31).bitwise_and_(_LOW32))
    h.mul_(_M2)
    h.bitwise_xor_(torch.bitwise_right_shift(h, 29).bitwise_and_((1 << 35) - 1))
    u = torch.bitwise_right_shift(h, 64 - 1 - _BITS).bitwise_and_((1 << _BITS) - 1)
    return u.to(torch.float64).mul_(1.0 / (1 << _BITS))


def _same(x: Any) -> Any:
    return x


def _size(x: Any) -> Any:
    return x.abs()


def _one(x: Any) -> Any:
    return x.new_ones(())


def _sums(tensor: Any, salt: int, weight_of: Any) -> Any:
    """``sum w_i * weight_of(x_i)`` in float64, over ``CHUNK`` slices (a 0-d tensor, no sync)."""
    import torch

    flat = tensor.reshape(-1)
    acc = torch.zeros((), dtype=torch.float64, device=tensor.device)
    for a in range(0, flat.numel(), CHUNK):
        b = min(flat.numel(), a + CHUNK)
        acc += (weight_of(flat[a:b].to(torch.float64)) * weights(a, b, salt, tensor.device)).sum()
    return acc


def fingerprints(outputs: list[Any], seed: int) -> Any:
    """One float64 fingerprint per output tensor, on their device (no synchronisation)."""
    import torch

    sums = [_sums(t, _salt(seed, k), _same) for k, t in enumerate(outputs)]
    return torch.stack(sums) if sums else torch.zeros(0, dtype=torch.float64)


def expected(
    refs: list[Any],
    seed: int,
    atol: float | None,
    rtol: float | None,
    matmul: bool,
) -> list[tuple[float, float] | None]:
    """Per reference tensor: ``(its fingerprint, the bound)``, or None where it cannot be told.

    The tolerances are :func:`upskills.verify.compare.compare_tensors`': the task's, else the
    dtype's (atol scaled by the reference's RMS); exact for integers. A reference with a NaN or
    an infinity is not fingerprinted (its sum is not a number).
    """
    import torch

    from upskills.verify.compare import tolerances

    out: list[tuple[float, float] | None] = []
    for k, ref in enumerate(refs):
        if ref.numel() == 0:
            out.append((0.0, 0.0))
            continue
        floating = ref.is_floating_point() or ref.is_complex()
        if floating and not bool(torch.isfinite(ref).all()):
            out.append(None)
            continue
        salt = _salt(seed, k)
        value = float(_sums(ref, salt, _same))
        size = float(_sums(ref, salt, _size))
        if floating:
            base_atol, base_rtol, _ = tolerances(str(ref.dtype).removeprefix("torch."), matmul)
            flat = ref.reshape(-1)
            squares = sum(
                float(flat[a : a + CHUNK].to(torch.float64).square().sum())
                for a in range(0, flat.numel(), CHUNK)
            )
            rms = math.sqrt(squares / flat.numel())
            a = atol if atol is not None else base_atol * (rms if rms > 0 else 1.0)
            r = rtol if rtol is not None else base_rtol
            total = float(_sums(ref, salt, _one))
            bound = a * total + r * size
        else:
            bound = 0.0
        out.append((value, bound + ROUNDING * size + 1e-12))
    return out
