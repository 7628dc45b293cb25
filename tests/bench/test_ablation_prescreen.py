"""The ablation prescreen (benchmarks/corpus_live/ablation_prescreen.py): it finds the kernels the
ablation still has to judge by the distiller's own walk, and what it records for a kernel that
does not compile is what the GPU run then finds in the cache instead of building it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.distill.tracegen import ROW_SUM_HINTED_TUNED, ROW_SUM_MASKED, verdict, write_trace
from upskills.distill.ablate import AblationCache, kernel_hash
from upskills.distill.changeset import apply_changes, split_changes

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "corpus_live"))


def test_the_kernels_still_to_judge_are_before_after_and_each_change_alone(tmp_path):
    import ablation_prescreen as pre  # pyright: ignore[reportMissingImports]

    write_trace(
        tmp_path / "traces" / "t.jsonl",
        [
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=2.0, gpu="NVIDIA H200")),
            (
                ROW_SUM_HINTED_TUNED,
                verdict(ROW_SUM_HINTED_TUNED, True, speedup=5.0, gpu="NVIDIA H200"),
            ),
        ],
        task_origin="builtin",
    )
    changes = split_changes(ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED)
    alone = [apply_changes(ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, [c]) for c in changes]
    got = pre.pending(tmp_path / "traces", tmp_path / "no-cache.jsonl")
    assert [s for _, _, s in got] == [ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED, *alone]
    assert {t for t, _, _ in got} == {"row_sum"}  # a built-in task by its name
    assert not (tmp_path / "no-cache.jsonl").exists()  # the walk wrote no cache of its own


def test_a_kernel_that_failed_in_its_own_lines_is_found_in_the_cache_by_the_gpu_run(tmp_path):
    import ablation_prescreen as pre  # pyright: ignore[reportMissingImports]

    broken, header, fine = "broken source", "header failure", "compiled source"
    out = tmp_path / "prescreen.jsonl"
    rows = [
        {"kernel_hash": kernel_hash(broken), "compiled": False, "in_kernel": True},
        {"kernel_hash": kernel_hash(header), "compiled": False, "in_kernel": False},
        {"kernel_hash": kernel_hash(fine), "compiled": True, "in_kernel": False},
    ]
    common = {"task": ".kb/KernelBench/level1/40_LayerNorm.py", "task_hash": "th", "units": 1}
    common |= {"nvcc": "release 13.0", "torch_headers": "2.13.0", "seconds": 1.0}
    err = {"error": ['k.cu(3): error: identifier "q" is undefined']}
    out.write_text("".join(json.dumps(common | err | r) + "\n" for r in rows))
    cache = tmp_path / "ablations.jsonl"
    cache.write_text("")
    assert pre.record(out, cache) == 1
    assert pre.record(out, cache) == 0  # already there: not appended twice
    found = AblationCache(cache).lookup("cuda", "th", broken)
    assert found is not None and not found.passed and found.error_class == "compile"
    assert found.judge == pre.JUDGE and found.task == "40_LayerNorm"
    assert "no GPU ran" in found.message and 'identifier "q" is undefined' in found.message
    assert AblationCache(cache).lookup("cuda", "th", header) is None  # left to the GPU run
    assert AblationCache(cache).lookup("cuda", "th", fine) is None
    # a failure the ablation no longer asks for (made for an older split) is not recorded
    other = tmp_path / "other.jsonl"
    other.write_text("")
    assert pre.record(out, other, asked={kernel_hash(fine)}) == 0
    assert pre.record(out, other, asked={kernel_hash(broken)}) == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_nvcc_says_whether_a_unit_compiled_and_where_it_failed(tmp_path):
    import ablation_prescreen as pre  # pyright: ignore[reportMissingImports]

    good = "__global__ void k(float* y) { y[threadIdx.x] = 1.f; }\n"
    bad = "__global__ void k(float* y) { y[threadIdx.x] = q; }\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert pre.compile_unit(good, tmp_path / "a", [], prelude="") == {"compiled": True}
    got = pre.compile_unit(bad, tmp_path / "b", [], prelude="")
    assert got["compiled"] is False and got["in_kernel"] is True
    assert got["error"][0].startswith("k.cu(1): error") and '"q"' in got["error"][0]
