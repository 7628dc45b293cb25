"""Per-call perturbation of timing inputs: every timed call sees inputs no earlier call saw.

Timed calls rotate through a few input sets, so a forward that caches its output keyed by some
input values (a few elements, their ratios, their signs; on the host or in a kernel that copies
the cached result instead of computing) would be timed on cache hits. Before each timed call,
after its set is loaded and before the L2 flush, every floating-point element of the inputs is
multiplied by a factor in ``[1 - SPAN, 1]`` that is a hash of the element's value and the
judge's seed for that call: no key short of the whole input can hit, and a stale result is
wrong for the inputs it is returned for. The judge rebuilds the kept calls' inputs with the same
seeds and checks their outputs against references of exactly those inputs.

The factor depends on the value, not on the position, so equal values stay equal: a symmetric
matrix stays symmetric, a triangular one keeps its zeros, a one-hot or +-1 tensor keeps its
pattern, and a kernel entitled to such structure by its task is not failed for using it. Factors
below 1 keep signs, zeros, infinities and NaNs, and keep a value inside any domain that holds
every number between 0 and each of its members (a probability stays a probability, a positive
input stays positive); a domain bounded away from 0 (``x > 1``) or an order between different
values (a sorted input) is not kept. Integer and boolean tensors (indices, targets, masks) are
left as they are. Only integer arithmetic makes the factors, so the same seed gives the same
inputs in any process on the same device.
"""

from __future__ import annotations

import sys
from typing import Any, cast

SPAN = 0.25
"""Each factor lies in ``[1 - SPAN, 1]``: wide enough to move fp16/bf16 values."""
CHUNK = 1 << 24
"""Elements perturbed at once: an 8 GiB input needs no 8 GiB of temporaries."""

_M1 = 0x9E3779B97F4A7C15 - (1 << 64)  # odd 64-bit multipliers (as signed int64)
_M2 = 0xBF58476D1CE4E5B9 - (1 << 64)
_LOW32 = 0xFFFFFFFF
_BITS = 24  # the factor's resolution: 2**-24 of SPAN


def perturb_inputs(values: list[Any], seed: int) -> None:
    """Multiply every floating-point element of the (nested) tensors in place by its factor.

    On a GPU, a contiguous tensor of 2, 4 or 8-byte floats is perturbed by one Triton kernel
    (one read and one write of each element) with the same integer hash and the same roundings
    as the PyTorch ops below, which take ~15 passes over an int64 copy (4.7 ms a call for a
    256 MiB input on the H200, most of a check's timing stage).
    """
    import torch

    for k, tensor in enumerate(_float_tensors(values)):
        salt = _salt(seed, k)
        with torch.no_grad():
            fusable = tensor.is_cuda and tensor.is_contiguous() and tensor.element_size() > 1
            if fusable and _try_fused(tensor, salt):
                continue
            if not tensor.is_contiguous():
                tensor.mul_(_factors(tensor, salt))
                continue
            flat = tensor.view(-1)
            for start in range(0, flat.numel(), CHUNK):
                part = flat[start : start + CHUNK]
                part.mul_(_factors(part, salt))


def _salt(seed: int, k: int) -> int:
    """The call's seed for the k-th float tensor, as a signed int64."""
    s = (seed * 0x2545F4914F6CDD1D + k * 0x632BE59BD9B4E019 + 1) & ((1 << 64) - 1)
    return s - (1 << 64) if s >= 1 << 63 else s


def _factors(tensor: Any, salt: int) -> Any:
    """``1 - SPAN * u``, u in [0, 1) a hash of each element's bits and ``salt`` (fp32)."""
    import torch

    same_size = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    # a copy: for 8-byte floats the int64 view *is* the tensor, and the hash below is in place
    # (until 2026-12-03 it overwrote float64 inputs with their hash)
    h = tensor.view(same_size[tensor.element_size()]).to(torch.int64, copy=True)
    h.mul_(_M1).add_(salt)  # int64 arithmetic wraps around
    h.bitwise_xor_(torch.bitwise_right_shift(h, 31).bitwise_and_(_LOW32))
    h.mul_(_M2)
    h.bitwise_xor_(torch.bitwise_right_shift(h, 29).bitwise_and_((1 << 35) - 1))
    u = torch.bitwise_right_shift(h, 64 - 1 - _BITS).bitwise_and_((1 << _BITS) - 1)
    return u.to(torch.float32).mul_(-SPAN / (1 << _BITS)).add_(1.0)


def _float_tensors(values: Any) -> list[Any]:
    import torch

    if isinstance(values, torch.Tensor):
        return [values] if values.is_floating_point() and values.numel() > 0 else []
    if isinstance(values, list | tuple):
        seq = cast("list[Any] | tuple[Any, ...]", values)
        return [t for v in seq for t in _float_tensors(v)]
    return []


FUSED_BLOCK = 4096
"""Elements per program of the fused kernel."""
_fused_failed: list[str] = []
"""Why the fused kernel failed in this process, once it has (the PyTorch ops then serve)."""


def _try_fused(tensor: Any, salt: int) -> bool:
    """Perturb with the fused kernel; False (tensor untouched) when it cannot run here.

    A kernel that fails to compile or launch fails before writing, and the PyTorch ops give the
    same bits, so a process without a working Triton still perturbs exactly as the judge does.
    """
    if _fused_failed:
        return False
    try:
        fused_perturb(tensor, salt)
    except Exception as exc:  # noqa: BLE001 - any Triton failure: the PyTorch path instead
        _fused_failed.append(f"{type(exc).__name__}: {exc}")
        print(
            f"upskills: the fused perturbation kernel failed ({_fused_failed[0][:200]}); "
            "perturbing with PyTorch ops instead",
            file=sys.stderr,
        )
        return False
    return True


def fused_perturb(tensor: Any, salt: int) -> None:
    """Perturb a contiguous float tensor in place in one Triton kernel.

    Any device Triton runs on (a GPU, or the interpreter on CPU); the same values as the
    PyTorch path.
    """
    import torch

    same_size = {2: torch.int16, 4: torch.int32, 8: torch.int64}
    flat = tensor.view(-1)
    n = flat.numel()
    if n == 0:
        return
    bits = flat.view(same_size[tensor.element_size()])
    grid = (-(-n // FUSED_BLOCK),)
    scale = -SPAN / (1 << _BITS)
    from upskills.verify.perturb_kernel import fused_kernel

    fused_kernel()[grid](flat, bits, n, salt, _M1, _M2, scale, BLOCK=FUSED_BLOCK)
