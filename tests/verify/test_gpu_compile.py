"""CPU verdicts compile each interpreted kernel for sm_90: one only the interpreter runs fails.

Each refused kernel here passes every CPU trial without the compile (checked when written);
the honest ones use what the compile has to carry to the compiler process (helpers, a
constexpr global, a tensor method, the library's own ``@jit`` functions, options).
"""

from __future__ import annotations

import pytest

from tests.verify.conftest import GOOD_ADD, run_checked_script
from upskills.verify.verdict import ErrorClass

pytest.importorskip("triton")


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


def _dodge(source: str, before: str, after: str) -> str:
    changed = source.replace(before, after)
    assert changed != source
    return changed


# Python on a block again, each time with a way the compile could be dodged before: a global
# of the candidate's own class or a module the compiler process does not import (each was
# skipped as a global the request could not carry), a callable launch option (skipped), an
# option a GPU launch refuses (the binder's failures were skipped); and swaps, where the
# compiler was given Triton's own object for the candidate's: a constexpr whose class only
# names itself Triton's, a subclass of the interpreter's @jit function, a module of the
# candidate's named as Triton's (each compiled as the library's, its operator never seen);
# and a global rebound after the compile, before the programs run, by the grid, by reading
# a grid size or by a pre-run hook (the compile saw Triton's module, the programs the
# candidate's)
PROGRAM_ID = "    pid = tl.program_id(0)\n"
CONSTEXPR_SUBCLASS = """
class constexpr(tl.constexpr):  # named and placed as Triton's own, its operator Python
    __module__ = "triton.language.core"

    def __add__(self, block):
        block.handle.data[:] = block.handle.data * 1  # NumPy on the block: interpreter only
        return block


ZERO = constexpr(0)
"""
HELPER_SUBCLASS = """
class Helper(type(add_kernel)):  # the interpreter's @jit function, its call Python
    def __call__(self, block):
        block.handle.data[:] = block.handle.data * 1  # NumPy on the block: interpreter only
        return block


def jit(fn):
    return Helper(fn)


@jit
def helper(v):
    return v
"""
MODULE_NAMED_TRITONS = """
import types


class Adds:
    def __add__(self, block):
        block.handle.data[:] = block.handle.data * 1  # NumPy on the block: interpreter only
        return block


core = types.ModuleType("triton.language.core")  # compiled as Triton's own, its int there
core.TRITON_MAX_TENSOR_NUMEL = Adds()
"""
REBINDS_CORE = """
import types


class Adds:
    def __add__(self, block):
        block.handle.data[:] = block.handle.data * 1  # NumPy on the block: interpreter only
        return block


FAKE = types.ModuleType("triton.language.core")
FAKE.TRITON_MAX_TENSOR_NUMEL = Adds()
core = tl.core  # Triton's own when the launch is compiled


def use(module):
    global core
    core = module


def grid(meta):
    use(FAKE)  # after the compile, before the programs run
    return (triton.cdiv(int(meta["n"]), 1024),)
"""
SIZE_REBINDS = """
class Size:  # a grid size whose reading rebinds the kernel's global
    def __init__(self, size):
        self.size = size

    def __index__(self):
        use(FAKE)
        return self.size

    def __gt__(self, other):
        return self.size > other

    def __lt__(self, other):
        return self.size < other


def sized(meta):
    return (Size(triton.cdiv(int(meta["n"]), 1024)),)
"""
ADDS_CORE = "tl.store(out_ptr + offs, core.TRITON_MAX_TENSOR_NUMEL + (x + y), mask=mask)"
LAUNCH = "add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)"
REBOUND = _dodge(
    _dodge(GOOD_ADD, "@triton.jit", REBINDS_CORE + "\n\n@triton.jit"),
    "tl.store(out_ptr + offs, x + y, mask=mask)",
    ADDS_CORE,
)
DODGES = {
    "own_object": _dodge(
        _dodge(
            PYTHON_ON_A_BLOCK,
            "@triton.jit",
            "class Box:\n    pass\n\n\nBOX = Box()\n\n\n@triton.jit",
        ),
        PROGRAM_ID,
        PROGRAM_ID + "    if BOX is None:\n        pid = pid + 1\n",
    ),
    "module": _dodge(
        PYTHON_ON_A_BLOCK, PROGRAM_ID, PROGRAM_ID + "    if torch is None:\n        pid = pid + 1\n"
    ),
    "callable_option": _dodge(
        PYTHON_ON_A_BLOCK, "@triton.jit", "@triton.jit(launch_metadata=lambda *a: {})"
    ),
    "unknown_option": _dodge(PYTHON_ON_A_BLOCK, "BLOCK=1024)", "BLOCK=1024, dodge=1)"),
    "bad_option": _dodge(PYTHON_ON_A_BLOCK, "BLOCK=1024)", "BLOCK=1024, num_warps=3)"),
    "constexpr_subclass": _dodge(
        _dodge(GOOD_ADD, "@triton.jit", CONSTEXPR_SUBCLASS + "\n\n@triton.jit"),
        "tl.store(out_ptr + offs, x + y, mask=mask)",
        "tl.store(out_ptr + offs, ZERO + (x + y), mask=mask)",
    ),
    "jit_subclass": _dodge(
        _dodge(GOOD_ADD, "class ModelNew", HELPER_SUBCLASS + "\n\nclass ModelNew"),
        "tl.store(out_ptr + offs, x + y, mask=mask)",
        "tl.store(out_ptr + offs, helper(x + y), mask=mask)",
    ),
    "grid_rebinds": _dodge(
        REBOUND, LAUNCH, "use(tl.core)\n        add_kernel[grid](x, y, out, n, BLOCK=1024)"
    ),
    "size_rebinds": _dodge(
        _dodge(
            REBOUND, LAUNCH, "use(tl.core)\n        add_kernel[sized](x, y, out, n, BLOCK=1024)"
        ),
        "class ModelNew",
        SIZE_REBINDS + "\n\nclass ModelNew",
    ),
    "hook_rebinds": _dodge(
        _dodge(REBOUND, LAUNCH, "use(tl.core)\n        " + LAUNCH),
        "class ModelNew",
        "add_kernel.add_pre_run_hook(lambda *a, **k: use(FAKE))\n\n\nclass ModelNew",
    ),
    "module_named_tritons": _dodge(
        _dodge(GOOD_ADD, "@triton.jit", MODULE_NAMED_TRITONS + "\n\n@triton.jit"),
        "tl.store(out_ptr + offs, x + y, mask=mask)",
        "tl.store(out_ptr + offs, core.TRITON_MAX_TENSOR_NUMEL + (x + y), mask=mask)",
    ),
}


@pytest.mark.parametrize("source", DODGES.values(), ids=DODGES.keys())
def test_nothing_the_candidate_writes_leaves_its_launch_uncompiled(cpu_verifier, add_task, source):
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.COMPILE, v.message
    assert "does not compile for a GPU (sm_90)" in v.message, v.message


def test_an_honest_kernel_still_passes(cpu_verifier, add_task):
    v = cpu_verifier.check(add_task, GOOD_ADD)
    assert v.passed, v.message


COMPILED_HERE = """
import collections, os, sys, types
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


# a global of the candidate's own class: a stand-in Triton refuses, as the real one
message = raised(GpuCompileError, compile_for_gpu, boxed, (x,), {})
assert "Cannot access global variable BOX" in message, message
Pair = collections.namedtuple("Pair", "a b")


@triton.jit
def ping(v, depth: tl.constexpr):
    if depth > 0:
        v = pong(v, depth - 1)
    return v


@triton.jit
def pong(v, depth: tl.constexpr):
    if depth > 0:
        v = ping(v, depth - 1)
    return v + 1


@triton.jit
def paired(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pair = Pair(tl.load(x_ptr + offs), 1.0)
    tl.store(x_ptr + offs, ping(pair.a + pair.b, 3))


# a named tuple's class and functions that name each other: built as Triton sees them
compile_for_gpu(paired, (x,), {"BLOCK": 16})
assert not SKIPPED, SKIPPED
core = tl.core


@triton.jit
def numel_added(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + core.TRITON_MAX_TENSOR_NUMEL)


compile_for_gpu(numel_added, (x,), {"BLOCK": 16})  # Triton's own module: compiled
core = types.ModuleType("triton.language.core")  # the candidate's, under Triton's name
# compiled again, not answered from Triton's cache (whose key holds no module)
message = raised(GpuCompileError, compile_for_gpu, numel_added, (x,), {"BLOCK": 16})
assert "TRITON_MAX_TENSOR_NUMEL" in message, message
message = raised(GpuCompileError, compile_for_gpu, bad, (x, 16), {})
assert "arange's arguments must be of type tl.constexpr" in message, message
print("checked")
"""


def test_helpers_globals_methods_and_options_reach_the_compiler(tmp_path):
    """An honest kernel with a helper, a constexpr global, a tensor method, the library's own
    ``@jit`` functions and two launch options compiles with nothing skipped, and a refusal
    carries Triton's own message; a global of the candidate's own class is refused as Triton
    refuses it; a named tuple's class and functions that name each other compile; a kernel
    compiled with Triton's own module and sent again with a module of the candidate's under
    that name is compiled again, not answered from Triton's cache."""
    run_checked_script(tmp_path, COMPILED_HERE)


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


def test_a_compiler_that_cannot_start_skips_and_one_that_hangs_refuses(monkeypatch):
    """A compiler process that never says it is ready is this machine's limit (the launch is
    not compiled, and no later launch tries again); one that started and then gives no answer
    in time was hung or crashed by the kernel it was given, which fails the check."""
    from upskills.verify import gpu_compile

    monkeypatch.setattr(gpu_compile, "_SERVER", [])
    monkeypatch.setattr(gpu_compile, "_BROKEN", [])
    monkeypatch.setattr(gpu_compile, "SERVER_COMMAND", ("-c", "print('{\"ready\": false}')"))
    assert gpu_compile._ask("{}") == {"skip": "the compiler process did not start (not ready)"}
    assert gpu_compile._ask("{}") == {"skip": "the compiler process did not start (not ready)"}
    assert gpu_compile._BROKEN == ["not ready"]  # tried once

    hangs = "import sys, time; print('{\"ready\": true}', flush=True); time.sleep(60)"
    monkeypatch.setattr(gpu_compile, "_BROKEN", [])
    monkeypatch.setattr(gpu_compile, "SERVER_COMMAND", ("-c", hangs))
    monkeypatch.setattr(gpu_compile, "ANSWER_S", 1.0)
    reply = gpu_compile._ask("{}")
    assert reply == {"error": "Triton's compiler crashed or did not finish in 1 s"}, reply
    assert gpu_compile._SERVER[0].returncode != 0  # killed


SWAPS_SOURCE = '''
def swap_source(then):
    """Have the interpreter keep the NumPy body, then show the compile other text."""
    add_kernel.rewrite()  # the interpreter keeps each function's rewrite
    path = inspect.getsourcefile(add_kernel.fn)
    kept = list(linecache.getlines(path))
    shown = [
        "    pass\\n" if "handle.data[:]" in line else line.replace("x, mask=mask)", then)
        for line in kept
    ]
    with open(path, "w") as f:
        f.write("".join(shown))
    return path, kept


SWAPPED = []
'''


def _swaps_source(then: str, keep_in_linecache: bool) -> str:
    keep = (
        "\n            linecache.cache[path] = (0, None, kept, path)" if keep_in_linecache else ""
    )
    source = _dodge(
        PYTHON_ON_A_BLOCK, "import torch\n", "import inspect\nimport linecache\nimport torch\n"
    )
    source = _dodge(source, "class ModelNew", SWAPS_SOURCE + "\n\nclass ModelNew")
    return _dodge(
        source,
        "        out = torch.empty_like(x)\n",
        "        out = torch.empty_like(x)\n"
        "        if not SWAPPED:\n"
        f"            path, kept = swap_source({then!r})" + keep + "\n"
        "            SWAPPED.append(path)\n",
    )


def test_the_source_compiled_is_the_source_the_interpreter_runs(cpu_verifier, add_task):
    """The interpreter keeps each function's rewrite for good, and Triton's compiler read the
    file from disk. A kernel rewritten once with NumPy on a block, its file then made to
    show a subtraction that compiles, passed the add (the interpreter ran the NumPy); so did
    one whose file on disk was made honest while ``linecache`` kept the NumPy text. Now the
    interpreter reads its source again at each launch and the compiler compiles the text
    the request carried: the first runs the subtraction (wrong), the second is refused."""
    shown = cpu_verifier.check(add_task, _swaps_source("x - y, mask=mask)", False))
    assert not shown.passed and shown.error_class == ErrorClass.MISMATCH, shown.message
    kept = cpu_verifier.check(add_task, _swaps_source("x + y, mask=mask)", True))
    assert not kept.passed and kept.error_class == ErrorClass.COMPILE, kept.message
