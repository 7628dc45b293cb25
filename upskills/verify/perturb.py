"""Per-call perturbation of timing inputs: every timed call sees inputs no earlier call saw.

Timed calls rotate through a few input sets, so a forward that caches its output keyed by some
input values (a few elements, their ratios, their signs; on the host or in a kernel that copies
the cached result instead of computing) would be timed on cache hits. Before each timed call,
after its set is loaded and before the L2 flush, every floating-point element of the inputs is
multiplied by its own factor in ``(1 - SPAN, 1]``, drawn from a generator seeded by the judge
for that call: no key short of the whole input can hit, and a stale result is wrong for the
inputs it is returned for. The judge rebuilds the kept calls' inputs with the same seeds and
checks their outputs against references of exactly those inputs.

Factors below 1 keep signs and zeros, and keep a value inside any domain that holds every
number between 0 and each of its members (a probability stays a probability, a positive input
stays positive); a domain bounded away from 0 (``x > 1``) is not kept. Integer and boolean tensors
(indices, targets, masks) are left as they are. The same seed on the same device gives the same
factors in any process (torch's Philox generator, drawn in the same chunks).
"""

from __future__ import annotations

from typing import Any, cast

SPAN = 0.25
"""Each factor is drawn from ``(1 - SPAN, 1]``: wide enough to move fp16/bf16 values."""
CHUNK = 1 << 24
"""Elements drawn at once (64 MiB of fp32 factors): an 8 GiB input needs no 8 GiB of factors."""


def perturb_inputs(values: list[Any], seed: int) -> None:
    """Multiply every floating-point element of the (nested) tensors in place by its factor."""
    import torch

    for k, tensor in enumerate(_float_tensors(values)):
        gen = _generator(tensor.device).manual_seed((seed + 7919 * k) % (1 << 63))
        with torch.no_grad():
            if not tensor.is_contiguous():
                factors = torch.rand(
                    tensor.shape, generator=gen, device=tensor.device, dtype=torch.float32
                )
                tensor.mul_(factors.mul_(-SPAN).add_(1.0))
                continue
            flat = tensor.view(-1)
            for start in range(0, flat.numel(), CHUNK):
                part = flat[start : start + CHUNK]
                factors = torch.rand(
                    part.numel(), generator=gen, device=tensor.device, dtype=torch.float32
                )
                part.mul_(factors.mul_(-SPAN).add_(1.0))


_GENERATORS: dict[Any, Any] = {}


def _generator(device: Any) -> Any:
    """One generator per device, re-seeded for each tensor.

    Cheaper on the host than a new one per call: the perturbation runs before every timed call.
    """
    import torch

    if device not in _GENERATORS:
        _GENERATORS[device] = torch.Generator(device=device)
    return _GENERATORS[device]


def _float_tensors(values: Any) -> list[Any]:
    import torch

    if isinstance(values, torch.Tensor):
        return [values] if values.is_floating_point() and values.numel() > 0 else []
    if isinstance(values, list | tuple):
        seq = cast("list[Any] | tuple[Any, ...]", values)
        return [t for v in seq for t in _float_tensors(v)]
    return []
