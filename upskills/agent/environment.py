"""The machine a run happens on: versions, GPU and git revision, recorded in every trace.

Versions are read from package metadata, so recording them does not import torch or triton;
the hardware description comes from the verifier (``describe_hardware``), which does.
"""

from __future__ import annotations

import platform
import socket
import subprocess
from importlib import metadata
from typing import Any

import upskills


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_revision() -> str | None:
    """The git commit of the working directory's checkout, or None outside a repository."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    rev = proc.stdout.strip()
    return rev if proc.returncode == 0 and rev else None


def hardware(device: str) -> dict[str, Any]:
    """The verifier's description of ``device`` (name, SMs, memory, bandwidth, shared memory).

    Falls back to ``{"name": "unknown", "error": ...}`` if the description cannot be made, so a
    run still starts (and says why the hardware is unknown).
    """
    try:
        from upskills.verify import describe_hardware

        return dict(describe_hardware(device))
    except Exception as exc:  # noqa: BLE001 - a missing GPU stack must not stop a session
        return {"name": "unknown", "error": f"{type(exc).__name__}: {exc}"}


def run_environment(device: str, hw: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything a trace records about where it ran.

    Args:
        device: the verifier device (``auto``, ``cpu``, ``cuda``).
        hw: a hardware description already made (avoids describing twice).

    Returns:
        gpu, hardware, device, torch, triton, python, platform, upskills, git_rev, hostname.
    """
    hw = hw if hw is not None else hardware(device)
    return {
        "gpu": hw.get("name") if hw.get("name") not in (None, "cpu") else None,
        "hardware": hw,
        "device": device,
        "torch": _version("torch"),
        "triton": _version("triton"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "upskills": upskills.__version__,
        "git_rev": git_revision(),
        "hostname": socket.gethostname(),
    }
