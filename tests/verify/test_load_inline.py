"""load_inline kernels count as the candidate's own launches; ATen ops and vendor-library calls
inside them do not hide.

Builds a small C++ extension (CPU) once; the second check reuses the build.
"""

from __future__ import annotations

import os
import shutil

import pytest

from upskills.verify.sandbox import check_build_folder
from upskills.verify.verdict import ErrorClass

pytestmark = [
    pytest.mark.slow,  # compiling the extension takes ~30-70 s
    pytest.mark.skipif(
        shutil.which("c++") is None or shutil.which("ninja") is None,
        reason="needs a C++ compiler and ninja to build a load_inline extension",
    ),
]

CPP_CANDIDATE = """
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = '''
#include <torch/extension.h>

torch::Tensor add_loop(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] + b[i];
    return out;
}

torch::Tensor add_aten(torch::Tensor x, torch::Tensor y) { return x + y; }

'''

_ext = load_inline(
    name="upskills_test_add_ext",
    cpp_sources=_SRC,
    functions=["add_loop", "add_aten"],
    extra_cflags=["-O1"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return _ext.FUNC(x.contiguous(), y.contiguous())
"""

# An extension of its own (the guard judges what an extension imports, not which function is
# called): the cuBLAS name assembled by the preprocessor, out of the static guard's sight, and
# imported weakly, so the extension loads where cuBLAS is absent.
BLAS_CANDIDATE = (
    CPP_CANDIDATE.replace("upskills_test_add_ext", "upskills_test_blas_ext")
    .replace('functions=["add_loop", "add_aten"]', 'functions=["add_blas"]')
    .replace(
        "torch::Tensor add_aten(torch::Tensor x, torch::Tensor y) { return x + y; }",
        """#define JOIN(a, b) a##b
extern "C" int JOIN(cubl, asCreate_v2)(void** handle) __attribute__((weak));

torch::Tensor add_blas(torch::Tensor x, torch::Tensor y) {
    if (JOIN(cubl, asCreate_v2)) { void* h = nullptr; JOIN(cubl, asCreate_v2)(&h); }
    return add_loop(x, y);
}""",
    )
    .replace("FUNC", "add_blas")
)

# Host memory a GPU kernel writes (pinned by ``cudaHostAlloc``), for a C++ loop to add on the
# host: the name pasted by the preprocessor, out of the static guard's sight, and imported
# weakly, so the extension loads on a machine without CUDA (thirty-fifth session's review).
HOST_MEMORY_CANDIDATE = (
    CPP_CANDIDATE.replace("upskills_test_add_ext", "upskills_test_host_memory_ext")
    .replace('functions=["add_loop", "add_aten"]', 'functions=["add_host"]')
    .replace(
        "torch::Tensor add_aten(torch::Tensor x, torch::Tensor y) { return x + y; }",
        """#define JOIN(a, b) a##b
extern "C" int JOIN(cudaHo, stAlloc)(void** p, size_t n, unsigned int f) __attribute__((weak));

torch::Tensor add_host(torch::Tensor x, torch::Tensor y) {
    if (JOIN(cudaHo, stAlloc)) { void* p = nullptr; JOIN(cudaHo, stAlloc)(&p, 64, 0); }
    return add_loop(x, y);
}""",
    )
    .replace("FUNC", "add_host")
)


def test_an_extension_that_pins_host_memory_by_import_is_a_host_fallback(
    add_task, tmp_path, monkeypatch
):
    """What the extension imports names the host memory the static guard could not read."""
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        v = verifier.check(add_task, HOST_MEMORY_CANDIDATE)
    assert v.guard == "python_fallback" and "cudaHostAlloc" in v.message, v.message
    assert "gives its kernels host memory" in v.message, v.message


# Found 2026-12-05: ATen's ``x + y`` inside the extension, where the op recorder (a
# ``TorchDispatchMode``) is not called: on a thread of the extension's own (a new thread has
# none of the caller's dispatch keys), through ``redispatch`` below the Python key, by the CPU
# kernel's own entry point past the dispatcher (``at::cpu::add``), with the Python key excluded,
# or with the modes turned off through ``torch._C._DisableTorchDispatch`` reached from C++ by
# name. Each passed as the candidate's kernel. The names are pasted by the preprocessor (and
# split string literals), out of the static guard's sight (``hidden_ops``, ``python_from_cpp``
# there), so what stops the first three is what the extension imports, and the last two the
# shadow profile (``verify/shadow_ops.py``).
HIDDEN_CANDIDATE = (
    CPP_CANDIDATE.replace("upskills_test_add_ext", "upskills_test_hidden_ext")
    .replace(
        'functions=["add_loop", "add_aten"]',
        'functions=["add_unseen", "add_backend", "add_threaded", "add_excluded", "add_disabled"]',
    )
    .replace(
        "torch::Tensor add_aten(torch::Tensor x, torch::Tensor y) { return x + y; }",
        """#include <c10/core/impl/LocalDispatchKeySet.h>
#include <thread>
#define J(a, b) a##b

torch::Tensor add_unseen(torch::Tensor x, torch::Tensor y) {
    return at::_ops::add_Tensor::J(redis, patch)(
        c10::DispatchKeySet(c10::DispatchKey::CPU), x, y, 1);
}

namespace at { namespace J(c, pu) {
at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
} }

torch::Tensor add_backend(torch::Tensor x, torch::Tensor y) { return at::J(c, pu)::add(x, y, 1); }

torch::Tensor add_excluded(torch::Tensor x, torch::Tensor y) {
    c10::impl::J(ExcludeDispatch, KeyGuard) keys(c10::DispatchKeySet(
        {c10::DispatchKey::J(Pyth, on), c10::DispatchKey::J(Pyth, onTLSSnapshot)}));
    return x + y;
}

torch::Tensor add_disabled(torch::Tensor x, torch::Tensor y) {
    auto globals = J(py, bind11)::J(ca, st)(x).J(at, tr)("__class__").J(at, tr)("__repr__")
        .J(at, tr)("__glob" "als__");
    auto off = globals["torch"].J(at, tr)("_C").J(at, tr)("_DisableTorch" "Dispatch")();
    off.J(at, tr)("__enter__")();
    auto out = x + y;
    off.J(at, tr)("__exit__")(J(py, bind11)::none(), J(py, bind11)::none(), J(py, bind11)::none());
    return out;
}

torch::Tensor add_threaded(torch::Tensor x, torch::Tensor y) {
    torch::Tensor out;
    std::J(thr, ead) worker([&] { out = x + y; });
    worker.join();
    return out;
}""",
    )
)


def test_load_inline_kernel_passes_and_aten_inside_it_is_caught(add_task, tmp_path, monkeypatch):
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        v = verifier.check(add_task, CPP_CANDIDATE.replace("FUNC", "add_loop"))
        assert v.passed, v.message
        v = verifier.check(add_task, CPP_CANDIDATE.replace("FUNC", "add_aten"))
        assert v.error_class == ErrorClass.GUARD and "aten.add" in v.message
        # a library call the static guard cannot read shows in what the extension imports
        v = verifier.check(add_task, BLAS_CANDIDATE)
        assert v.guard == "vendor_library" and "cublasCreate_v2" in v.message, v.message


def test_aten_run_out_of_the_op_recorders_sight_is_caught_by_what_the_extension_imports(
    add_task, tmp_path, monkeypatch
):
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        for func in ("add_unseen", "add_backend", "add_threaded"):
            v = verifier.check(add_task, HIDDEN_CANDIDATE.replace("FUNC", func))
            assert v.guard == "hidden_ops", (func, v.message)
            for name in ("_ZN2at3cpu3add", "add_Tensor10redispatch", "_M_start_thread"):
                assert name in v.message, (name, v.message)
        # past the mode but not past the dispatcher's entry: the shadow profile, in the trial
        for func in ("add_excluded", "add_disabled"):
            v = verifier.check(add_task, HIDDEN_CANDIDATE.replace("FUNC", func))
            assert v.guard == "hidden_ops", (func, v.message)
            assert "aten::add where the op recorder could not see it" in v.message, v.message


def test_a_build_failure_shows_the_compilers_error_not_its_command_line(
    add_task, tmp_path, monkeypatch
):
    """torch's message is ninja's output: the whole compiler command (thousands of characters
    of flags) before the diagnostics. The verdict keeps the diagnostics."""
    from upskills.verify import CheckOptions, Verifier

    broken = CPP_CANDIDATE.replace("upskills_test_add_ext", "upskills_test_broken_ext").replace(
        "o[i] = a[i] + b[i];", "o[i] = a[i] + undeclared_thing[i];"
    )
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        v = verifier.check(add_task, broken.replace("FUNC", "add_loop"))
    assert v.error_class == ErrorClass.COMPILE, v.message
    assert "Error building extension 'upskills_test_broken_ext'" in v.message
    assert "undeclared_thing" in v.message and "error" in v.message
    assert "-DTORCH_EXTENSION_NAME" not in v.message
    assert len(v.message) < 2000


def test_a_lock_left_by_a_killed_build_does_not_hang_the_next_check(
    add_task, tmp_path, monkeypatch
):
    """A check killed while its extension was building leaves torch's build lock behind, and
    every later load of that extension waited for it to vanish: until the check's timeout
    (three re-checks of 40_LayerNorm on the H200 so). The candidate's process now removes locks
    no live process holds before its import."""
    from upskills.verify import CheckOptions, Verifier

    name = "upskills_test_lock_ext"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    source = CPP_CANDIDATE.replace("upskills_test_add_ext", name).replace("FUNC", "add_loop")
    folder, ids = check_build_folder(source)  # each source builds apart
    lock = folder / name / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    for stale in (lock.parent / "lock", *lock.parent.glob("*.so")):  # an earlier run's build
        stale.unlink(missing_ok=True)
    lock.write_text("")  # what a killed build leaves: the file, and no process holding it
    if ids is not None:
        for path in (lock.parent.parent, lock.parent, lock):
            os.chown(path, *ids)
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=240)) as verifier:
        v = verifier.check(add_task, source)
    assert v.passed, v.message
    assert not lock.exists()


def test_two_sources_that_name_their_extension_alike_keep_both_builds(
    add_task, tmp_path, monkeypatch
):
    """``load_inline`` caches a build by extension name: two sources with one name rebuilt over
    each other, so judging A, then B, then A again built A twice (an ablation judges many
    variants of one kernel, all with its extension's name). Each source now builds in a folder
    of its own, and A judged again finds its build."""
    from upskills.verify import CheckOptions, Verifier

    name = "upskills_test_twin_ext"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    a = CPP_CANDIDATE.replace("upskills_test_add_ext", name).replace("FUNC", "add_loop")
    b = a.replace('extra_cflags=["-O1"]', 'extra_cflags=["-O2"]')
    so_a = check_build_folder(a)[0] / name / f"{name}.so"
    so_b = check_build_folder(b)[0] / name / f"{name}.so"
    for stale in (so_a, so_b):  # an earlier run's build
        stale.unlink(missing_ok=True)
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        assert verifier.check(add_task, a).passed
        built_a = so_a.stat().st_mtime_ns
        assert verifier.check(add_task, b).passed
        assert so_b.exists() and so_a.stat().st_mtime_ns == built_a  # B did not build over A
        v = verifier.check(add_task, a)
    assert v.passed, v.message
    assert so_a.stat().st_mtime_ns == built_a  # A judged again: its build was found, not redone


# Found 2026-12-05: an extension that registers its own kernel for an op the judge allows (an
# allocation: ``empty_like``) for the length of one forward, and does the task's work with ATen
# inside it. The op recorder sees ``empty_like`` and calls it with its mode popped, so the
# ``add`` the kernel runs reaches no mode, and the shadow profile found it inside the recorder's
# own mark; the dispatcher's table, compared after the trials, is PyTorch's again by then. It
# passed as the candidate's kernel. ``torch::Library`` is pasted by the preprocessor here, out
# of the static guard's sight; the trial's shadow profile finds the ``add`` inside the
# allocation's kernel, and what the extension imports (``torch::Library``, judged after the
# trials: ``test_libraries.py``) would refuse it next.
OVERRIDE_CANDIDATE = (
    CPP_CANDIDATE.replace("upskills_test_add_ext", "upskills_test_override_ext")
    .replace('functions=["add_loop", "add_aten"]', 'functions=["arm", "disarm"]')
    .replace(
        "torch::Tensor add_aten(torch::Tensor x, torch::Tensor y) { return x + y; }",
        """#define J(a, b) a##b

static torch::Tensor stashed;

static at::Tensor spare(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device,
                        std::optional<bool> pin, std::optional<at::MemoryFormat> fmt) {
    if (stashed.defined()) {
        auto y = stashed;
        stashed = torch::Tensor();
        return self + y;
    }
    return at::empty(self.sizes(), self.options());
}

static std::unique_ptr<torch::J(Lib, rary)> lib;

void arm(torch::Tensor y) {
    stashed = y;
    lib = std::make_unique<torch::J(Lib, rary)>(
        torch::J(Lib, rary)::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
    lib->impl("empty_like", &spare);
}

void disarm() { lib.reset(); }""",
    )
    .replace(
        "return _ext.FUNC(x.contiguous(), y.contiguous())",
        "_ext.arm(y.contiguous())\n        out = torch.empty_like(x)\n"
        "        _ext.disarm()\n        return out",
    )
)


def test_an_allowed_op_whose_kernel_the_extension_replaced_is_caught(
    add_task, tmp_path, monkeypatch
):
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        v = verifier.check(add_task, OVERRIDE_CANDIDATE)
        # the trial's shadow profile speaks first; the imports are judged after the trials
        assert v.guard == "hidden_ops", v.message
        assert "aten::add inside aten::empty_like" in v.message, v.message


@pytest.mark.gpu
def test_a_host_loop_over_copies_of_the_gpu_inputs_is_a_host_fallback(
    add_task, tmp_path, monkeypatch
):
    """On a GPU the C++ loop runs on host copies of the inputs: no aten op computes, and the
    op recorder sees copies only. The copy to the host is what gives it away (guard (b)
    ``python_fallback``, ``guards.to_host``; thirty-fourth session)."""
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    source = CPP_CANDIDATE.replace("upskills_test_add_ext", "upskills_test_host_ext").replace(
        "return _ext.FUNC(x.contiguous(), y.contiguous())",
        "return _ext.add_loop(x.cpu().contiguous(), y.cpu().contiguous()).to(x.device)",
    )
    with Verifier("cuda", CheckOptions(seeds=1, timeout_s=300, baselines=False)) as verifier:
        v = verifier.check(add_task, source)
    assert v.guard == "python_fallback" and "to the host" in v.message, v.message


def gpu_check(add_task, source: str, tmp_path, monkeypatch, timeout_s: int = 300):
    """One GPU check of ``source`` on the add task, its extensions built under ``tmp_path``."""
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    options = CheckOptions(seeds=1, timeout_s=timeout_s, baselines=False)
    with Verifier("cuda", options) as verifier:
        return verifier.check(add_task, source)


COPY_KERNEL = """
@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
"""
"""The Triton copy kernel of the pinned-memory candidates."""


PINNED_CANDIDATE = (
    '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

_SRC = """
#include <torch/extension.h>

void add_host(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* pc = c.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) pc[i] = pa[i] + pb[i];
}
"""

_ext = load_inline(name="upskills_test_pinned_ext", cpp_sources=_SRC, functions=["add_host"])

'''
    + COPY_KERNEL
    + """

class ModelNew(nn.Module):
    def forward(self, x, y):
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)
        pinned = {"pin_" + "memory": True}
        a, b, c = (torch.empty(n, **pinned) for _ in range(3))
        copy_kernel[grid](x, a, n, BLOCK=1024)  # the GPU writes host memory
        copy_kernel[grid](y, b, n, BLOCK=1024)
        torch.cuda.synchronize()
        _ext.add_host(a, b, c)  # the add, on the host
        out = torch.empty_like(x)
        copy_kernel[grid](c, out, n, BLOCK=1024)
        return out
"""
)


@pytest.mark.gpu
def test_a_host_loop_over_pinned_memory_the_kernels_fill_is_a_host_fallback(
    add_task, tmp_path, monkeypatch
):
    """Triton kernels copy the inputs into pinned host memory and the sum out of it; a C++ loop
    adds on the host. No aten op computes and no copy op runs: the pinned allocations and the
    host tensors handed to the kernels give it away (``guards.host_reach``; thirty-fifth
    session's review; passed on an H100 in the thirty-sixth)."""
    v = gpu_check(add_task, PINNED_CANDIDATE, tmp_path, monkeypatch)
    assert v.guard == "python_fallback" and "elements of host memory" in v.message, v.message


MEMCPY_CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor add_copied(torch::Tensor x, torch::Tensor y);"
_CUDA = """
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <vector>

torch::Tensor add_copied(torch::Tensor x, torch::Tensor y) {
    const int64_t n = x.numel();
    const size_t bytes = n * sizeof(float);
    std::vector<float> a(n), b(n);
    cudaMemcpy(a.data(), x.data_ptr<float>(), bytes, (cudaMemcpyKind)2);
    cudaMemcpy(b.data(), y.data_ptr<float>(), bytes, (cudaMemcpyKind)2);
    for (int64_t i = 0; i < n; ++i) a[i] += b[i];
    auto out = torch::empty_like(x);
    cudaMemcpy(out.data_ptr<float>(), a.data(), bytes, (cudaMemcpyKind)1);
    return out;
}
"""

_ext = load_inline(
    name="upskills_test_memcpy_ext", cpp_sources=_CPP, cuda_sources=_CUDA, functions=["add_copied"]
)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return _ext.add_copied(x.contiguous(), y.contiguous())
'''


@pytest.mark.gpu
def test_an_extensions_own_copy_to_the_host_is_a_host_fallback(add_task, tmp_path, monkeypatch):
    """The extension copies the inputs into host memory it allocates itself (the direction an
    integer, out of the static guard's sight), adds them in a C++ loop and copies the sum back.
    Its arguments are device tensors and it imports nothing denied: the GPU's own copy records,
    read in the late trial's profile, give it away (``shadow_ops.host_copy_bytes``;
    thirty-fifth session's review; passed on an H100 in the thirty-sixth)."""
    v = gpu_check(add_task, MEMCPY_CANDIDATE, tmp_path, monkeypatch, timeout_s=400)
    assert v.guard == "python_fallback", v.message
    assert "bytes from the GPU to the host" in v.message, v.message


ADDRESS_CANDIDATE = (
    '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

_SRC = """
#include <torch/extension.h>

void add_at(int64_t a, int64_t b, int64_t c, int64_t n) {
    const float* pa = reinterpret_cast<const float*>(a);
    const float* pb = reinterpret_cast<const float*>(b);
    float* pc = reinterpret_cast<float*>(c);
    for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
}
"""

_ext = load_inline(name="upskills_test_address_ext", cpp_sources=_SRC, functions=["add_at"])
_N = 1 << 22
_POOL = torch.empty(3 * _N, **{"pin_" + "memory": True})  # at import: no trial is watching


class _At:
    """A pointer for Triton's launcher: an address, not a tensor."""

    dtype = torch.float32

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address

'''
    + COPY_KERNEL
    + """

class ModelNew(nn.Module):
    def forward(self, x, y):
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)
        a, b, c = (_POOL.data_ptr() + k * _N * 4 for k in range(3))
        copy_kernel[grid](x, _At(a), n, BLOCK=1024)  # the GPU writes host memory
        copy_kernel[grid](y, _At(b), n, BLOCK=1024)
        torch.cuda.synchronize()
        _ext.add_at(a, b, c, n)  # the add, on the host
        out = torch.empty_like(x)
        copy_kernel[grid](_At(c), out, n, BLOCK=1024)
        return out
"""
)


@pytest.mark.gpu
def test_pinned_memory_from_import_handed_over_by_address_is_a_host_fallback(
    add_task, tmp_path, monkeypatch
):
    """PINNED_CANDIDATE with its pinned memory allocated at import (no op recorder runs there)
    and handed over as raw addresses: objects with a data_ptr() to Triton's launcher, integers
    to C++. No host tensor reaches a kernel; the driver says what the addresses are
    (``host_memory.host_addresses``; thirty-sixth session; passed on an H100 in the
    thirty-seventh)."""
    v = gpu_check(add_task, ADDRESS_CANDIDATE, tmp_path, monkeypatch)
    assert v.guard == "python_fallback" and "raw addresses" in v.message, v.message


STORED_POINTER_CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "void keep(int64_t address, int64_t cap); torch::Tensor add(torch::Tensor, torch::Tensor);"
_CUDA = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

static float* g_host = nullptr;
static int64_t g_cap = 0;

void keep(int64_t address, int64_t cap) {
    g_host = reinterpret_cast<float*>(address);
    g_cap = cap;
}

__global__ void move(const float* src, float* dst, int64_t n) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

torch::Tensor add(torch::Tensor x, torch::Tensor y) {
    const int64_t n = x.numel();
    float* a = g_host;
    float* b = g_host + g_cap;
    float* c = g_host + 2 * g_cap;
    auto stream = at::cuda::getCurrentCUDAStream();
    const int blocks = (int)((n + 255) / 256);
    move<<<blocks, 256, 0, stream>>>(x.data_ptr<float>(), a, n);  // the GPU writes host memory
    move<<<blocks, 256, 0, stream>>>(y.data_ptr<float>(), b, n);
    cudaStreamSynchronize(stream);
    for (int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];  // the add, on the host
    auto out = torch::empty_like(x);
    move<<<blocks, 256, 0, stream>>>(c, out.data_ptr<float>(), n);
    return out;
}
"""

_ext = load_inline(
    name="upskills_test_stored_pointer_ext", cpp_sources=_CPP, cuda_sources=_CUDA,
    functions=["keep", "add"],
)
_N = 1 << 22
_POOL = torch.empty(3 * _N, **{"pin_" + "memory": True})
_ext.keep(_POOL.data_ptr(), _N)  # at import: the pointer is kept in C++, never passed again


class ModelNew(nn.Module):
    def forward(self, x, y):
        return _ext.add(x.contiguous(), y.contiguous())
'''


@pytest.mark.gpu
def test_pinned_memory_a_cuda_kernel_reaches_through_a_stored_pointer_is_a_host_fallback(
    add_task, tmp_path, monkeypatch
):
    """The pinned memory's address goes to C++ once, at import; the forward passes device
    tensors only, and the extension's own kernels fill the pinned memory its C++ loop adds.
    No argument shows it: PyTorch's pinned allocator still holds the bytes at the trial's end
    (``host_memory.held_pinned_bytes``; thirty-sixth session; passed on an H100 in the
    thirty-seventh)."""
    v = gpu_check(add_task, STORED_POINTER_CANDIDATE, tmp_path, monkeypatch, timeout_s=400)
    assert v.guard == "python_fallback" and "pinned host memory" in v.message, v.message


RAW_COPY_CANDIDATE = '''
import struct

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = """
#include <torch/extension.h>
#include <cstring>

void raw_copy(torch::Tensor dst, torch::Tensor src) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), src.numel() * src.element_size());
}
"""

_ext = load_inline(name="upskills_test_raw_copy_ext", cpp_sources=_SRC, functions=["raw_copy"])


def _bytes(t):
    buf = bytearray(4 * t.numel())
    _ext.raw_copy(torch.frombuffer(buf, dtype=torch.float32), t.contiguous())
    return buf


class ModelNew(nn.Module):
    def forward(self, x, y):
        n = x.numel()
        a, b = (struct.unpack(f"{n}f", _bytes(t)) for t in (x, y))
        s = bytearray(struct.pack(f"{n}f", *[p + q for p, q in zip(a, b)]))
        out = torch.empty_like(x)
        _ext.raw_copy(out, torch.frombuffer(s, dtype=torch.float32))
        return out
'''


def test_an_extension_that_only_copies_through_python_buffers_is_a_python_fallback(
    add_task, tmp_path, monkeypatch
):
    """The extension's ``memcpy`` moves the inputs into ``bytearray`` buffers and the sum out
    of one; Python does the add. No aten op touches the buffers, so only the extension call's
    arguments give it away (``guards.python_memory``; passed every CPU trial until the final
    review of the thirty-fourth session)."""
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        v = verifier.check(add_task, RAW_COPY_CANDIDATE)
    assert v.guard == "python_fallback" and "host memory that Python reads" in v.message, v.message
