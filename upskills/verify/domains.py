"""Adversarial inputs within a task's declared value domains.

``randn`` inputs hide the bugs that only show at the edges of a domain: a softmax without
max-subtraction overflows on large logits, a norm without eps divides by zero on a row of zeros,
a one-pass variance cancels catastrophically under a large offset. A task declares which of
these its reference defines (``domains:`` in its metadata); the judge draws some trials from each.
Transforms touch floating-point tensors only and keep their dtype.
"""

from __future__ import annotations

from typing import Any, cast

DOMAINS: dict[str, str] = {
    "large": "magnitudes x100 (exp overflows without max-subtraction)",
    "zero_rows": "every 5th row all zeros (norms need eps, means need a count)",
    "offset": "a +1000 offset (one-pass variance cancels)",
    "nonfinite": "a few inf, -inf and NaN elements (they must propagate as the reference does)",
    "tiny": "magnitudes x1e-6 (scale-relative tolerances, denormals in fp16)",
}
"""Domain name -> what it does to floating-point inputs."""


def apply_domain(inputs: list[Any], domain: str, seed: int) -> list[Any]:
    """Transform floating-point input tensors in place for ``domain``; returns ``inputs``."""
    import torch

    if domain not in DOMAINS:
        raise ValueError(f"unknown input domain {domain!r}; known: {', '.join(DOMAINS)}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    for tensor in _float_tensors(inputs):
        with torch.no_grad():
            if domain == "large":
                tensor.mul_(100.0)
            elif domain == "tiny":
                tensor.mul_(1e-6)
            elif domain == "offset":
                tensor.add_(1000.0)
            elif domain == "zero_rows" and tensor.dim() >= 2:
                rows = tensor.reshape(-1, tensor.shape[-1]) if tensor.is_contiguous() else None
                if rows is not None:
                    rows[::5].zero_()
            elif domain == "nonfinite" and tensor.numel() >= 8:
                flat = tensor.view(-1) if tensor.is_contiguous() else None
                if flat is not None:
                    drawn = torch.randint(0, flat.numel(), (3,), generator=gen)
                    picks = cast(list[int], drawn.tolist())  # pyright: ignore[reportUnknownMemberType]
                    for pos, value in zip(
                        picks, (float("inf"), float("-inf"), float("nan")), strict=True
                    ):
                        flat[pos] = value
    return inputs


def _float_tensors(values: list[Any]) -> list[Any]:
    import torch

    out: list[Any] = []
    for value in values:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            out.append(value)
        elif isinstance(value, list | tuple):
            out.extend(_float_tensors(list(cast("list[Any] | tuple[Any, ...]", value))))
    return out
