"""Known-good and known-bad Triton kernels, judged by the real verifier.

``good/<task>.py`` is a hand-written, correct candidate for the built-in task ``<task>``;
``bad/<task>__<flaw>.py`` carries one realistic flaw and declares the error class the verifier
must give it (``EXPECTED_ERROR``: a class name or a tuple of accepted ones where the outcome
depends on memory contents; ``EXPECTED_ERROR_CUDA`` overrides it on a GPU). On CPU every kernel
runs in Triton's interpreter (correctness only: 2 seeds for good kernels, 1 for bad ones); the
``gpu`` tests run the same files on CUDA and record the good kernels' speedups (see
``kernel_report.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.kernels.kernel_report import REPORT_ENV, append_row, format_table
from upskills.tasks import builtin_names, load_task
from upskills.verify import CheckOptions, ErrorClass, Verifier
from upskills.verify.verdict import Verdict

HERE = Path(__file__).parent
GOOD = sorted((HERE / "good").glob("*.py"))
BAD = sorted((HERE / "bad").glob("*.py"))

CPU_OPTIONS = CheckOptions(seeds=2, timing=False, baselines=False, timeout_s=300)
"""Good kernels on CPU: two seeds on every CPU variant."""
CPU_BAD_OPTIONS = CheckOptions(seeds=1, timing=False, baselines=False, timeout_s=300)
"""Bad kernels on CPU: one seed suffices, every flaw here shows on any input (see each file)."""
GPU_OPTIONS = CheckOptions(seeds=2, timing=True, baselines=True, timeout_s=600)
"""Good kernels on CUDA: correctness on every variant, then timing and baselines."""
GPU_BAD_OPTIONS = CheckOptions(seeds=2, timing=False, baselines=False, timeout_s=600)
"""Bad kernels on CUDA: correctness only."""


def task_of(path: Path) -> str:
    """The task a kernel file is written for: its stem up to ``__``."""
    return path.stem.split("__")[0]


def expected_errors(path: Path, device: str = "cpu") -> set[str]:
    """Error classes a bad kernel may get, read from its module constants without importing it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.startswith("EXPECTED_ERROR"):
                found[target.id] = ast.literal_eval(node.value)
    value = found.get("EXPECTED_ERROR_CUDA") if device == "cuda" else None
    value = value if value is not None else found.get("EXPECTED_ERROR")
    if value is None:
        raise AssertionError(f"{path}: no module-level EXPECTED_ERROR = '<error class>'")
    return {value} if isinstance(value, str) else set(value)  # type: ignore[arg-type]


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


# --- the suite itself ---------------------------------------------------------------------


def test_suite_covers_at_least_14_tasks_across_categories() -> None:
    good_tasks = {task_of(p) for p in GOOD}
    assert len(good_tasks) >= 14, sorted(good_tasks)
    unknown = good_tasks | {task_of(p) for p in BAD}
    unknown -= set(builtin_names())
    assert not unknown, f"kernel files for tasks that are not built in: {sorted(unknown)}"
    tags = {tag for name in good_tasks for tag in load_task(name).tags}
    wanted = {"elementwise", "reduction", "norm", "softmax", "transpose", "gemm", "attention"}
    wanted |= {"conv", "scan", "atomics", "gather", "copy", "loss", "fusion"}
    assert wanted <= tags, f"categories without a known-good kernel: {sorted(wanted - tags)}"


def test_every_good_kernel_has_a_bad_twin_and_vice_versa() -> None:
    good_tasks = {task_of(p) for p in GOOD}
    bad_tasks = {task_of(p) for p in BAD}
    assert good_tasks == bad_tasks, {
        "good without bad": sorted(good_tasks - bad_tasks),
        "bad without good": sorted(bad_tasks - good_tasks),
    }
    for path in BAD:
        assert "__" in path.stem and path.stem.split("__", 1)[1], f"{path.name}: name the flaw"


@pytest.mark.parametrize("path", BAD, ids=_ids(BAD))
def test_bad_kernel_declares_a_known_error_class(path: Path) -> None:
    known = {e.value for e in ErrorClass}
    for device in ("cpu", "cuda"):
        expected = expected_errors(path, device)
        assert expected and expected <= known, f"{path.name}: {expected} not in {sorted(known)}"


def test_expected_errors_reads_strings_tuples_and_cuda_override(tmp_path: Path) -> None:
    one = tmp_path / "a.py"
    one.write_text('EXPECTED_ERROR = "mismatch"\n')
    several = tmp_path / "b.py"
    several.write_text('EXPECTED_ERROR = ("mismatch", "nan")\nEXPECTED_ERROR_CUDA = "crash"\n')
    missing = tmp_path / "c.py"
    missing.write_text("X = 1\n")
    assert expected_errors(one) == {"mismatch"}
    assert expected_errors(one, "cuda") == {"mismatch"}
    assert expected_errors(several) == {"mismatch", "nan"}
    assert expected_errors(several, "cuda") == {"crash"}
    with pytest.raises(AssertionError, match="c.py: no module-level EXPECTED_ERROR"):
        expected_errors(missing)


def test_report_rows_append_as_json_lines_and_tabulate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    target = tmp_path / "out" / "kernels.jsonl"
    monkeypatch.setenv(REPORT_ENV, str(target))
    rows: list[dict[str, object]] = []
    first = {"task": "relu", "kernel": "relu", "median_ms": 0.5, "speedup_eager": 2.0}
    second = {"task": "gemm_fp16", "kernel": "gemm_fp16", "median_ms": 1.25, "speedup_eager": None}
    assert append_row(first, rows) == target
    append_row(second, rows)
    lines = target.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [first, second]
    table = format_table(rows).splitlines()
    assert table[0].split()[:2] == ["kernel", "median_ms"]
    assert table[1].split()[:2] == ["relu", "0.5000"] and "2.00" in table[1].split()
    assert table[2].split()[:2] == ["gemm_fp16", "1.2500"] and "2.00" not in table[2]
    monkeypatch.delenv(REPORT_ENV)
    assert append_row(first, rows) is None and len(target.read_text().splitlines()) == 2


# --- CPU: Triton interpreter ------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_verifier():
    with Verifier("cpu", CPU_OPTIONS) as verifier:
        yield verifier


def _cpu_trials(task_name: str) -> set[tuple[str, int]]:
    """(variant, trial index) of a CPU check: the CPU variants and one shape drawn at random."""
    variants = [v.name for v in load_task(task_name).all_variants() if v.cpu] + ["random"]
    return {(v, s) for v in variants for s in range(CPU_OPTIONS.seeds)}


@pytest.mark.parametrize("path", GOOD, ids=_ids(GOOD))
def test_good_kernel_passes_on_cpu(cpu_verifier: Verifier, path: Path) -> None:
    verdict = cpu_verifier.check(task_of(path), path)
    assert verdict.passed, (
        f"{path.name}: {verdict.error_class} at {verdict.stage}: {verdict.message}"
    )
    assert verdict.error_class is None
    assert verdict.device == "cpu" and verdict.timing_status == "unavailable"
    trials = {(r.variant, r.seed) for r in verdict.variants}
    assert len(trials) == len(_cpu_trials(task_of(path))), trials
    assert all(r.shape for r in verdict.variants if r.variant == "random")
    assert all(r.passed for r in verdict.variants)
    assert any(r.variant == "ragged" for r in verdict.variants), "the ragged variant must be run"


@pytest.mark.parametrize("path", BAD, ids=_ids(BAD))
def test_bad_kernel_fails_on_cpu_with_its_error_class(cpu_verifier: Verifier, path: Path) -> None:
    verdict = cpu_verifier.check(task_of(path), path, CPU_BAD_OPTIONS)
    expected = expected_errors(path, "cpu")
    assert not verdict.passed, f"{path.name}: the flaw went unnoticed on CPU"
    assert verdict.error_class is not None
    assert verdict.error_class.value in expected, (
        f"{path.name}: got {verdict.error_class.value} ({verdict.message}), expected {expected}"
    )
    # The flaw is in the kernel's numbers, not an import problem (or, for a race the CPU cannot
    # show, the static race check).
    if verdict.error_class.value == "guard":
        assert verdict.guard == "race", verdict.message
    else:
        assert verdict.stage == "correctness", verdict.message


# --- GPU: the same files on CUDA, with timings --------------------------------------------


@pytest.fixture(scope="module")
def cuda_verifier():
    with Verifier("cuda", GPU_OPTIONS) as verifier:
        yield verifier


def _timing_row(path: Path, verdict: Verdict) -> dict[str, object]:
    assert verdict.timing is not None
    eager = verdict.baselines.get("eager")
    compiled = verdict.baselines.get("compile")
    return {
        "task": task_of(path),
        "kernel": path.stem,
        "gpu": verdict.gpu,
        "median_ms": verdict.timing.median_ms,
        "p10_ms": verdict.timing.p10_ms,
        "p90_ms": verdict.timing.p90_ms,
        "spread": verdict.timing.spread,
        "reps": verdict.timing.reps,
        "eager_ms": eager.median_ms if eager else None,
        "compile_ms": compiled.median_ms if compiled else None,
        "speedup_eager": verdict.speedup_eager,
        "speedup_compile": verdict.speedup_compile,
        "task_hash": verdict.task_hash,
        "candidate_hash": verdict.candidate_hash,
        "torch": verdict.env.get("torch"),
        "triton": verdict.env.get("triton"),
    }


def test_timing_row_carries_the_verdicts_numbers() -> None:
    from upskills.verify import Timing

    def timing(ms: float) -> Timing:
        return Timing(
            median_ms=ms, p10_ms=ms * 0.9, p90_ms=ms * 1.1, mean_ms=ms, reps=50, spread=0.2
        )

    verdict = Verdict(
        task="gemm_fp16",
        task_hash="t" * 16,
        candidate_hash="c" * 16,
        device="cuda",
        gpu="NVIDIA H200",
        passed=True,
        timing_status="measured",
        timing=timing(0.5),
        baselines={"eager": timing(0.6), "compile": timing(0.4)},
        speedup_eager=1.2,
        speedup_compile=0.8,
        env={"torch": "2.11.0", "triton": "3.6.0"},
    )
    row = _timing_row(HERE / "good" / "gemm_fp16.py", verdict)
    assert row["task"] == "gemm_fp16" and row["gpu"] == "NVIDIA H200"
    assert (row["median_ms"], row["eager_ms"], row["compile_ms"]) == (0.5, 0.6, 0.4)
    assert (row["speedup_eager"], row["speedup_compile"]) == (1.2, 0.8)
    assert row["triton"] == "3.6.0" and row["reps"] == 50


@pytest.mark.gpu
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("path", GOOD, ids=_ids(GOOD))
def test_good_kernel_passes_on_cuda_and_is_timed(
    cuda_verifier: Verifier, path: Path, kernel_report
) -> None:
    verdict = cuda_verifier.check(task_of(path), path)
    assert verdict.passed, (
        f"{path.name}: {verdict.error_class} at {verdict.stage}: {verdict.message}"
    )
    assert any(r.variant == "main" for r in verdict.variants), "the main variant must be checked"
    assert verdict.timing_status == "measured" and verdict.timing is not None
    assert verdict.timing.median_ms > 0
    assert verdict.speedup_eager is not None and verdict.speedup_eager > 0
    row = _timing_row(path, verdict)
    kernel_report(row)
    print(
        f"{path.stem}: {row['median_ms']:.4f} ms, {verdict.speedup_eager:.2f}x eager, "
        f"{verdict.speedup_compile or float('nan'):.2f}x compile"
    )


@pytest.mark.gpu
@pytest.mark.parametrize("path", BAD, ids=_ids(BAD))
def test_bad_kernel_fails_on_cuda_with_its_error_class(cuda_verifier: Verifier, path: Path) -> None:
    verdict = cuda_verifier.check(task_of(path), path, GPU_BAD_OPTIONS)
    expected = expected_errors(path, "cuda")
    assert not verdict.passed, f"{path.name}: the flaw went unnoticed on CUDA"
    assert verdict.error_class is not None and verdict.error_class.value in expected, (
        f"{path.name}: got {verdict.error_class} ({verdict.message}), expected {expected}"
    )
