"""The suite's verifiers never read or write the user's baseline cache (see tests/conftest.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


def test_the_suite_cache_is_deep_under_pytests_temporary_folder(
    tmp_path_factory: pytest.TempPathFactory,
):
    from upskills.verify.baselines import user_cache_path

    cache = user_cache_path().resolve()
    assert Path(os.environ["UPSKILLS_CACHE_DIR"]).resolve() == cache.parent
    assert tmp_path_factory.getbasetemp().resolve() in cache.parents
    # deeper than the catalogue's attacks look ($TMPDIR/*/baselines.json, $TMPDIR/upskills-*/*)
    tmp = Path(tempfile.gettempdir()).resolve()
    if tmp in cache.parents:
        assert len(cache.relative_to(tmp).parts) >= 4
        assert not cache.relative_to(tmp).parts[0].startswith("upskills-")
