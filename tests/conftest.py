"""Shared pytest setup: opt-in markers, and a cache folder of the suite's own.

``gpu`` tests skip where no CUDA device is present; ``slow`` tests (minutes each) run only with
``--run-slow`` or when ``-m`` names them (``-m slow``).

The adversarial tests run candidates that rewrite whatever cache files they can find (in CUDA
mode a candidate runs as the judge's user). So the suite's verifiers use a baseline/ceiling
cache of their own, deep under pytest's temporary folder, seeded from the user's cache so
nothing is re-measured: no attack of the suite can reach the user's cache, and a verdict never
depends on where the user's cache happens to live.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterator

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


@pytest.fixture(autouse=True, scope="session")
def _suite_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``UPSKILLS_CACHE_DIR`` for the whole session: a copy of the user's cache files."""
    from upskills.verify.baselines import user_cache_path

    source = user_cache_path().parent
    folder = tmp_path_factory.mktemp("suite") / "upskills-cache"
    folder.mkdir()
    for name in ("baselines.json", "ceilings.json"):
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
    before = os.environ.get("UPSKILLS_CACHE_DIR")
    os.environ["UPSKILLS_CACHE_DIR"] = str(folder)
    yield
    if before is None:
        os.environ.pop("UPSKILLS_CACHE_DIR", None)
    else:
        os.environ["UPSKILLS_CACHE_DIR"] = before
