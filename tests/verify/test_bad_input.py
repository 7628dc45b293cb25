"""Bad candidates: each gets the right error class and a message that says where; the worker
survives, and the next (good) verdict is unaffected."""

from __future__ import annotations

import re

import pytest

from tests.verify.conftest import GOOD_ADD
from upskills.verify import CheckOptions
from upskills.verify.verdict import ErrorClass

pytest.importorskip("triton")


def line_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if needle in line)


def assert_still_good(verifier, task):
    v = verifier.check(task, GOOD_ADD)
    assert v.passed, f"a later good verdict was affected: {v.message}"


def test_syntax_error(cpu_verifier, add_task):
    bad = GOOD_ADD.replace("def forward(self, x, y):", "def forward(self, x, y)")
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.SYNTAX and v.stage == "parse"
    assert v.message.startswith(f"candidate.py:{line_of(bad, 'def forward')}")


def test_no_model_new(cpu_verifier, add_task):
    v = cpu_verifier.check(add_task, GOOD_ADD.replace("class ModelNew", "class MyModel"))
    assert v.error_class == ErrorClass.INTERFACE and "defines no class ModelNew" in v.message


def test_wrong_forward_signature(cpu_verifier, add_task):
    bad = (
        GOOD_ADD.replace("def forward(self, x, y):", "def forward(self, a, y):")
        .replace("empty_like(x)", "empty_like(a)")
        .replace("x.numel()", "a.numel()")
        .replace("(x, y, out", "(a, y, out")
    )
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.INTERFACE
    assert "parameter 1 is 'a', expected 'x'" in v.message
    assert v.message.startswith(f"candidate.py:{line_of(bad, 'class ModelNew')}:")


def test_wrong_init_signature(cpu_verifier, add_task):
    bad = GOOD_ADD.replace("def __init__(self):", "def __init__(self, block):")
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.INTERFACE and "'block' has no default" in v.message
    ok = GOOD_ADD.replace("def __init__(self):", "def __init__(self, block=1024):")
    assert cpu_verifier.check(add_task, ok).passed


def test_import_of_missing_module(cpu_verifier, add_task):
    bad = GOOD_ADD.replace("import triton\n", "import triton\nimport no_such_kernel_lib\n", 1)
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.IMPORT and v.stage == "import"
    assert f"candidate.py:{line_of(bad, 'no_such_kernel_lib')}" in v.message
    assert "no_such_kernel_lib" in v.message


def test_exception_in_forward_says_where(cpu_verifier, add_task):
    bad = GOOD_ADD.replace("n = x.numel()", "n = x.numel() // undefined_name")
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.RUNTIME
    assert f"candidate.py:{line_of(bad, 'undefined_name')} in forward" in v.message
    assert "NameError" in v.message


def test_infinite_loop_times_out_and_says_where(cpu_verifier, add_task):
    bad = GOOD_ADD.replace(
        "n = x.numel()", "n = x.numel()\n        while n > 0:\n            n += 1"
    )
    v = cpu_verifier.check(add_task, bad, CheckOptions(seeds=1, timeout_s=6))
    assert v.error_class == ErrorClass.TIMEOUT
    assert "did not finish within 6 s" in v.message
    assert re.search(
        rf"candidate.py:({line_of(bad, 'while n')}|{line_of(bad, 'n += 1')}) in forward", v.message
    ), v.message
    assert v.duration_s < 30
    assert_still_good(cpu_verifier, add_task)


def test_abort_is_a_crash(cpu_verifier, add_task):
    bad = GOOD_ADD.replace("import torch\n", "import os\nimport torch\n", 1).replace(
        "n = x.numel()", "n = x.numel()\n        os.abort()"
    )
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.CRASH
    assert (
        "SIGABRT" in v.message
        and f"candidate.py:{line_of(bad, 'os.abort')} in forward" in v.message
    )
    assert_still_good(cpu_verifier, add_task)


def test_segfault_is_a_crash(cpu_verifier, add_task):
    bad = GOOD_ADD.replace("import torch\n", "import faulthandler\nimport torch\n", 1).replace(
        "n = x.numel()", "n = x.numel()\n        faulthandler._sigsegv()"
    )
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.CRASH
    assert "SIGSEGV" in v.message and f"candidate.py:{line_of(bad, '_sigsegv')}" in v.message
    assert_still_good(cpu_verifier, add_task)


def test_out_of_bounds_store_is_a_clear_failure(cpu_verifier, add_task):
    # no mask on the store: the ragged variant (1003) writes 21 floats past the output
    bad = GOOD_ADD.replace(
        "tl.store(out_ptr + offs, x + y, mask=mask)", "tl.store(out_ptr + offs, x + y)"
    )
    v = cpu_verifier.check(add_task, bad)
    assert not v.passed
    # the interpreter's memory ops are bounds-checked against the launch's tensor arguments
    assert v.error_class == ErrorClass.RUNTIME
    assert "out-of-bounds store" in v.message and "'out_ptr'" in v.message
    assert f"candidate.py:{line_of(bad, 'add_kernel[')} in forward" in v.message
    assert_still_good(cpu_verifier, add_task)


def test_output_on_wrong_dtype_and_shape(cpu_verifier, add_task):
    v = cpu_verifier.check(add_task, GOOD_ADD.replace("return out", "return out.double()"))
    assert v.error_class == ErrorClass.DTYPE
    v = cpu_verifier.check(add_task, GOOD_ADD.replace("return out", "return out[:-1]"))
    assert v.error_class == ErrorClass.SHAPE and "variant 'small' seed" in v.message


def test_wrong_values_are_a_mismatch_with_errors_reported(cpu_verifier, add_task):
    bad = GOOD_ADD.replace("x + y, mask=mask", "x + y * 1.01, mask=mask")
    v = cpu_verifier.check(add_task, bad)
    assert v.error_class == ErrorClass.MISMATCH and v.stage == "correctness"
    failed = [r for r in v.variants if not r.passed]
    assert failed and failed[0].max_abs_err is not None and failed[0].max_abs_err > 0.005
    assert failed[0].atol is not None and failed[0].rtol is not None


def test_reference_that_fails_is_a_task_error(cpu_verifier, add_task):
    broken = add_task.model_copy(
        update={"source": add_task.source.replace("return x + y", "return x @ y.view(3, -1)")}
    )
    v = cpu_verifier.check(broken, GOOD_ADD)
    assert v.error_class == ErrorClass.TASK and "reference of task" in v.message


def test_a_dead_worker_is_restarted(cpu_verifier, add_task):
    import os
    import signal

    assert_still_good(cpu_verifier, add_task)
    proc = cpu_verifier.zygote._proc
    assert proc is not None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert_still_good(cpu_verifier, add_task)
    assert cpu_verifier.zygote._proc is not proc


def test_an_exception_nobody_catches_says_what_it_was(cpu_verifier, add_task):
    """A BaseException out of forward leaves the candidate's process (exit 70, its traceback in
    the log): the message says where and, since the thirty-third session, what."""
    bad = GOOD_ADD.replace(
        "n = x.numel()", "n = x.numel()\n        raise KeyboardInterrupt('the 512th call')"
    )
    v = cpu_verifier.check(add_task, bad)
    assert not v.passed and "exited with status 70" in v.message, v.message
    assert v.stage == "correctness", v.stage  # in its first trial, after its import
    assert f"line {line_of(bad, 'KeyboardInterrupt')}, in forward" in v.message, v.message
    assert "KeyboardInterrupt: the 512th call" in v.message, v.message
    assert_still_good(cpu_verifier, add_task)
