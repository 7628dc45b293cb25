"""The pre-GPU compile check (benchmarks/corpus_live/nvcc_check.py): a CUDA attempt's sources,
recorded from its load_inline call without building anything, compiled by nvcc for the H200,
with registers and spills read from ptxas and SASS lines counted."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "corpus_live"))

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

# torch's headers make a compile take minutes; the test's kernels need none of them
LIGHT = "#include <cuda_runtime.h>\n"

ATTEMPT = '''
from torch.utils.cpp_extension import load_inline
_CUDA = r"""
__global__ void scale(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { __nanosleep(32); y[i] = a * x[i]; }
}
"""
_ext = load_inline(name="t", cpp_sources="", cuda_sources=_CUDA, functions=[])
'''


def test_an_attempt_is_compiled_and_its_kernels_registers_and_sass_are_read(tmp_path):
    from nvcc_check import check  # pyright: ignore[reportMissingImports]

    [result] = check(ATTEMPT, "a.py", "sm_90a", ["NANOSLEEP", "HMMA"], tmp_path, prelude=LIGHT)
    assert "error" not in result, result
    [kernel] = result["functions"]
    assert "scale" in kernel["function"] and 0 < kernel["registers"] <= 255
    assert kernel["spill_stores"] == kernel["spill_loads"] == 0
    if result["sass"] != "no cuobjdump here":
        assert result["sass"] == {"NANOSLEEP": 1, "HMMA": 0}


def test_a_source_that_does_not_compile_is_reported_not_hidden(tmp_path):
    from nvcc_check import check  # pyright: ignore[reportMissingImports]

    broken = ATTEMPT.replace("y[i] = a * x[i];", "y[i] = a * undeclared;")
    [result] = check(broken, "b.py", "sm_90a", [], tmp_path, prelude=LIGHT)
    assert "functions" not in result
    assert any("undeclared" in line for line in result["error"]), result["error"]


def test_ptxas_lines_are_read_per_function():
    from nvcc_check import ptxas_report  # pyright: ignore[reportMissingImports]

    log = (
        "ptxas info    : Compiling entry function '_Z4kernPf' for 'sm_90a'\n"
        "ptxas info    : Function properties for _Z4kernPf\n"
        "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 128 registers, used 1 barriers\n"
        "ptxas info    : Function properties for _Z5mergev\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    )
    assert ptxas_report(log) == [
        {
            "function": "_Z4kernPf",
            "stack": 8,
            "spill_stores": 4,
            "spill_loads": 12,
            "registers": 128,
        },
        {"function": "_Z5mergev", "stack": 0, "spill_stores": 0, "spill_loads": 0},
    ]
