"""The static check's rules for C++ source held in a candidate's strings (``load_inline``).

Split from :mod:`upskills.verify.static` (2026-12-05) when that passed 600 lines: a string
that looks like C++ is searched for calls that hand the work to a library, for the APIs
that keep L2 lines across calls, and for ways to run PyTorch's ops out of the op recorder's
sight. Each rule answers ``(message, rule name)``.
"""

from __future__ import annotations

import re

CPP_MARKERS = re.compile(r"#include|__global__|torch::Tensor|extern\s+\"C\"|PYBIND11_MODULE")
"""A string literal with one of these is C++ source (for ``load_inline``)."""

CPP_LIBRARY_CALLS = re.compile(
    r"\b(?:cublas|cublasLt|cudnn|cufft|cusparse|cusolver)\w*"
    r"|\bat::native::|\bat::cuda::blas\b|\bdlopen\b|\bdlsym\b|\bdlfcn\.h\b|\bRTLD_\w+"
    # header-only libraries' device-wide algorithms: a whole kernel the library writes and
    # launches (CUB's Device* classes, Thrust's algorithms, CUTLASS's device-level operators),
    # where CUB's block and warp primitives inside the candidate's own kernel stay allowed
    r"|\bDevice(?:Segmented)?(?:Reduce|Scan|RadixSort|Sort|Select|Histogram|Partition"
    r"|RunLengthEncode|Spmv|MergeSort|Copy|Memcpy|Transform|For|AdjacentDifference|Topk)\b"
    r"|\bcub/device/|\bthrust\s*::\s*(?:transform\w*|reduce\w*|inclusive_scan\w*"
    r"|exclusive_scan\w*|sort\w*|stable_sort\w*|copy\w*|fill\w*|for_each\w*|count\w*|gather\w*"
    r"|scatter\w*|sequence|tabulate|unique\w*|partition\w*|merge\w*|\w*_element|inner_product"
    r"|adjacent_difference|generate\w*|replace\w*|remove\w*|reverse\w*|equal|mismatch"
    r"|find\w*|all_of|any_of|none_of|set_\w+|lower_bound|upper_bound|binary_search)\b"
    r"|\bcutlass\s*::\s*(?:gemm|conv)\s*::\s*device\b|\bcutlass/(?:gemm|conv)/device/"
    # CUB's tile-level agents: the body of its device-wide kernels, called from a kernel of the
    # candidate's own they leave no library kernel in the object (fifty-second session's review)
    r"|\bcub/agent/|\bAgent(?:Reduce|Scan|RadixSort|SegmentedRadixSort|Select|Histogram|Rle"
    r"|MergeSort|Merge|BatchMemcpy|AdjacentDifference|ThreeWayPartition|UniqueByKey"
    r"|SubWarp|SmallAndMediumSegmentedSort|For|Partition|Spmv|Topk|Transform)\w*"
)
"""Calls in C++ source that hand the compute to a vendor library or ATen's native code, or
load code by name at run time (see :mod:`upskills.verify.libraries`). Header-only libraries
import nothing, so :mod:`upskills.verify.libraries`' scan of an extension's imports cannot see
them: their device-wide algorithms are refused here by name."""

CPP_RUNTIME_CODE = re.compile(
    r"\b(?:cu(?:Module|Library)Load\w*|cudaLibraryLoad\w*|nvrtc\w*|nvJitLink\w*"
    r"|cuLink(?:Create|AddData|AddFile|Complete)\w*)"
)
"""C++ that compiles GPU code at run time (NVRTC, nvJitLink, the driver's linker) or loads a
module from bytes or a file (``cuModuleLoadData``, ``cuLibraryLoadData``): kernels whose code
no source the judge reads holds, such as CUB's kernels compiled by name or a cubin built
elsewhere (fifty-second session). Behind it stand the extension's imports
(:data:`upskills.verify.libraries.LOADER`)."""

CPP_L2_PERSISTENCE = re.compile(
    r"\b(?:accessPolicyWindow|\w*AccessPolicyWindow|\w*ACCESS_POLICY_WINDOW|\w*PersistingL2\w*"
    r"|\w*PERSISTING_L2\w*"
    r"|cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING)\b"
)
"""C++ that sets lines of L2 aside for given addresses (an access policy window, the persisting
L2 limit): they outlive the judge's L2 flush between timed calls, so a kernel would read its
inputs from L2 when timed and be credited with bandwidth it does not have. A single call gains
nothing from it; only repeated calls on the same buffers do, which is the timer's loop."""


CPP_HIDDEN_OPS = re.compile(
    r"DispatchKeyGuard|\btls_set_dispatch_key_\w+|\w*tls_local_dispatch_key_set|\w+ModeTLS\b"
    r"|\w+DispatcherTLS\b|\w+TorchFunctionTLS\b|\bThreadLocalState\w*|\bredispatch\b"
    r"|\bDispatcher\s*::|\bfindSchema\w*|\bDispatchKey\s*::\s*Python\w*"
    r"|\bstd\s*::\s*(?:j?thread|async)\b|\b(?:pthread|thrd)_create\b|#\s*pragma\s+omp\b"
    r"|\bat\s*::\s*(?:launch|intraop_launch)\b|\b(?:v?fork|posix_spawnp?|popen|system|syscall)\s*\("
    r"|\bat\s*::\s*(?:cpu|meta|mps|composite\w*)\s*::|\b(?:CPU|CUDA|Meta|MPS|Composite\w*)Functions"
    r"(?:_inl)?\.h|_(?:cpu|cuda|meta|composite\w*)_dispatch\.h"
    r"|\bTORCH_LIBRARY\w*|\btorch\s*::\s*Library\b|\bRegisterOperators\b|torch/library\.h"
)
"""C++ that runs PyTorch's ops out of the op recorder's sight: it changes the thread's dispatch
keys, calls the dispatcher itself or an op's per-backend kernel past it (``at::cpu::add``, and
the headers that declare them), registers a kernel of its own for an op (``TORCH_LIBRARY_IMPL``,
``torch::Library``: the recorder calls a seen op with its mode popped, so ATen inside that
kernel reaches no mode), or starts a thread or a process (see
:data:`upskills.verify.libraries.HIDING_NAMES`, the fence behind this rule)."""

CPP_PYTHON_CALLS = re.compile(
    r"\.\s*attr\s*\(|\bpy(?:bind11)?\s*::\s*(?:module_?|object|function|handle|eval\w*|exec"
    r"|globals|getattr|hasattr|import|reinterpret_borrow|reinterpret_steal)\b"
    r"|\bPy(?:Object|Import|Run|Eval|Sys|Module|Dict|Capsule)_\w+|__globals__|__builtins__"
    r"|__import__"
)
"""C++ that reaches Python objects by name: from there it can turn the op recorder off
(``torch._C._DisableTorchDispatch``, found 2026-12-05) and call torch, with nothing in its
imports to show it (every extension imports ``PyObject_GetAttrString``). A kernel's C++ takes
tensors and numbers."""


CPP_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
"""C++ comments: the rules on running ops out of sight read code, not a kernel's explanations
("a std::thread per row would be slower"). A ``//`` inside a string literal cuts the line
short for them; what the static rules miss, the imports show (:mod:`upskills.verify.libraries`)."""


def cpp_issues(text: str) -> list[tuple[str, str]]:
    """``(message, rule)`` for each C++ rule ``text`` breaks; none unless it is C++ source."""
    if not CPP_MARKERS.search(text):
        return []
    out: list[tuple[str, str]] = []
    if found := CPP_LIBRARY_CALLS.search(text):
        out.append(
            (
                f"(b) the C++ source calls {found.group(0).strip()!r}: a library doing the "
                "work is not the candidate's kernel",
                "vendor_library",
            )
        )
    if loaded := CPP_RUNTIME_CODE.search(text):
        out.append(
            (
                f"(b) the C++ source compiles or loads GPU code at run time "
                f"({loaded.group(0)!r}): kernels no source the judge reads holds are not the "
                "candidate's kernel; write them in the extension's CUDA source",
                "vendor_library",
            )
        )
    if kept := CPP_L2_PERSISTENCE.search(text):
        out.append(
            (
                f"(d) the C++ source uses {kept.group(0)!r}: L2 lines set aside across calls "
                "outlive the L2 flush between timed calls",
                "l2_persistence",
            )
        )
    code = CPP_COMMENT.sub(" ", text)
    if hidden := CPP_HIDDEN_OPS.search(code):
        out.append(
            (
                f"(b) the C++ source uses {hidden.group(0).strip()!r}: PyTorch's ops run there "
                "out of the op recorder's sight (dispatch keys changed, past the dispatcher, "
                "inside a kernel registered for an op, or on a thread or process of its own)",
                "hidden_ops",
            )
        )
    if python := CPP_PYTHON_CALLS.search(code):
        out.append(
            (
                f"(b) the C++ source uses {python.group(0).strip()!r}: C++ that reaches Python "
                "objects by name can turn the op recorder off; a kernel's C++ takes tensors",
                "python_from_cpp",
            )
        )
    return out
