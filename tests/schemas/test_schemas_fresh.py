from __future__ import annotations

import pytest

from upskills.schemas import SCHEMA_DIR, SCHEMAS, render


@pytest.mark.parametrize("stem", sorted(SCHEMAS))
def test_committed_schema_is_fresh(stem: str) -> None:
    path = SCHEMA_DIR / f"{stem}.schema.json"
    assert path.exists(), f"{path.name} missing: run python -m upskills.schemas"
    assert path.read_text() == render(SCHEMAS[stem]), (
        f"{path.name} is stale: run python -m upskills.schemas"
    )
