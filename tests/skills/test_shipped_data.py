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


def _templates() -> list[tuple[str, str, Path]]:
    """(task, trace id, script) of every shipped template, one per task."""
    seen: dict[str, tuple[str, Path]] = {}
    if not SKILLS.is_dir():
        return []
    for prov_path in sorted(SKILLS.glob("*/references/provenance.json")):
        for ref in json.loads(prov_path.read_text())["templates"]:
            seen.setdefault(ref["task"], (ref["trace_id"], prov_path.parents[1] / ref["file"]))
    return sorted((task, tid, path) for task, (tid, path) in seen.items())


def _needs_cuda(source: str) -> bool:
    return "load_inline" in source


def _task_of(trace_id: str):
    """The task a trace solved, as its session recorded it (KernelBench tasks included)."""
    from upskills.tasks import Task, builtin_names, load_task

    trace = read_trace(_trace_index()[trace_id])
    name = trace.events[0].task
    if name in builtin_names():
        return load_task(name)
    state = json.loads((_trace_index()[trace_id].parent / "state.json").read_text())
    return Task.model_validate(state["task"])


_IDS = {"ids": lambda v: str(getattr(v, "name", v))}


@pytest.mark.parametrize(("task", "trace_id", "path"), _templates(), **_IDS)
def test_every_template_is_a_kernel_its_trace_saw_pass(task: str, trace_id: str, path: Path):
    """Byte for byte the source of a passing verdict in the cited trace, under a comment header
    (checks any kernel on CPU; a CUDA one is run on the GPU by the test below)."""
    from upskills.trace.events import ToolResult

    trace = read_trace(_trace_index()[trace_id])
    source = path.read_text()

    def is_this(kernel: str) -> bool:
        header = source[: len(source) - len(kernel)].splitlines()
        return source.endswith(kernel) and all(line.startswith("# ") for line in header)

    passed = [
        e.verdict
        for e in trace.events
        if isinstance(e, ToolResult) and e.verdict and e.verdict.passed and e.kernel_source
        if is_this(e.kernel_source)
    ]
    assert passed, f"{path.name} is not a kernel that passed in trace {trace_id}"
    assert all(v.task == task for v in passed)


def _cpu_templates() -> list[tuple[str, str, Path]]:
    from upskills.tasks import builtin_names

    names = set(builtin_names())
    return [t for t in _templates() if t[0] in names and not _needs_cuda(t[2].read_text())]


@pytest.mark.parametrize(("task", "trace_id", "path"), _cpu_templates(), **_IDS)
def test_triton_templates_pass_the_verifier_on_cpu(task, trace_id, path, cpu_verifier) -> None:
    from upskills.verify import CheckOptions

    verdict = cpu_verifier.check(task, path, options=CheckOptions(seeds=1, timing=False))
    assert verdict.passed, verdict.message


@pytest.mark.gpu
@pytest.mark.parametrize(("task", "trace_id", "path"), _templates(), **_IDS)
def test_every_template_passes_the_verifier_on_cuda(task, trace_id, path) -> None:
    """CUDA (``load_inline``) and KernelBench templates need the GPU they were verified on."""
    from upskills.verify import CheckOptions, Verifier

    with Verifier(device="cuda") as verifier:
        options = CheckOptions(seeds=1, timing=False)
        verdict = verifier.check(_task_of(trace_id), path, options=options)
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
