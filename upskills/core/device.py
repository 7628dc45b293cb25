"""Device resolution: what ``--device auto|cpu|cuda[:N]`` means, in one place."""

from __future__ import annotations

DEVICES = ("auto", "cpu", "cuda")
"""Device names accepted (``cuda:N`` is accepted as ``cuda``)."""


def resolve_device(device: str) -> str:
    """Resolve a device request to ``cpu`` or ``cuda``.

    Args:
        device: ``auto`` (``cuda`` when torch sees a GPU, else ``cpu``; ``cpu`` when torch is
            not installed), ``cpu``, ``cuda`` or ``cuda:N``.

    Returns:
        ``"cpu"`` or ``"cuda"``.

    Raises:
        ValueError: an unknown device, or ``cuda`` when torch is missing or sees no GPU.
    """
    kind = "cuda" if device.startswith("cuda:") else device
    if kind not in DEVICES:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', not {device!r}")
    if kind == "cpu":
        return kind
    try:
        import torch
    except ImportError as exc:
        if kind == "auto":
            return "cpu"
        raise ValueError("device 'cuda' needs torch: pip install 'upskills[kernels]'") from exc
    available = bool(torch.cuda.is_available())
    if kind == "cuda" and not available:
        raise ValueError("device 'cuda' requested but torch sees no CUDA GPU; use --device cpu")
    return "cuda" if available else "cpu"
