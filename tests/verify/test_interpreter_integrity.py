"""A launch runs through the Triton interpreter the verifier installed, or fails as a guard.

Each candidate here compiles a subtraction (wrong on every trial, and compilable for sm_90)
while, through a changed interpreter, its launches run a kernel that adds with NumPy on the
loaded block: each passed the vector add ("correct on 6 trials") before
``interpreter_integrity`` (checked when written).
"""

from __future__ import annotations

import pytest

from tests.verify.conftest import GOOD_ADD, run_checked_script
from tests.verify.test_gpu_compile import PYTHON_ON_A_BLOCK
from upskills.verify.verdict import ErrorClass

pytest.importorskip("triton")


NUMPY_ADD = (  # the vector add's kernel with NumPy on the block, under another name
    PYTHON_ON_A_BLOCK[PYTHON_ON_A_BLOCK.index("@triton.jit") : PYTHON_ON_A_BLOCK.index("class")]
).replace("add_kernel", "numpy_kernel")
SUBTRACTS = GOOD_ADD.replace("x + y, mask=mask)", "x - y, mask=mask)")
ALIAS = """T = tl.tensor  # Triton's class under a name the static check does not know


def _numpy_add(self, other):
    self.handle.data[:] = self.handle.data + other.handle.data  # NumPy: an add
    return self
"""
CHANGES = {
    "instance_rewrite": "add_kernel.rewrite = lambda: numpy_kernel.rewrite()\n",
    "class_rewrite": """_rewrite = type(add_kernel).rewrite


def _swap(self):
    return _rewrite(numpy_kernel) if self is add_kernel else _rewrite(self)


type(add_kernel).rewrite = _swap
""",
    "rewriter": "add_kernel.rewriter = numpy_kernel.rewriter\n",
    "language_class": ALIAS + "T.__sub__ = _numpy_add\n",
}
GRID_PATCHES = (
    ALIAS
    + """

def grid(meta):  # inside the launch, after the interpreter's own patches
    T.__sub__ = _numpy_add
    return (triton.cdiv(int(meta["n"]), 1024),)
"""
)


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_changed_interpreter_fails_as_a_guard(cpu_verifier, add_task, change):
    source = SUBTRACTS.replace("class ModelNew", NUMPY_ADD + change + "\n\nclass ModelNew")
    assert source != SUBTRACTS
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "InterpreterChanged" in v.message, v.message


def test_the_unchanged_interpreter_passes_an_honest_add(cpu_verifier, add_task):
    v = cpu_verifier.check(add_task, GOOD_ADD)
    assert v.passed, v.message


def test_the_language_changed_inside_a_launch_fails_as_a_guard(cpu_verifier, add_task):
    """The interpreter patches Triton's language for a launch's length; a grid that then put
    its own function in place of the subtraction's stand-in is caught when the grid is set."""
    source = SUBTRACTS.replace("class ModelNew", GRID_PATCHES + "\n\nclass ModelNew").replace(
        "add_kernel[(triton.cdiv(n, 1024),)]", "add_kernel[grid]"
    )
    assert "add_kernel[grid]" in source
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "tensor.__sub__" in v.message, v.message


WARNED = """
import os, sys, warnings
os.environ["TRITON_INTERPRET"] = "1"
import triton
import triton.language as tl
from upskills.verify.guards import LaunchCounter
from upskills.verify.interpreter_integrity import InterpreterChanged, check_interpreter


@triton.jit
def kernel(x_ptr):
    pass


LaunchCounter().install()
check_interpreter(kernel)
warnings.warn_explicit("note", UserWarning, "core.py", 1, module="triton.language.core",
                       registry=vars(tl.core).setdefault("__warningregistry__", {}))
check_interpreter(kernel)  # Python's own registry of the warning: not a change
tl.core.atomic_xchg = tl.core.atomic_add
assert "atomic_xchg" in raised(InterpreterChanged, check_interpreter, kernel)
print("checked")
"""


def test_a_warning_from_the_language_is_not_a_change(tmp_path):
    """A warning issued from Triton's language leaves ``__warningregistry__`` in its module
    (a corpus kernel's cross_entropy launch did): not a change; a replaced name still is."""
    run_checked_script(tmp_path, WARNED)
