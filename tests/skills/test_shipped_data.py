"""The data the project ships is real and consistent: packs validate, cite traces that exist,
and their kernel templates pass the verifier; the test cases load and name real tasks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from upskills.cases import load_cases
from upskills.skills import load_packs, validate_pack
from upskills.trace import iter_trace_files, read_trace

ROOT = Path(__file__).resolve().parents[2]
SKILLS, TRACES, CASES = ROOT / "skills", ROOT / "traces", ROOT / "testcases"

pytestmark = pytest.mark.skipif(not any(SKILLS.glob("*/SKILL.md")), reason="no shipped skills")


def _trace_index() -> dict[str, Path]:
    index = {}
    for path in iter_trace_files([TRACES]):
        trace = read_trace(path, strict=True)
        assert trace.trace_id is not None
        index[trace.trace_id] = path
    return index


def _packs():
    return sorted(load_packs(SKILLS), key=lambda p: p.name)


def test_every_shipped_pack_validates() -> None:
    packs = _packs()
    assert len(packs) >= 3
    for pack in packs:
        assert validate_pack(pack.path) == [], pack.name


def test_every_pack_cites_traces_that_exist_with_their_hashes() -> None:
    index = _trace_index()
    for pack in _packs():
        prov = json.loads((pack.path / "references" / "provenance.json").read_text())
        assert prov["traces"], pack.name
        for t in prov["traces"]:
            path = index.get(t["trace_id"])
            assert path is not None, f"{pack.name} cites missing trace {t['trace_id']}"
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            assert digest.startswith(t["sha256"]), f"{pack.name}: {path.name} changed since distill"
        for ref in prov["templates"]:
            assert ref["trace_id"] in index and (pack.path / ref["file"]).is_file()


def _templates() -> list[tuple[str, Path]]:
    seen: dict[str, Path] = {}
    if not SKILLS.is_dir():
        return []
    for prov_path in sorted(SKILLS.glob("*/references/provenance.json")):
        for ref in json.loads(prov_path.read_text())["templates"]:
            seen.setdefault(ref["task"], prov_path.parents[1] / ref["file"])
    return sorted(seen.items())


@pytest.mark.parametrize(("task", "path"), _templates(), ids=lambda v: str(getattr(v, "name", v)))
def test_kernel_templates_pass_the_verifier_on_cpu(task: str, path: Path, cpu_verifier) -> None:
    from upskills.verify import CheckOptions

    verdict = cpu_verifier.check(task, path, options=CheckOptions(seeds=1, timing=False))
    assert verdict.passed, verdict.message


def test_shipped_cases_load_and_name_real_tasks() -> None:
    from upskills.tasks import builtin_names

    cases = load_cases(CASES)
    assert len(cases) >= 10
    names = set(builtin_names())
    assert all(c.task in names for c in cases)
    assert {c.split for c in cases} == {"train", "heldout"}


@pytest.fixture(scope="module")
def cpu_verifier():
    from upskills.verify import Verifier

    with Verifier(device="cpu") as verifier:
        yield verifier
