"""The interface rule read from the sources, before anything is imported or compiled."""

from __future__ import annotations

import ast

import pytest

from upskills.tasks.model import Task
from upskills.verify.interface import static_interface_issue
from upskills.verify.verdict import ErrorClass

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


batch_size = 4
dim = 64


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
"""

CUDA_CANDIDATE = """import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_ext = load_inline(name="never_built", cpp_sources="torch::Tensor f(torch::Tensor x);",
                   cuda_sources="#error this is never compiled", functions=["f"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.f(x)
"""


def issue(candidate: str) -> str | None:
    return static_interface_issue(ast.parse(candidate), REFERENCE, "candidate.py")


def test_a_cuda_kernel_missing_a_constructor_argument_fails_before_it_is_built(cpu_verifier):
    """Round 11's 24_LogSoftmax-s5: on a machine without CUDA the import would fail first and
    hide the real mistake; the source check names it before anything is imported."""
    task = Task(
        name="log_softmax_dim",
        statement="log-softmax",
        tags=["softmax"],
        dtypes=["float32"],
        source=REFERENCE,
    )
    v = cpu_verifier.check(task, CUDA_CANDIDATE)
    assert (v.error_class, v.stage) == (ErrorClass.INTERFACE, "interface")
    line = CUDA_CANDIDATE.splitlines().index("class ModelNew(nn.Module):") + 1
    assert v.message == (
        f"candidate.py:{line}: ModelNew.__init__(self) does not match "
        "Model.__init__(self, dim: int = 1): missing parameter 'dim'"
    )
    fixed = CUDA_CANDIDATE.replace("def __init__(self):", "def __init__(self, dim: int = 1):")
    v = cpu_verifier.check(task, fixed)
    assert (v.error_class, v.stage) == (
        ErrorClass.IMPORT,
        "import",
    )  # now it gets as far as the build


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ("def forward(self, x: torch.Tensor)", "def forward(self, y: torch.Tensor)"),
            "parameter 1 is 'y', expected 'x'",
        ),
        (
            ("def __init__(self, dim=1):", "def __init__(self, dim, block):"),
            "extra parameter 'block' has no default",
        ),
        (("def forward(self, x: torch.Tensor)", "def forward(self)"), "missing parameter 'x'"),
    ],
)
def test_each_mismatch_is_named(change, problem):
    fixed = CUDA_CANDIDATE.replace("def __init__(self):", "def __init__(self, dim=1):")
    assert issue(fixed) is None
    wrong = issue(fixed.replace(*change))
    assert wrong is not None and wrong.endswith(problem)


@pytest.mark.parametrize(
    "candidate",
    [
        # the constructor takes anything
        CUDA_CANDIDATE.replace("def __init__(self):", "def __init__(self, *args, **kwargs):"),
        # ModelNew is rebound after its class: only the imported class can tell
        CUDA_CANDIDATE + "\n\nModelNew = type('ModelNew', (ModelNew,), {})\n",
        # a decorated constructor may have any signature once decorated
        CUDA_CANDIDATE.replace(
            "    def __init__(self):", "    @staticmethod\n    def __init__(self):"
        ),
        # the constructor is rebound in the class body after its def
        CUDA_CANDIDATE.replace(
            "    def forward(", "    __init__ = nn.Module.__init__\n\n    def forward("
        ),
        # no class statement at all (made by a factory)
        CUDA_CANDIDATE.replace("class ModelNew(nn.Module):", "class _Base(nn.Module):")
        + "\n\nModelNew = _Base\n",
    ],
)
def test_what_the_sources_cannot_tell_is_left_to_the_imported_classes(candidate):
    assert issue(candidate) is None
