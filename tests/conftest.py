"""Shared pytest setup: opt-in markers.

``gpu`` tests skip where no CUDA device is present; ``slow`` tests (minutes each) run only with
``--run-slow`` or when ``-m`` names them (``-m slow``).
"""

from __future__ import annotations

import functools

import pytest


@functools.cache
def cuda_available() -> bool:
    """True when torch is importable and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--run-slow``: also run tests marked ``slow``."""
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``gpu`` tests without a GPU, and ``slow`` tests unless asked for."""
    run_slow = bool(config.getoption("--run-slow")) or "slow" in (config.getoption("-m") or "")
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run with -m gpu on a GPU machine)")
    skip_slow = pytest.mark.skip(reason="slow: run with --run-slow or -m slow")
    for item in items:
        if "gpu" in item.keywords and not cuda_available():
            item.add_marker(skip_gpu)
        elif "slow" in item.keywords and not run_slow:
            item.add_marker(skip_slow)
