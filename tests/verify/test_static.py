"""Parse and static guards: each cheat shape is rejected, with file:line; clean code is not."""

from __future__ import annotations

import pytest

from tests.verify.conftest import GOOD_ADD, GOOD_ROW_SUM
from upskills.verify.static import parse_candidate, static_guards
from upskills.verify.verdict import ErrorClass


def issues_of(source: str) -> list[str]:
    tree, issue = parse_candidate(source, "cand.py")
    assert issue is None and tree is not None
    return [i.message for i in static_guards(tree, "cand.py")]


def test_syntax_error_names_file_and_line():
    tree, issue = parse_candidate("import torch\n\ndef f(:\n    pass\n", "cand.py")
    assert tree is None and issue is not None
    assert issue.error_class == ErrorClass.SYNTAX
    assert issue.message.startswith("cand.py:3:")
    assert issue.line == 3


@pytest.mark.parametrize("source", [GOOD_ADD, GOOD_ROW_SUM])
def test_clean_kernels_pass(source):
    assert issues_of(source) == []


HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("y = F.softmax(x, dim=-1)\n", "(b) uses torch.nn.functional.softmax"),
        ("y = torch.matmul(a, b)\n", "(b) uses torch.matmul"),
        ("y = a @ b\n", "(b) uses the @ operator"),
        ("from torch import bmm\n", "(b) uses torch.bmm"),
        (
            "from torch.nn.functional import layer_norm as ln\n",
            "(b) uses torch.nn.functional.layer_norm",
        ),
        ("import torch as T\ny = T.sum(x)\n", "(b) uses torch.sum"),
        ("f = torch.compile(g)\n", "torch.compile"),
        ("import threading\n", "(d) threads"),
        ("from concurrent.futures import ThreadPoolExecutor\n", "(d)"),
        ("import multiprocessing as mp\n", "(d) other processes"),
        ("s = torch.cuda.Stream()\n", "(d) side streams"),
        ("with torch.cuda.stream(s):\n    pass\n", "(d) side streams"),
        ("torch.cuda.synchronize = lambda: None\n", "(d) patches torch.cuda.synchronize"),
        ("import time\ntime.perf_counter = lambda: 0.0\n", "(d) patches time.perf_counter"),
        ("setattr(torch.cuda, 'synchronize', None)\n", "(d) setattr() on torch.cuda"),
        (
            "e = torch.cuda.Event(enable_timing=True)\n",
            "(d) the candidate must not use timing events",
        ),
        ("import gc\n", "(e)"),
        (
            "import sys\nm = sys.modules['x']\n",
            "(e) the candidate must not reach into loaded modules",
        ),
        ("import sys\nf = sys._getframe(1)\n", "(e) walking stack frames"),
        ("import sys\nsys.setprofile(print)\n", "(e) profiling hooks"),
        (
            "import sys\nsys.monitoring.register_callback(1, 1, print)\n",
            "(e) monitoring callbacks",
        ),
        ("import sys\nsys.meta_path.insert(0, object())\n", "(e) import hooks"),
        ("from sys import path_hooks\n", "(e) import hooks"),
        ("def f(fr):\n    return fr.f_back.f_locals\n", "(e) walking stack frames"),
        # found in the twenty-third session's review: both passed the check before
        ("def f(fr):\n    return getattr(fr, 'f_back')\n", "(e) walking stack frames"),
        ("from traceback import walk_stack\nx = list(walk_stack(None))\n", "(e) walking stack"),
        (
            "import operator\nf = operator.attrgetter('__traceback__.tb_frame')\n",
            "(e) walking stack frames",
        ),
        (
            "from operator import attrgetter as ag\nf = ag('tb_' + 'frame')\n",
            "(e) operator.attrgetter with a computed name",
        ),
        ("ref = Model()\n", "(e) uses the reference's Model"),
        ("from upskills.tasks import runtime\n", "(e) the candidate must not use the verifier"),
        ("m = __import__('gc')\n", "(e) __import__()"),
        # 2026-12-05: a profiler switched off and another on hid ops from the shadow profile
        ("p = torch.autograd.profiler_legacy.profile()\n", "switch the op recorders off"),
        ("with torch.profiler.profile():\n    pass\n", "switch the op recorders off"),
        ("from torch.autograd import profiler\n", "switch the op recorders off"),
        ("import torch.autograd.profiler_legacy as pl\n", "switch the op recorders off"),
        # 2026-12-05, thirty-fourth session: NumPy's add over __array_interface__ and
        # data_ptr(), NumPy reached as torch.nn.functional.np, passed every CPU trial
        ("import torch.nn.functional as F\nadd = F.np.add\n", "NumPy reached another way"),
        ("s = torch.storage.np\n", "NumPy reached another way"),
        ("import torch.nn.functional as F\nm = getattr(F, 'np')\n", "(e) getattr of 'np'"),
        ("import operator\nf = operator.attrgetter('np')\n", "(e) operator.attrgetter of"),
        ("class M:\n    __array_interface__ = {}\n", "'__array_interface__'"),
        ("class M:\n    def __array_struct__(self):\n        return 0\n", "NumPy reached"),
        ("M = type('M', (), {'__array_' + 'interface__': 1})\n", "'__array_'"),
        ("def f(t):\n    return t.__array_namespace__()\n", "NumPy reached another way"),
        ("d = dict(__array_interface__=1)\n", "NumPy reached another way"),
        # 2026-12-05, thirty-fifth session's review: host memory a GPU kernel reaches (pinned,
        # registered, managed), or a copy to the host by name, then a C++ loop on the host
        ("h = torch.empty(4096, pin_memory=True)\n", "host memory a GPU kernel reaches"),
        ("def f(t):\n    return t.pin_memory()\n", "'pin_memory'"),
        ("r = torch.cuda.cudart()\n", "'cudart'"),
        ("from torch.cuda import cudart\n", "'cudart'"),
        ("def f(r, p, n):\n    r.cudaHostRegister(p, n, 0)\n", "'HostRegister'"),
        ("a = torch.cuda.memory.CUDAPluggableAllocator('a.so', 'f', 'g')\n", "Allocator"),
        ("SRC = '#include <torch/extension.h>\\nvoid* p; cudaHostAlloc(&p, 64, 0);'\n", "Alloc"),
        ("SRC = '__global__ void k() {}\\n__managed__ float buf[1 << 20];'\n", "'__managed__'"),
        ("SRC = 'cudaMallocManaged(&p, n);'\n", "'MallocManaged'"),
        ("SRC = 'cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);'\n", "'DeviceToHost'"),
        ("SRC = 'cuMemcpyDtoH_v2(h, d, n);'\n", "'MemcpyDtoH'"),
        ("SRC = 'cudaMemcpyFromSymbol(h, g_buf, n);'\n", "'FromSymbol'"),
        ("SRC = 'at::cuda::getPinnedMemoryAllocator()'\n", "'PinnedMemoryAllocator'"),
        ("from cuda.bindings import driver\n", "another library's CUDA API"),
        ("import cupy as cp\n", "another library's CUDA API"),
        ("from numba import cuda\n", "another library's CUDA API"),
    ],
)
def test_static_guard_fires(body, needle):
    messages = issues_of(HEADER + body)
    assert messages, f"no guard fired for {body!r}"
    assert any(needle in m for m in messages), messages
    line = HEADER.count("\n") + 1
    assert any(
        m.startswith(f"cand.py:{line}") or m.startswith(f"cand.py:{line + 1}") for m in messages
    )


def test_compute_calls_inside_a_triton_kernel_are_not_torch_calls():
    source = HEADER + (
        "import triton\nimport triton.language as tl\n\n"
        "@triton.jit\ndef k(a, b, c):\n    x = a @ b\n    tl.store(c, tl.sum(x, axis=0))\n"
    )
    assert issues_of(source) == []


def test_a_name_np_of_the_candidates_own_is_not_numpy():
    """``np`` is a common name for a count of programs: a variable of that name is the
    candidate's. An attribute named ``np`` is refused on every object, the candidate's own
    included: the object may be a module handed in as a parameter (``m.np``, 2026-12-06)."""
    body = "def grid(n):\n    np = triton.cdiv(n, 1024)\n    return (np,)\n\n\n"
    assert issues_of(HEADER + body) == []
    body += "class Cfg:\n    def __init__(self):\n        self.np = 4\n"
    assert any(".np" in issue for issue in issues_of(HEADER + body))


DEVICE_COPIES = '''
SRC = """#include <torch/extension.h>
__constant__ float w[64];
void f(float* d, const float* s, const float* h, size_t n) {
    cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice);
    cudaMemcpyToSymbol(w, h, 64 * sizeof(float));
}"""
pinned_rows = 4
'''


def test_device_copies_and_constants_are_not_host_memory():
    """Copies on the device, constants to the device and a name holding ``pinned`` pass."""
    assert issues_of(HEADER + DEVICE_COPIES) == []


def test_candidate_defining_its_own_model_may_name_it():
    source = HEADER + "class Model(nn.Module):\n    pass\n\nclass ModelNew(Model):\n    pass\n"
    assert issues_of(source) == []


def test_cache_decorator_on_forward_is_rejected():
    source = HEADER + (
        "import functools\n\nclass ModelNew(nn.Module):\n"
        "    @functools.lru_cache(maxsize=None)\n    def forward(self, x):\n        return x\n"
    )
    messages = issues_of(source)
    assert any("(c) @lru_cache on ModelNew.forward" in m for m in messages)


@pytest.mark.parametrize("key", ["x", "id(x)", "x.data_ptr()", "(x, y)"])
def test_store_keyed_by_inputs_is_rejected(key):
    source = HEADER + (
        "_CACHE = {}\n\nclass ModelNew(nn.Module):\n    def forward(self, x, y):\n"
        f"        _CACHE[{key}] = x\n        return x\n"
    )
    assert any("(c) forward stores results keyed by its inputs" in m for m in issues_of(source))


def test_store_keyed_by_shape_is_allowed():
    source = HEADER + (
        "_CFG = {}\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        _CFG[x.shape] = 128\n        return x\n"
    )
    assert issues_of(source) == []


def test_an_import_inside_a_kernel_is_refused():
    """The interpreter runs it as Python; the compiler rejects it (a fill rung passed this way)."""
    body = GOOD_ADD.replace(
        "    x = tl.load(x_ptr + offs, mask=mask)\n",
        "    import torch\n    x = tl.load(x_ptr + offs, mask=mask)\n",
    )
    assert body != GOOD_ADD
    found = issues_of(body)
    assert any("import inside a @triton.jit kernel" in i for i in found), found
    assert not issues_of(GOOD_ADD)
