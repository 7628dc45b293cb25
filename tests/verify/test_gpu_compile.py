"""CPU verdicts compile each interpreted kernel for sm_90: one only the interpreter runs fails.

Each refused kernel here passes every CPU trial without the compile (checked when written);
the honest ones use what the compile has to carry to the compiler process (helpers, a
constexpr global, a tensor method, the library's own ``@jit`` functions, options).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.verify.conftest import GOOD_ADD
from upskills.verify.verdict import ErrorClass

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

"""

RUNTIME_BOUND = (
    PRELUDE
    + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n):
    offs = tl.arange(0, n)  # a runtime bound: the interpreter takes it, Triton's compiler not
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        add_kernel[(1,)](x, y, out, x.numel())
        return out
"""
)

PYTHON_ON_A_BLOCK = GOOD_ADD.replace(
    "    tl.store(out_ptr + offs, x + y, mask=mask)",
    "    x.handle.data[:] = x.handle.data + y.handle.data  # NumPy on the block: interpreter only\n"
    "    tl.store(out_ptr + offs, x, mask=mask)",
)
assert PYTHON_ON_A_BLOCK != GOOD_ADD


@pytest.mark.parametrize("source", [RUNTIME_BOUND, PYTHON_ON_A_BLOCK], ids=["bound", "numpy"])
def test_a_kernel_only_the_interpreter_runs_fails_to_compile(cpu_verifier, add_task, source):
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.COMPILE, v.message
    assert "does not compile for a GPU (sm_90)" in v.message, v.message


def test_an_honest_kernel_still_passes(cpu_verifier, add_task):
    v = cpu_verifier.check(add_task, GOOD_ADD)
    assert v.passed, v.message


COMPILED_HERE = """
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch
import triton
import triton.language as tl
from upskills.verify.gpu_compile import GpuCompileError, SKIPPED, compile_for_gpu

SCALE: tl.constexpr = tl.constexpr(2)


@triton.jit
def helper(a, b):
    return a + b


@triton.jit
def row_sum(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        acc += helper(v, 0.0)
    tl.store(out_ptr + row, acc.sum(axis=0) * SCALE + tl.max(acc, 0) * 0)


@triton.jit
def bad(x_ptr, n):
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))


x = torch.randn(8, 300)
out = torch.empty(8)
for block, warps in ((64, 2), (128, 4)):
    compile_for_gpu(row_sum, (x, out, 300, 300), {"BLOCK": block, "num_warps": warps})
    row_sum[(8,)](x, out, 300, 300, BLOCK=block, num_warps=warps)
    assert torch.allclose(out, 2 * x.sum(1), atol=1e-3)
assert not SKIPPED, SKIPPED
class Box:
    pass


BOX = Box()


@triton.jit
def boxed(x_ptr):
    v = tl.load(x_ptr)
    if BOX is None:
        v = v + 1
    tl.store(x_ptr, v)


compile_for_gpu(boxed, (x,), {})  # a global of the candidate's own class: not carried
assert len(SKIPPED) == 1 and "__main__.Box" in SKIPPED[0], SKIPPED
try:
    compile_for_gpu(bad, (x, 16), {})
except GpuCompileError as exc:
    assert "arange's arguments must be of type tl.constexpr" in str(exc), exc
else:
    raise AssertionError("compiled")
print("checked")
"""


def test_helpers_globals_methods_and_options_reach_the_compiler(tmp_path):
    """An honest kernel with a helper, a constexpr global, a tensor method, the library's own
    ``@jit`` functions and two launch options compiles with nothing skipped, and a refusal
    carries Triton's own message; a kernel naming a global the compiler process cannot be
    given is skipped, not refused."""
    script = tmp_path / "compiled_here.py"
    script.write_text(textwrap.dedent(COMPILED_HERE), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0 and "checked" in done.stdout, done.stderr[-3000:]


def test_the_compiler_process_evaluates_no_annotation_but_a_name(tmp_path, monkeypatch):
    """The server runs a kernel's ``def`` only: an annotation that is an expression of the
    candidate's (here one that would write a file) is taken off, not run; Triton's compiler
    then reads the source itself."""
    from upskills.verify.gpu_compile_server import handle

    monkeypatch.chdir(tmp_path)
    source = "def k(x_ptr, n: open('ran', 'w')):\n    pass\n"
    (tmp_path / "k.py").write_text(source, encoding="utf-8")  # where Triton reads it from
    spec = {"name": "k", "module": "m", "source": source, "filename": str(tmp_path / "k.py")}
    spec["line"] = 1
    functions = {"1": {**spec, "options": {}, "globals": {}}}
    request = {
        "kernel": "1",
        "functions": functions,
        "signature": {"x_ptr": "*fp32", "n": "i32"},
        "constexprs": [],
        "attrs": [],
        "options": {},
    }
    reply = handle(request)
    assert not (tmp_path / "ran").exists(), reply
    assert "skip" not in reply, reply  # it reached Triton's compiler (which refuses the call)
