"""A failure's message says when the machine, not the kernel, failed."""

from __future__ import annotations

import pytest

from tests.verify.conftest import GOOD_ADD
from upskills.verify.worker import NUMPY_SCALARS, describe_exception


class InterpreterError(Exception):
    """Named as Triton's is: the interpreter raises it from the error inside a launch."""


def _raised_in(filename: str) -> BaseException:
    """An InterpreterError raised from NumPy's refusal inside code compiled as ``filename``."""
    space: dict = {}
    exec(
        compile(f"def index(a):\n    raise TypeError({NUMPY_SCALARS!r})\n", filename, "exec"), space
    )
    try:
        try:
            space["index"](None)
        except TypeError as e:
            raise InterpreterError(repr(e)) from e
    except InterpreterError as outer:
        return outer
    raise AssertionError("not raised")


def test_numpys_refusal_inside_tritons_interpreter_names_the_machine():
    exc = _raised_in("/site-packages/triton/runtime/interpreter.py")
    message = describe_exception(exc, "/nowhere/candidate.py", "candidate.py")
    assert message.startswith("InterpreterError: TypeError(")
    assert "the machine, not the kernel" in message and "triton-lang/triton#9171" in message
    assert "numpy " in message  # the versions this process runs


@pytest.mark.parametrize("where", ["/work/candidate.py", "/site-packages/triton/language/core.py"])
def test_the_same_error_elsewhere_is_the_kernels(where):
    message = describe_exception(_raised_in(where), "/nowhere/candidate.py", "candidate.py")
    assert NUMPY_SCALARS in message and "the machine" not in message


PERSISTENT_ADD = GOOD_ADD.replace(
    """    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)""",
    """    for block in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):
        offs = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)""",
).replace("add_kernel[(triton.cdiv(n, 1024),)]", "add_kernel[(4,)]")
"""A persistent add: 4 programs walk the blocks. On a GPU ``block`` is a tensor."""


def test_a_loops_int_in_the_interpreter_is_explained(cpu_verifier, add_task):
    assert "block.to(tl.int64)" in PERSISTENT_ADD and "add_kernel[(4,)]" in PERSISTENT_ADD
    v = cpu_verifier.check(add_task, PERSISTENT_ADD)
    assert not v.passed and "'int' object has no attribute 'to'" in v.message, v.message
    assert "write tl.cast(v, ...) rather than v.to(...)" in v.message
    cast = cpu_verifier.check(
        add_task, PERSISTENT_ADD.replace("block.to(tl.int64)", "tl.cast(block, tl.int64)")
    )
    assert cast.passed, cast.message  # what the hint says runs here (and compiles for sm_90)


def test_an_ints_missing_method_outside_a_launch_gets_no_loop_hint():
    space: dict = {}
    exec(compile("def forward(n):\n    return n.to(1)\n", "/work/candidate.py", "exec"), space)
    try:
        space["forward"](3)
    except AttributeError as exc:
        message = describe_exception(exc, "/work/candidate.py", "candidate.py")
    assert message.startswith("candidate.py:2 in forward: AttributeError")
    assert "tl.cast" not in message
