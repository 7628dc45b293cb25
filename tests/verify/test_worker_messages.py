"""A failure's message says when the machine, not the kernel, failed."""

from __future__ import annotations

import pytest

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
