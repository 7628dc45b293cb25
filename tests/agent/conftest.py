"""A warm CPU verifier shared by the agent tests (its worker takes seconds to start)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="package")
def cpu_verifier() -> Iterator[object]:
    from upskills.verify import CheckOptions, Verifier

    with Verifier("cpu", CheckOptions(seeds=1)) as verifier:
        yield verifier
