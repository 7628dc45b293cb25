"""What the machine is, in the terms a kernel writer needs (for the agent's system prompt).

Bandwidth is the datasheet figure for known GPUs (looked up by name), else estimated from the
memory clock and bus width when torch reports them, else left out.
"""

from __future__ import annotations

import os
import platform
from typing import Any

DATASHEET_BANDWIDTH_GBS: tuple[tuple[str, float], ...] = (
    ("GB200", 8000.0),
    ("B200", 8000.0),
    ("H200", 4800.0),
    ("H100 PCIe", 2000.0),
    ("H100 NVL", 3900.0),
    ("H100", 3350.0),
    ("H20", 4000.0),
    ("H800", 3350.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100", 1555.0),
    ("A800", 2039.0),
    ("L40S", 864.0),
    ("L40", 864.0),
    ("L4", 300.0),
    ("A10G", 600.0),
    ("A10", 600.0),
    ("T4", 320.0),
    ("V100", 900.0),
    ("RTX 6000 Ada", 960.0),
    ("RTX A6000", 768.0),
    ("RTX 4090", 1008.0),
    ("RTX 3090", 936.0),
)
"""Substring of the GPU name -> datasheet memory bandwidth (GB/s); first match wins."""


def datasheet_bandwidth(name: str) -> float | None:
    """Datasheet bandwidth (GB/s) of a GPU by name, or None if unknown."""
    for key, gbs in DATASHEET_BANDWIDTH_GBS:
        if key.lower() in name.lower():
            return gbs
    return None


def _cpu_description() -> dict[str, Any]:
    mem_gb = None
    try:
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "name": "cpu",
        "processor": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "note": "no GPU: Triton kernels run in Triton's interpreter (correctness only, no timing)",
    }


def describe_local(device: str = "auto") -> dict[str, Any]:
    """Describe ``device`` from this process (imports torch; initialises CUDA for ``cuda``)."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if not device.startswith("cuda"):
        return _cpu_description()
    if not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but torch sees no CUDA GPU")
    cuda: Any = torch.cuda  # get_device_properties returns an untyped object
    props: Any = cuda.get_device_properties(torch.device(device))
    smem = getattr(props, "shared_memory_per_block_optin", None) or getattr(
        props, "shared_memory_per_block", None
    )
    bandwidth = datasheet_bandwidth(props.name)
    source = "datasheet"
    clock_khz = getattr(props, "memory_clock_rate", None)
    bus_bits = getattr(props, "memory_bus_width", None)
    if bandwidth is None and clock_khz and bus_bits:
        bandwidth = round(2 * clock_khz * 1e3 * bus_bits / 8 / 1e9, 1)
        source = "clock x bus width"
    l2 = getattr(props, "L2_cache_size", None)
    return {
        "name": props.name,
        "sm_count": props.multi_processor_count,
        "memory_gb": round(props.total_memory / 2**30, 1),
        "bandwidth_gbs": bandwidth,
        "bandwidth_source": source if bandwidth is not None else "unknown",
        "smem_per_block_kb": round(smem / 1024, 1) if smem else None,
        "l2_cache_mb": round(l2 / 2**20, 1) if l2 else None,
        "compute_capability": f"{props.major}.{props.minor}",
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
    }


def describe_hardware(device: str = "auto") -> dict[str, Any]:
    """Describe the machine a kernel will run on, for the agent's system prompt.

    Args:
        device: ``auto``, ``cpu`` or ``cuda`` (``cuda:N`` for a specific GPU).

    Returns:
        On CUDA: ``name``, ``sm_count``, ``memory_gb``, ``bandwidth_gbs`` (datasheet, or from
        clock and bus width), ``smem_per_block_kb``, ``l2_cache_mb``, ``compute_capability``.
        On CPU: ``{"name": "cpu", "cores": ..., "memory_gb": ..., "note": ...}``.
    """
    return describe_local(device)
