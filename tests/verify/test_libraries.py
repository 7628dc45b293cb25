"""A candidate's compiled code that calls a vendor library is found by what it imports.

The ELF reader and the process scan run on a shared object this test compiles (a weak import
of ``cublasCreate_v2``: it loads without cuBLAS); the end-to-end case, a ``load_inline``
candidate hiding the call from the static guard, is in ``test_load_inline.py``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from upskills.verify.libraries import (
    import_hits,
    mapped_objects,
    nested_names,
    peer,
    symbol_rule,
    undefined_symbols,
)
from upskills.verify.static import static_guards


def denied_imports(pid: int, uid: int) -> list[str]:
    """``object: symbol`` of each denied import, whatever its guard."""
    return [hit for _, hit in import_hits(pid, uid)]


needs_cxx = pytest.mark.skipif(shutil.which("c++") is None, reason="needs a C++ compiler")

SOURCE = """
extern "C" int cublasCreate_v2(void**) __attribute__((weak));
extern "C" int honest(int x) { return x + 1; }
extern "C" int uses_blas() { return cublasCreate_v2 ? 1 : 0; }
"""


def _build(tmp_path, source: str, name: str):
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    out = tmp_path / f"lib{name}.so"
    subprocess.run(["c++", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


@needs_cxx
def test_the_imports_of_a_shared_object_are_read_from_its_dynamic_symbols(tmp_path):
    lib = _build(tmp_path, SOURCE, "blas")
    names = undefined_symbols(lib.read_bytes())
    assert "cublasCreate_v2" in names
    assert "honest" not in names and "uses_blas" not in names  # defined, not imported
    assert undefined_symbols(b"not an ELF file") == set()
    assert undefined_symbols(lib.read_bytes()[:200]) == set()  # cut short: nothing, no error


@needs_cxx
def test_a_loaded_object_that_imports_cublas_is_named_and_a_clean_one_is_not(tmp_path):
    clean = _build(tmp_path, SOURCE.replace("cublasCreate_v2", "plain_weak"), "clean")
    ctypes.CDLL(str(clean))
    me = os.getpid(), os.geteuid()
    assert not [h for h in denied_imports(*me) if "libclean.so" in h]
    ctypes.CDLL(str(_build(tmp_path, SOURCE, "blas")))
    assert "libblas.so: cublasCreate_v2" in denied_imports(*me)


@needs_cxx
def test_installed_libraries_are_not_the_candidates(tmp_path):
    """Objects outside temporary and cache folders (torch's own libraries, which do import
    cuBLAS) are not scanned for a candidate of the judge's user; for a candidate of another
    user only that user's files are."""
    ctypes.CDLL(str(_build(tmp_path, SOURCE, "mine")))
    me = os.getpid(), os.geteuid()
    made = mapped_objects(*me)
    assert any(p.endswith("/libmine.so") for p in made)
    assert not [p for p in made if "/site-packages/" in p and "/tmp" not in p]
    other = mapped_objects(os.getpid(), os.geteuid() + 12345)  # as if the candidate were another
    assert not other  # nothing here is owned by that user


def test_the_peer_of_a_socket_is_this_process():
    a, b = socket.socketpair()
    try:
        assert peer(a) == (os.getpid(), os.getuid())
    finally:
        a.close()
        b.close()


def _rules(source: str) -> list[str]:
    import ast

    return [i.rule for i in static_guards(ast.parse(source), "k.py")]


def _cxx_rules(line: str) -> list[str]:
    """The static rules a C++ source string with ``line`` in a function body breaks."""
    return _rules(f'SRC = """\n#include <torch/extension.h>\nvoid f() {{ {line} }}\n"""\n')


def test_cxx_source_that_calls_cublas_is_refused_before_it_runs():
    src = 'SRC = """\n#include <cublas_v2.h>\nvoid f(void* h) { cublasSgemm(h); }\n"""\n'
    assert "vendor_library" in _rules(src)
    native = 'SRC = "#include <ATen/ATen.h>\\nauto y = at::native::add(x, x);"\n'
    assert "vendor_library" in _rules(native)
    loader = 'SRC = "#include <dlfcn.h>\\nvoid* h = dlopen(name, 1);"\n'
    assert "vendor_library" in _rules(loader)
    # the review's try: dlsym's name assembled by the preprocessor and cuBLAS's split in two
    # literals; the header and the RTLD_ handle it needs still show
    hidden = (
        'SRC = """\n#include <torch/extension.h>\n#include <dlfcn.h>\n#define J(a, b) a##b\n'
        'void* f = J(dl, sym)(RTLD_DEFAULT, "cub" "lasSaxpy_v2");\n"""\n'
    )
    assert "vendor_library" in _rules(hidden)
    without_header = hidden.replace("#include <dlfcn.h>\n", "")
    assert "dlfcn" not in without_header
    assert "vendor_library" in _rules(without_header)  # RTLD_DEFAULT alone


def test_a_header_only_librarys_device_wide_algorithm_is_refused_and_its_block_primitives_not():
    """The fifty-first session's review: a row sum that is ``cub::DeviceSegmentedReduce::Sum``
    passed every static rule, and CUB, Thrust and CUTLASS import nothing for the judge's scan
    of an extension's imports to see. Their device-wide algorithms are a kernel the library
    writes; CUB's block and warp primitives inside the candidate's own kernel are not."""
    for call in (
        "cub::DeviceSegmentedReduce::Sum(t, n, x, o, r, b, e);",
        "namespace c = cub; c::DeviceReduce::Sum(t, n, x, o, r);",
        "cub::DeviceScan::InclusiveSum(t, n, x, o, r);",
        "thrust::transform(thrust::device, a, a + n, b, f);",
        "float s = thrust::reduce(thrust::device, a, a + n);",
        "using G = cutlass::gemm::device::Gemm<float, L, float, L, float, L>;",
    ):
        assert "vendor_library" in _cxx_rules(call), call
    assert "vendor_library" in _rules('SRC = "#include <cub/device/device_reduce.cuh>"\n')
    own = (
        "typedef cub::BlockReduce<float, 256> BR; __shared__ typename BR::TempStorage t; "
        "float v = BR(t).Sum(x); float w = cub::WarpReduce<float>(u).Sum(v); "
        "thrust::pair<int, int> p; thrust::complex<float> c;"
    )
    assert "vendor_library" not in _cxx_rules(own)


def test_prose_that_names_cublas_is_not_cxx():
    assert "vendor_library" not in _rules('"""Faster than cuBLAS on skinny shapes."""\n')
    assert "vendor_library" not in _rules('NOTE = "cublas would do this"\n')


def test_only_a_child_of_the_candidate_zygote_is_taken(tmp_path):
    """A process that is not the zygote's child is turned away; the zygote's child is taken."""
    import subprocess
    import sys
    import threading

    from upskills.verify.libraries import accept_candidate

    name = f"upskills-test-{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    listener.listen(4)
    impostors: list[str] = []
    box = {}
    thread = threading.Thread(
        target=lambda: box.update(got=accept_candidate(listener, os.getpid(), impostors))
    )
    thread.start()
    try:
        stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # this process: not a child
        stranger.connect("\0" + name)
        code = (
            "import socket, time; s = socket.socket(socket.AF_UNIX); "
            f"s.connect('\\0{name}'); time.sleep(2)"
        )
        child = subprocess.Popen([sys.executable, "-c", code])
        thread.join(timeout=20)
        assert not thread.is_alive()
        conn, who = box["got"]
        assert who is not None and who[0] == child.pid
        assert impostors == [f"pid {os.getpid()}, uid {os.getuid()}"]
        conn.close()
        child.wait(timeout=10)
        stranger.close()
    finally:
        listener.close()


def test_a_stranger_first_fails_the_check_as_impostor(add_task):
    """A process a candidate left running (daemonised out of its process group) can find the
    judge's socket in /proc/net/unix and connect before the next candidate does, then answer
    with outputs computed any way it likes. The race decided for the stranger: it connects
    before the zygote's child, and the check fails as ``impostor``."""
    import subprocess
    import sys
    import threading

    from upskills.verify.judge import JudgeJob, judge_check

    address = f"upskills-test-{os.getpid()}-judge"
    job = JudgeJob(
        task=add_task,
        device="cpu",
        address=address,
        display="candidate.py",
        variants=["small"],
        seeds=1,
        seed=1,
        timeout_s=30,
        candidate_parent=os.getpid(),  # the "zygote" is this test: its children are candidates
    )
    box = {}
    thread = threading.Thread(target=lambda: box.update(result=judge_check(job)))
    thread.start()
    stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for _ in range(500):  # until the judge listens
        try:
            stranger.connect("\0" + address)
            break
        except OSError:
            import time

            time.sleep(0.01)
    code = (
        "import socket, time; s = socket.socket(socket.AF_UNIX); "
        f"s.connect('\\0{address}'); time.sleep(3)"
    )
    child = subprocess.Popen([sys.executable, "-c", code])
    thread.join(timeout=30)
    child.wait(timeout=10)
    stranger.close()
    result = box["result"]
    assert not result.passed and result.guard == "impostor", result.message
    assert f"pid {os.getpid()}" in result.message


@needs_cxx
def test_a_venv_under_the_temp_folder_is_installed_not_made(tmp_path, monkeypatch):
    """CI checks out (and installs) under /tmp: torch's libraries there import cuBLAS and ATen's
    native code, and must not be read as the candidate's."""
    from upskills.verify import libraries

    ctypes.CDLL(str(_build(tmp_path, SOURCE, "venvlib")))
    me = os.getpid(), os.geteuid()
    assert any(p.endswith("/libvenvlib.so") for p in mapped_objects(*me))
    monkeypatch.setattr(libraries, "installed_prefixes", lambda: [str(tmp_path) + "/"])
    assert not any(p.endswith("/libvenvlib.so") for p in mapped_objects(*me))


LOADER_SOURCE = """
#include <dlfcn.h>
extern "C" void* find(const char* name) { return dlsym(RTLD_DEFAULT, name); }
"""
TRITON_KEY = "4PXO3FN3M6WPKY3P4PCPTCWYWQOLUZDSQEV4NKI4D2X5D7TQN2RQ"  # a folder name from the H200


def _loaded_copy(lib, folder, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(lib, folder / name)
    ctypes.CDLL(str(folder / name))
    return name


@needs_cxx
def test_a_run_time_loader_is_denied_outside_tritons_own_helpers(tmp_path):
    """``dlsym`` finds cuBLAS by a name no import table shows: an object of the candidate's that
    imports it is denied, unless it is one of Triton's helpers in a Triton cache folder."""
    lib = _build(tmp_path, LOADER_SOURCE, "loader")
    assert "dlsym" in undefined_symbols(lib.read_bytes())
    me = os.getpid(), os.geteuid()
    helper = "cuda_utils.cpython-311-x86_64-linux-gnu.so"
    _loaded_copy(lib, tmp_path / "cache" / TRITON_KEY, helper)
    launcher = "__triton_launcher.cpython-311-x86_64-linux-gnu.so"
    _loaded_copy(lib, tmp_path / "cache" / TRITON_KEY.replace("4", "5"), launcher)
    impostor = _loaded_copy(lib, tmp_path / "torch_extensions" / "cuda_utils", helper)
    plain = _loaded_copy(lib, tmp_path / "cache" / TRITON_KEY.replace("4", "6"), "cuda_utils.so")
    hits = denied_imports(*me)
    assert f"{launcher}: dlsym" not in hits
    assert hits.count(f"{helper}: dlsym") == 1  # the copy outside a Triton key folder
    assert any(impostor in h for h in hits) and f"{plain}: dlsym" in hits
    with_torch = _build(
        tmp_path,
        LOADER_SOURCE + 'extern "C" int _ZN3c104warnEv() __attribute__((weak));\n'
        'extern "C" int uses() { return _ZN3c104warnEv ? 1 : 0; }\n',
        "withtorch",
    )
    disguised = "__triton_launcher.cpython-311-x86_64-linux-gnu.so"
    _loaded_copy(with_torch, tmp_path / "cache2" / TRITON_KEY, disguised)
    assert denied_imports(*me).count(f"{disguised}: dlsym") == 1  # it links torch: not Triton's


@needs_cxx
def test_packages_installed_onto_the_python_path_are_installed_not_made(tmp_path, monkeypatch):
    """The GPU machine's carried wheels go to ``pip install --target /tmp/site`` on PYTHONPATH:
    pydantic's core there imports ``dlsym`` and the candidate's host loads it. A folder on the
    judge's ``sys.path`` that holds installed distributions is installed; one that does not
    (a folder the candidate made and put on the path) is not."""
    from upskills.verify import libraries

    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (tmp_path / "bare" / "pkg").mkdir(parents=True)
    ctypes.CDLL(str(_build(site / "pkg", LOADER_SOURCE, "sitecore")))
    bare = tmp_path / "bare"
    ctypes.CDLL(str(_build(bare / "pkg", LOADER_SOURCE, "barecore")))
    monkeypatch.setattr(sys, "path", [str(site), str(bare), *sys.path])
    me = os.getpid(), os.geteuid()

    def made() -> set[str]:
        libraries.installed_prefixes.cache_clear()
        try:
            return {Path(p).name for p in mapped_objects(*me)}
        finally:
            libraries.installed_prefixes.cache_clear()

    assert {"libsitecore.so", "libbarecore.so"} <= made()  # neither folder holds a distribution
    (site / "sitecore-1.0.dist-info").mkdir()
    assert "libsitecore.so" not in made() and "libbarecore.so" in made()


# A kernel that keeps its inputs in L2 across calls: an access policy window on the stream, with
# the persisting share of L2 raised (CUDA runtime and driver spellings). Timed after the judge's
# L2 flush, it would read L2 where an honest kernel reads DRAM.
PERSISTING_L2 = """
#include <torch/extension.h>
#include <cuda_runtime.h>
void keep(torch::Tensor x) {
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 32 << 20);
  cudaStreamAttrValue v = {};
  v.accessPolicyWindow.base_ptr = x.data_ptr();
  v.accessPolicyWindow.num_bytes = x.nbytes();
  v.accessPolicyWindow.hitRatio = 1.0f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &v);
}
"""


@pytest.mark.parametrize(
    "line",
    [
        "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 32 << 20);",
        "v.accessPolicyWindow.hitRatio = 1.0f;",
        "v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;",
        "cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &v);",
        "cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 1 << 25);",
        "cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v);",
        "attr.val.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;",
        "cudaCtxResetPersistingL2Cache();",
    ],
)
def test_cxx_source_that_keeps_lines_in_l2_across_calls_is_refused(line):
    assert "l2_persistence" in _cxx_rules(line), line
    assert "l2_persistence" in _rules(f"SRC = {PERSISTING_L2!r}\n")


def test_cxx_that_only_hints_eviction_or_sets_function_attributes_is_not_refused():
    """Per-access cache hints and a kernel's own attributes keep nothing across calls."""
    src = (
        'SRC = """\n#include <torch/extension.h>\n'
        "cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 17);\n"
        'asm volatile("ld.global.L2::evict_last.v4.f32 {%0,%1,%2,%3}, [%4];");\n'
        'asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;");\n"""\n'
    )
    assert "l2_persistence" not in _rules(src)
    assert "l2_persistence" not in _rules('"""Why not keep x persisting in L2?"""\n')


# Symbols as torch 2.13's libc10/libtorch_cpu export them and as the 2026-12-05 attacks'
# extensions imported them (``test_load_inline.py``), and imports of an honest extension.
EXCLUDE_KEYS = "_ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_14DispatchKeySetE"
START_THREAD = (
    "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE"
)
POP_MODE = "_ZN3c104impl20TorchDispatchModeTLS9pop_stackEv"
HONEST_IMPORTS = [
    "_ZN2at4_ops10empty_like4callERKNS_6TensorESt8optionalIN3c1010ScalarTypeEES5_INS6_6LayoutEES5_"
    "INS6_6DeviceEES5_IbES5_INS6_12MemoryFormatEE",
    "_ZN3c104cuda20getCurrentCUDAStreamEa",
    "_ZNK3c1010TensorImpl15decref_pyobjectEv",
    "_ZN5torch17PyWarningHandlerC1Ev",
    "_ZN6pybind116detail11type_casterIN2at6TensorEvE4castERKS3_NS_19return_value_policyENS_6handleE",
    "_ZNSt6thread4joinEv",  # joining starts nothing
    # torch::empty_like excludes the autograd keys with it: hiding an op with it is the residue
    EXCLUDE_KEYS,
    "_ZN3c104impl23ExcludeDispatchKeyGuardD1Ev",
    "PyObject_GetAttrString",
    "_ZN2at4cuda26getCurrentDevicePropertiesEv",  # at::cuda:: that is no op
    "_ZN2at4cuda5emptyEN3c108ArrayRefIlEENS1_13TensorOptionsESt8optionalINS1_12MemoryFormatEE",
    "pthread_mutex_lock",
    "__cxa_guard_acquire",
    "syscall",  # every extension built against torch 2.11 imports it (SCAN=1, 2026-12-05)
]


def test_the_qualified_name_of_a_mangled_symbol_is_read():
    assert nested_names(EXCLUDE_KEYS) == ["c10", "impl", "ExcludeDispatchKeyGuard"]
    assert nested_names(START_THREAD) == ["std", "thread", "_M_start_thread"]
    tls = "_ZTWN3c104impl26raw_local_dispatch_key_setE"  # a thread-local's wrapper
    assert nested_names(tls) == ["c10", "impl", "raw_local_dispatch_key_set"]
    assert nested_names("pthread_create") == [] and nested_names("_Z3fooi") == []
    assert nested_names("_ZN3c1010Dispatcher13realSingletonEv") == [
        "c10",
        "Dispatcher",
        "realSingleton",
    ]


@pytest.mark.parametrize(
    "symbol",
    [
        POP_MODE,
        "_ZN2at4_ops10add_Tensor10redispatchEN3c1014DispatchKeySetERKNS_6TensorES6_RKNS2_6ScalarE",
        "_ZN3c1010Dispatcher13realSingletonEv",
        "_ZN2at16ThreadLocalState19setThreadLocalStateERKS0_",
        "_ZN2at6launchESt8functionIFvvEE",
        "_ZN3c1010ThreadPool3runESt8functionIFvvEE",
        START_THREAD,
        "_ZN2at3cpu3addERKNS_6TensorES3_RKN3c106ScalarE",  # at::cpu::add, past the dispatcher
        "_ZN2at4cuda2mmERKNS_6TensorES3_",
        "_ZN2at4cuda7add_outERNS_6TensorERKS1_S4_RKN3c106ScalarE",
        "pthread_create",
        "GOMP_parallel",
        "__kmpc_fork_call",
        "fork",
        "posix_spawn",
        "system",
        # a kernel of its own for an op, registered while forward runs (2026-12-05)
        "_ZN5torch7LibraryC1ENS0_4KindENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEES"
        "t8optionalIN3c1011DispatchKeyEEPKcj",
        "_ZNR5torch7Library5_implEPKcONS_11CppFunctionENS_17_RegisterOrVerifyE",
        # the GPU half of the shadow profile switched off (watched_speed.py, 2026-12-05)
        "cuptiActivityDisable",
        "cuptiUnsubscribe",
        "_ZN9libkineto3apiEv",
    ],
)
def test_imports_that_run_ops_out_of_the_recorders_sight_are_denied(symbol):
    assert symbol_rule(symbol) == "hidden_ops", symbol


@pytest.mark.parametrize(
    "symbol",
    [
        "cudaHostAlloc",
        "cudaMallocHost",
        "cudaHostRegister",
        "cudaHostGetDevicePointer",
        "cudaMallocManaged",
        "__cudaRegisterManagedVar",
        "cudaMemcpyFromSymbol",
        "cudaMemcpyFromSymbolAsync",
        "cuMemHostAlloc",
        "cuMemAllocHost_v2",
        "cuMemHostRegister_v2",
        "cuMemAllocManaged",
        "cuMemcpyDtoH_v2",
        "cuMemcpyDtoHAsync_v2",
        "_ZN2at4cuda24getPinnedMemoryAllocatorEv",  # at::cuda::getPinnedMemoryAllocator()
        "_ZN2at4cuda23getCachingHostAllocatorEv",
    ],
)
def test_imports_that_give_kernels_host_memory_are_denied(symbol):
    """Host memory a kernel reaches, or a copy to the host by name, serves a C++ loop on the
    host (thirty-fifth session's review)."""
    assert symbol_rule(symbol) == "python_fallback", symbol
    assert symbol_rule(symbol, triton_helper=True) is None


@pytest.mark.parametrize(
    "symbol",
    [
        "cudaMemcpy",  # its direction is an argument: the GPU's copy records judge it
        "cudaMemcpyAsync",
        "cudaMemcpyToSymbol",
        "cudaMemsetAsync",
        "cudaLaunchKernel",
        "__cudaRegisterVar",
        "__cudaRegisterFunction",
        "cudaGetDeviceProperties_v2",
        "cudaFuncSetAttribute",
    ],
)
def test_the_cuda_runtime_an_honest_extension_imports_is_not_denied(symbol):
    assert symbol_rule(symbol) is None, symbol


def test_the_imports_of_an_honest_extension_are_not_denied():
    assert [s for s in HONEST_IMPORTS if symbol_rule(s)] == []
    # ATen's compute through the dispatcher is the op recorder's to judge, by size
    assert symbol_rule("_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE") is None
    assert symbol_rule("cublasCreate_v2") == "vendor_library"
    assert symbol_rule("dlsym") == "vendor_library"
    assert symbol_rule("dlsym", triton_helper=True) is None
    assert symbol_rule("pthread_create", triton_helper=True) is None


HIDING_SOURCE = f"""
extern "C" int pthread_create(void*, const void*, void* (*)(void*), void*) __attribute__((weak));
extern "C" void {POP_MODE}() __attribute__((weak));
extern "C" int starts() {{ return pthread_create ? 1 : 0; }}
extern "C" int pops() {{ return {POP_MODE} ? 1 : 0; }}
"""


@needs_cxx
def test_a_loaded_object_that_starts_a_thread_or_pops_the_mode_fails_hidden_ops(tmp_path):
    ctypes.CDLL(str(_build(tmp_path, HIDING_SOURCE, "hiding")))
    me = os.getpid(), os.geteuid()
    mine = [(rule, hit) for rule, hit in import_hits(*me) if hit.startswith("libhiding.so")]
    assert mine == [
        ("hidden_ops", f"libhiding.so: {POP_MODE}"),
        ("hidden_ops", "libhiding.so: pthread_create"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKeySet(c10::DispatchKey::Python));",
        "c10::impl::tls_set_dispatch_key_excluded(k, true);",
        "auto r = at::_ops::add_Tensor::redispatch(ks, x, y, 1);",
        'auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor");',
        "at::ThreadLocalStateGuard g(state);",
        "std::thread t([&] { out = x + y; }); t.join();",
        "auto f = std::async([&] { return x + y; });",
        "#pragma omp parallel for",
        "at::launch([&] { out = x + y; });",
        "return at::cpu::add(x, y);",
        "#include <ATen/CUDAFunctions.h>",
        "#include <ATen/ops/add_cuda_dispatch.h>",
        "if (fork() == 0) { _exit(0); }",
        'system("true");',
        'TORCH_LIBRARY_IMPL(aten, CUDA, m) { m.impl("empty_like", &mine); }',
        'torch::Library lib(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, "f", 1);',
        "#include <torch/library.h>",
    ],
)
def test_cxx_source_that_hides_ops_from_the_recorder_is_refused(line):
    assert "hidden_ops" in _cxx_rules(line), line


@pytest.mark.parametrize(
    "line",
    [
        'auto off = py::module_::import("torch").attr("_C");',
        'auto g = m.attr("_DisableTorchDispatch")();',
        "torch::Tensor f(torch::Tensor x, pybind11::object m);",
        'PyObject* t = PyImport_ImportModule("torch");',
        "auto b = x.__globals__;",
    ],
)
def test_cxx_source_that_reaches_python_objects_by_name_is_refused(line):
    assert "python_from_cpp" in _cxx_rules(line), line


def test_a_kernels_own_cxx_is_not_refused_as_hiding_ops():
    """A host function with a stream, a guard, its own binding and a join of nothing."""
    src = (
        'SRC = """\n#include <torch/extension.h>\n#include <c10/cuda/CUDAGuard.h>\n'
        "torch::Tensor forward(torch::Tensor x) {\n"
        "  const at::cuda::OptionalCUDAGuard guard(device_of(x));\n"
        "  auto stream = at::cuda::getCurrentCUDAStream();\n"
        "  auto out = torch::empty_like(x);\n"
        "  k<<<grid, 256, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>());\n"
        "  return out;\n}\n"
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        '  m.def("forward", &forward, py::arg("x"));\n}\n"""\n'
    )
    rules = _rules(src)
    assert "hidden_ops" not in rules and "python_from_cpp" not in rules, rules
    assert "hidden_ops" not in _rules('"""A std::thread per row would be slower."""\n')
    commented = "// one row per warp: a std::thread or system() per row would be slower\n"
    commented += "/* no .attr( lookups, no PyObject_ calls: tensors in, tensors out */"
    assert _cxx_rules(commented) == []
    assert _cxx_rules(commented + "\nstd::thread t(f);") == ["hidden_ops"]
