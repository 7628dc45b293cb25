"""Header-only libraries' kernels (CUB, Thrust) compiled into a candidate's extension.

CUB and Thrust import nothing, so the scan of what an extension imports cannot see them; the
static rule reads their names in C++ source, and a name the preprocessor pastes together gets
past it. The fence behind it reads the kernels' mangled names in the compiled object
(:func:`upskills.verify.libraries.library_kernels`). The CPU tests build objects with nvcc (no
torch headers needed); the GPU tests judge ``load_inline`` candidates end to end.
"""

from __future__ import annotations

import ast
import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from upskills.verify.libraries import NVTX_HINT, import_hits, library_kernels
from upskills.verify.static import static_guards


def _rules(source: str) -> list[str]:
    return [i.rule for i in static_guards(ast.parse(source), "k.py")]


CUB_ROW_SUM = """#include <cub/cub.cuh>
#define J(a, b) a##b
void row_sum(const float* x, float* y, const int* off, int rows, void* tmp, size_t bytes) {
  cub::J(Device, SegmentedReduce)::Sum(tmp, bytes, x, y, rows, off, off + 1);
}
"""
"""The fifty-first session's cheat with its class's name pasted by the preprocessor."""

OWN_ROW_SUM = """#include <cub/cub.cuh>
__global__ void row_sum_kernel(const float* x, float* y, int n) {
  typedef cub::BlockReduce<float, 256> R;
  __shared__ typename R::TempStorage t;
  float v = 0;
  for (int i = threadIdx.x; i < n; i += 256) v += x[blockIdx.x * n + i];
  float s = R(t).Sum(v);
  if (threadIdx.x == 0) y[blockIdx.x] = s;
}
void row_sum(const float* x, float* y, int rows, int n) { row_sum_kernel<<<rows, 256>>>(x, y, n); }
"""
"""An honest row sum: its own kernel, with CUB's block primitive inside."""


@pytest.fixture(scope="module")
def cub_objects(tmp_path_factory):
    """``(library's, own, library's stripped)`` shared objects built by nvcc for sm_90."""
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    folder = tmp_path_factory.mktemp("cub")
    built = []
    for name, source in (("library", CUB_ROW_SUM), ("own", OWN_ROW_SUM)):
        (folder / f"{name}.cu").write_text(source)
        out = folder / f"{name}.so"
        args = ["nvcc", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", str(out)]
        subprocess.run([*args, str(folder / f"{name}.cu")], check=True)
        built.append(out)
    stripped = folder / "stripped.so"
    shutil.copy(built[0], stripped)
    if shutil.which("strip"):
        subprocess.run(["strip", str(stripped)], check=True)
    return built[0], built[1], stripped


def test_a_library_kernel_compiled_into_an_extension_is_found_by_its_name(cub_objects):
    """The fence behind the static rule: the static guard reads ``J(Device, SegmentedReduce)``
    and sees no library, but the compiled object holds CUB's kernel under its mangled name, in
    its symbol table and, stripped, in the strings it registers its kernels with. An honest
    kernel's object holds only CUB's ``EmptyKernel``, which every includer of CUB compiles."""
    library, own, stripped = cub_objects
    assert "vendor_library" not in _rules(f'SRC = """{CUB_ROW_SUM}"""\n')
    for obj in (library, stripped):
        found = library_kernels(obj.read_bytes())
        assert [k.split("::")[-1] for k in found] == ["DeviceSegmentedReduceKernel"], found
    assert library_kernels(own.read_bytes()) == set()
    assert b"EmptyKernel" in own.read_bytes()  # present, and not counted as the library's work
    assert library_kernels(b"_ZN3cub3foo11EmptyKernelIvEEvv _ZN6thrust4pairIiiEC1Ev") == set()


def test_the_nvtx_loader_cub_brings_is_denied_and_named_as_such(tmp_path):
    """``<cub/cub.cuh>`` brings NVTX, whose injection loader imports ``dlopen`` and ``dlsym``:
    an honest ``cub::BlockReduce`` kernel included that way failed guard (b) on an H100
    (2026-12-07). The loader stays denied (the same imports reach cuBLAS by name); the verdict
    says where it came from and how to leave it out. Linked like ``load_inline``'s extensions
    (the CUDA runtime shared: its static library imports ``dlopen`` of its own)."""
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    (tmp_path / "probe.cu").write_text("int main() { return 0; }\n")
    dry = subprocess.run(
        ["nvcc", "--dryrun", "-c", str(tmp_path / "probe.cu")], capture_output=True, text=True
    )
    top = [line.split("=", 1)[1] for line in dry.stderr.splitlines() if line.startswith("#$ TOP=")]
    runtime = Path(top[0] if top else "/nowhere") / "lib64" / "libcudart.so"
    if not runtime.exists():
        pytest.skip("needs nvcc's CUDA runtime (lib64/libcudart.so)")
    ctypes.CDLL(str(runtime), mode=ctypes.RTLD_GLOBAL)
    for name, source in (
        ("whole", OWN_ROW_SUM),
        ("block", OWN_ROW_SUM.replace("cub/cub.cuh", "cub/block/block_reduce.cuh")),
    ):
        (tmp_path / f"{name}.cu").write_text(source)
        args = ["nvcc", "-arch=sm_90", "-cudart", "shared", "-shared", "-Xcompiler", "-fPIC"]
        subprocess.run(
            [*args, "-o", str(tmp_path / f"{name}.so"), str(tmp_path / f"{name}.cu")], check=True
        )
        ctypes.CDLL(str(tmp_path / f"{name}.so"))
    hits = import_hits(os.getpid(), os.geteuid())
    whole = [(rule, hit) for rule, hit in hits if hit.startswith("whole.so: ")]
    assert ("vendor_library", "whole.so: dlsym" + NVTX_HINT) in whole, whole
    assert not [hit for _, hit in hits if hit.startswith("block.so: ")]


def test_a_loaded_object_holding_a_library_kernel_fails_the_process_scan(cub_objects):
    library, own, _ = cub_objects
    ctypes.CDLL(str(own))
    ctypes.CDLL(str(library))
    kernels = [
        (rule, hit) for rule, hit in import_hits(os.getpid(), os.geteuid()) if "cub::" in hit
    ]
    assert [rule for rule, _ in kernels] == ["vendor_library"]
    assert kernels[0][1].startswith("library.so: cub::")


AGENT_ROW_SUM = """#include <cub/agent/agent_reduce.cuh>
#include <cuda/std/functional>
using P = cub::AgentReducePolicy<256, 16, float, 4, cub::BLOCK_REDUCE_WARP_REDUCTIONS,
                                 cub::LOAD_LDG>;
using A = cub::detail::reduce::AgentReduce<P, const float*, float*, int, cuda::std::plus<>, float>;
__global__ void row_sum_kernel(const float* x, float* y, int n) {
  __shared__ typename A::TempStorage t;
  float s = A(t, x + (long)blockIdx.x * n, cuda::std::plus<>{}).ConsumeRange(0, n);
  if (threadIdx.x == 0) y[blockIdx.x] = s;
}
"""
"""The fifty-second session's review: a kernel of the candidate's own whose body is CUB's
tile-level agent, the body of ``DeviceReduceKernel`` (vectorized loads, tiles, the block
reduction). Built with nvcc 13 it leaves no CUB kernel's name in the object
(``library_kernels`` finds nothing) and imports nothing denied."""


def test_cubs_tile_level_agents_are_refused_in_cxx_source():
    """An agent is the library's kernel body; only the static rule can see it, by its name or
    its header. What stays open: the name pasted by the preprocessor under ``<cub/cub.cuh>``
    with NVTX off (``verifier.md``)."""
    assert "vendor_library" in _rules(f'SRC = """{AGENT_ROW_SUM}"""\n')
    without_header = AGENT_ROW_SUM.replace("#include <cub/agent/agent_reduce.cuh>\n", "")
    assert "vendor_library" in _rules(f'SRC = """{without_header}"""\n')  # the name alone
    own = OWN_ROW_SUM.replace("cub/cub.cuh", "cub/block/block_reduce.cuh")
    assert "vendor_library" not in _rules(f'SRC = """{own}"""\n')


def _candidate(cuda: str, name: str) -> str:
    """A ``load_inline`` row-sum candidate whose CUDA source is ``cuda``."""
    return f'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
{cuda}
"""
_ext = load_inline(
    name="{name}", cpp_sources="torch::Tensor row_sum(torch::Tensor x);",
    cuda_sources=_CUDA, functions=["row_sum"],
)


class ModelNew(nn.Module):
    def forward(self, x):
        return _ext.row_sum(x.contiguous())
'''


CUB_CANDIDATE = _candidate(
    r"""#define NVTX_DISABLE
#include <cub/cub.cuh>
#define J(a, b) a##b
__global__ void offsets(int* o, int rows, int n) {
  for (int i = threadIdx.x; i <= rows; i += blockDim.x) o[i] = i * n;
}
torch::Tensor row_sum(torch::Tensor x) {
  const int rows = x.size(0), n = x.size(1);
  auto y = torch::empty({rows}, x.options());
  auto off = torch::empty({rows + 1}, x.options().dtype(torch::kInt32));
  auto stream = at::cuda::getCurrentCUDAStream();
  int* o = off.data_ptr<int>();
  offsets<<<1, 256, 0, stream>>>(o, rows, n);
  size_t bytes = 0;
  cub::J(Device, SegmentedReduce)::Sum(nullptr, bytes, x.data_ptr<float>(), y.data_ptr<float>(),
      rows, o, o + 1, stream);
  auto tmp = torch::empty({(int64_t)bytes + 1}, x.options().dtype(torch::kUInt8));
  cub::J(Device, SegmentedReduce)::Sum(tmp.data_ptr(), bytes, x.data_ptr<float>(),
      y.data_ptr<float>(), rows, o, o + 1, stream);
  return y;
}""",
    "upskills_test_cub_row_sum",
)
"""CUB writes and launches the row sum; the candidate's own kernel only fills the offsets.
Without NVTX, whose loader imports ``dlopen``, the kernel's name is all that gives it away."""

OWN_CANDIDATE = _candidate(
    r"""#include <cub/block/block_reduce.cuh>
__global__ void row_sum_kernel(const float* x, float* y, int n) {
  typedef cub::BlockReduce<float, 256> R;
  __shared__ typename R::TempStorage t;
  float v = 0.f;
  for (int i = threadIdx.x; i < n; i += 256) v += x[(long)blockIdx.x * n + i];
  float s = R(t).Sum(v);
  if (threadIdx.x == 0) y[blockIdx.x] = s;
}
torch::Tensor row_sum(torch::Tensor x) {
  const int rows = x.size(0), n = x.size(1);
  auto y = torch::empty({rows}, x.options());
  row_sum_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}""",
    "upskills_test_own_row_sum",
)
"""The honest row sum: its own kernel, CUB's block primitive inside it."""


@pytest.mark.gpu
def test_a_cub_row_sum_is_refused_on_the_gpu_and_a_kernel_of_its_own_is_not(
    row_sum_task, tmp_path, monkeypatch
):
    """The static guard passes both; the judge reads CUB's kernel in the first one's extension
    (guard (b), ``vendor_library``) and nothing in the second's. Passed on an H100 (fifty-second
    session, ``benchmarks/results/gpu_tests_h100_session52_call2.log``)."""
    from upskills.verify import CheckOptions, Verifier

    assert "vendor_library" not in _rules(CUB_CANDIDATE)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cuda", CheckOptions(seeds=1, timeout_s=400, baselines=False)) as verifier:
        own = verifier.check(row_sum_task, OWN_CANDIDATE)
        cub = verifier.check(row_sum_task, CUB_CANDIDATE)
    print(f"own: {own.passed} {own.error_class}: {own.message[:300]}")
    print(f"cub: {cub.passed} {cub.error_class}: {cub.message[:300]}")
    assert own.passed, own.message
    assert cub.guard == "vendor_library" and "DeviceSegmentedReduceKernel" in cub.message, (
        cub.message
    )
    assert "dlopen" not in cub.message and "dlsym" not in cub.message, cub.message


RUN_TIME_CODE = [
    "nvrtcCompileProgram",
    "nvrtcCreateProgram",
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuLibraryLoadData",
    "cudaLibraryLoadData",
    "nvJitLinkCreate",
    "cuLinkAddData_v2",
]
"""Compilers and module loaders: kernels whose code no object the judge reads holds."""


@pytest.mark.parametrize("symbol", RUN_TIME_CODE)
def test_code_compiled_or_loaded_at_run_time_is_denied_outside_tritons_helpers(symbol):
    """Past the kernel-name read: CUB's kernel compiled by NVRTC at run time, or a cubin built
    elsewhere and loaded from bytes, leaves no name in the extension. An extension that imports
    a run-time compiler or a module loader is denied (Triton's own helpers reach the driver
    through ``dlsym`` and are judged by that rule), and its C++ is refused before it builds."""
    from upskills.verify.libraries import symbol_rule

    assert symbol_rule(symbol) == "vendor_library"
    assert symbol_rule(symbol, triton_helper=True) is None
    source = f"#include <cuda.h>\nvoid f(void* m, const void* image) {{ {symbol}(m, image); }}"
    assert "vendor_library" in _rules(f'SRC = """{source}"""\n'), source


def test_an_extension_that_launches_its_own_kernels_is_not_refused_as_run_time_code():
    """``cuModuleGetFunction``/``cudaLaunchKernel`` on kernels the extension holds, and prose
    that names NVRTC outside C++, are not run-time code."""
    from upskills.verify.libraries import symbol_rule

    for symbol in ("cudaLaunchKernel", "cudaFuncGetAttributes", "__cudaRegisterFatBinary"):
        assert symbol_rule(symbol) is None, symbol
    assert "vendor_library" not in _rules('"""Faster than an NVRTC-compiled kernel."""\n')
