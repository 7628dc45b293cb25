"""Small tasks and candidates for the verifier tests (CPU-interpreter sized)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from upskills.tasks.model import ShapeVariant, Task

VECTOR_ADD_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x + y


N = 4096


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
"""

ROW_SUM_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=-1)


M = 64
N = 256


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
"""

COPY_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.t().contiguous()


M = 33
N = 65


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
"""

GOOD_ADD = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
"""

GOOD_ROW_SUM = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        m, n = x.shape
        out = torch.empty(m, device=x.device, dtype=torch.float32)
        row_sum_kernel[(m,)](x, out, n, x.stride(0), BLOCK=256)
        return out
"""


def make_task(name: str, source: str, variants: list[ShapeVariant]) -> Task:
    """A task built in the test (not a built-in)."""
    return Task(name=name, statement=f"test task {name}", source=source, variants=variants)


@pytest.fixture(scope="session")
def add_task() -> Task:
    return make_task(
        "t_vector_add",
        VECTOR_ADD_REF,
        [
            ShapeVariant(name="main", main=True, cpu=False, globals={"N": 1 << 20}),
            ShapeVariant(name="small", globals={"N": 2048}),
            ShapeVariant(name="ragged", ragged=True, globals={"N": 1003}),
        ],
    )


@pytest.fixture(scope="session")
def row_sum_task() -> Task:
    return make_task(
        "t_row_sum",
        ROW_SUM_REF,
        [
            ShapeVariant(name="small", main=True, globals={"M": 8, "N": 256}),
            ShapeVariant(name="ragged", ragged=True, globals={"M": 5, "N": 301}),
        ],
    )


@pytest.fixture(scope="session")
def transpose_task() -> Task:
    return make_task("t_transpose", COPY_REF, [])


@pytest.fixture
def runtime_guards_only(monkeypatch):
    """The static check out of the way, in this process (where the verifier runs it).

    The cheats that use it reach what they patch by routes the static check has since closed
    (``functools.reduce(getattr, names, obj)``); what their tests pin is the guard that holds
    at run time without it. That the static check refuses them is tested on its own
    (``test_adversarial.py::test_the_static_check_refuses_getattr_passed_as_a_value``).
    """
    import upskills.verify.verifier as verifier_module

    monkeypatch.setattr(verifier_module, "static_guards", lambda tree, display: [])


@pytest.fixture(scope="session")
def cpu_verifier():
    """One warm CPU verifier shared by the tests (each check still forks a fresh child)."""
    from upskills.verify import CheckOptions, Verifier

    with Verifier("cpu", CheckOptions(seeds=2, timeout_s=60)) as verifier:
        yield verifier


SCRIPT_HELPERS = '''
def raised(error, call, *args, **kwargs):
    """The message of the ``error`` that ``call(*args, **kwargs)`` must raise."""
    try:
        call(*args, **kwargs)
    except error as exc:
        return str(exc)
    raise AssertionError(f"{call.__name__} raised no {error.__name__}")
'''
"""Defined at the top of every script :func:`run_checked_script` runs."""


def run_checked_script(folder: Path, source: str) -> None:
    """Run ``source`` as a script in a fresh Python (the checkout on its path); it must print
    ``checked`` and exit 0 (for tests that patch Triton or run it interpreted in-process).
    The script may call ``raised`` (:data:`SCRIPT_HELPERS`)."""
    script = folder / "script.py"
    script.write_text(SCRIPT_HELPERS + textwrap.dedent(source), encoding="utf-8")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0 and "checked" in done.stdout, done.stderr[-3000:]
