"""Who the candidate's process is, and what it linked (vendor libraries doing the work).

The judge takes the connection of the candidate's process only: the kernel names the peer of
its socket (``SO_PEERCRED``), and the peer must be a child of the candidate zygote. A process an
earlier candidate left running (daemonised out of its process group) could otherwise find the
judge's abstract socket in ``/proc/net/unix``, connect first and answer for a later candidate
with outputs computed any way it likes.

A CUDA candidate's C++ (``load_inline``) can call cuBLAS, cuDNN or ATen's native functions
directly. Those calls bypass the dispatcher, so the op recorder does not see them, and they do
the compute the candidate was asked to write: a "GEMM kernel" that calls ``cublasGemmEx``
times like ``torch.matmul`` and is not the candidate's. The static guard reads the C++ in the
candidate's string literals; this module is the fence behind it, for C++ the static guard
cannot read (assembled at run time, or a prebuilt ``.so`` planted in a compile cache).

After the trials the judge reads the memory map of the candidate's process (its pid and user
from the socket's ``SO_PEERCRED``, which the candidate cannot forge), takes every shared object
the candidate could have made (owned by the candidate's user when that is not the judge's;
else the judge's user's files under a temporary or cache folder), and lists the *undefined*
dynamic symbols each one imports: a symbol of a denied library there means the object calls
it.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import struct
import sys
import tempfile
from pathlib import Path

from upskills.verify.guards import ALLOWED_OPS
from upskills.verify.verdict import ErrorClass, VerdictStage
from upskills.verify.worker import StageFailure

DENIED = re.compile(
    r"^(cublas|cublasLt|cudnn|cufft|cusparse|cusolver)\w*"
    r"|^_ZN2at6native"  # at::native::...
    r"|^_ZN2at4cuda4blas"  # at::cuda::blas::...
)
"""Imported symbols that do a kernel's compute in a vendor library or ATen's native code."""

LOADER = re.compile(
    r"^(?:dlopen|dlmopen|dlsym|dlvsym|cu(?:Module|Library)Load\w*|cudaLibraryLoad\w*"
    r"|nvrtc\w+|nvJitLink\w+|cuLink(?:Create|AddData|AddFile|Complete)\w*)$"
)
"""Imports that find a library's functions at run time, by a name no import table shows, or
compile and load GPU code the object does not hold.

A candidate's object that imports ``dlopen``/``dlsym`` can call cuBLAS under a name assembled
at run time (or declare ``dlsym`` under a name the static guard cannot read). One that imports
NVRTC, nvJitLink, the driver's linker or its module loaders runs kernels compiled or loaded at
run time: CUB's kernels compiled by name, or a cubin built elsewhere, whose names
:func:`library_kernels` cannot read in the object (fifty-second session). They are denied in
candidate-made objects, except in Triton's own helpers (:data:`TRITON_HELPER`), which reach
the driver through ``dlsym`` and import none of the others."""

HIDING_NAMES = frozenset(
    """TorchDispatchModeTLS PythonDispatcherTLS ThreadLocalState Dispatcher redispatch launch
    intraop_launch intraop_launch_future invoke_parallel ThreadPool TaskThreadPoolBase
    enableRecordFunction isRecordFunctionEnabled addGlobalCallback addThreadLocalCallback
    clearCallbacks clearGlobalCallbacks clearThreadLocalCallbacks disableCallback
    reenableCallback removeCallback getStepCallbacks getStepCallbacksUnlessEmpty
    get_record_function_tls_ set_record_function_tls_ hasCallbacks hasGlobalCallbacks
    hasThreadLocalCallbacks profiler Library TorchLibraryInit RegisterOperators""".split()
)
"""Names in torch's C++ (under ``at::``, ``c10::`` or ``torch::``) that run an op where the op
recorders cannot see it, and that an honest extension does not import.

The op recorder is a ``TorchDispatchMode``, called only while the thread's dispatch keys
include ``Python``; the shadow profile behind it (:mod:`upskills.verify.shadow_ops`) rests on
RecordFunction, which fires in the dispatcher's entry on this thread. Found 2026-12-05
(``tests/verify/test_load_inline.py``): an extension that computed ``x + y`` with ATen on a
thread of its own (a new thread has none of the caller's keys and none of its RecordFunction
callbacks) passed as the candidate's kernel; so would one that pops the mode, calls
``redispatch`` (no RecordFunction) or the ``Dispatcher`` itself, carries another thread's
``ThreadLocalState``, uses ATen's thread pools, or switches RecordFunction or the profiler off;
or one that registers a kernel of its own for an op (``torch::Library``, behind
``TORCH_LIBRARY_IMPL``): an ``empty_like`` kernel registered for one forward returned ``x + y``
and passed, since the recorder calls the ops it sees with its mode popped.
Not denied: ``ExcludeDispatchKeyGuard``, which hides an op from the mode (not from the shadow
profile) when it excludes ``Python``, because every extension that calls ``torch::empty_like``
imports it (the factory excludes the autograd keys with it); nor the functions that set the
thread's keys, for the same reason and for ``InferenceMode``."""

BACKEND_NAMESPACES = frozenset(
    """cpu cuda meta mps compositeexplicitautograd compositeexplicitautogradnonfunctional
    compositeimplicitautograd compositeimplicitautogradnestedtensor""".split()
)
"""``at::<backend>::<op>``: ATen's per-backend entry points (``ATen/CPUFunctions.h`` and the
like) call an op's kernel for that backend without the dispatcher. Found 2026-12-05: an
extension returning ``at::cpu::add(x, y)`` passed as the candidate's kernel."""

HOST_MEMORY_IMPORTS = re.compile(
    r"^(?:cudaHostAlloc|cudaMallocHost|cudaHostRegister|cudaHostGetDevicePointer"
    r"|cudaMallocManaged|__cudaRegisterManagedVar|cudaMemcpyFromSymbol\w*"
    r"|cuMemHostAlloc|cuMemAllocHost|cuMemHostRegister|cuMemHostGetDevicePointer"
    r"|cuMemAllocManaged|cuMemcpyDtoH\w*)(?:_v\d+)?$"
)
"""Imports that give a GPU kernel host memory (pinned, registered, managed) or copy to the host
by name: an extension's C++ loop then computes on the host what the kernels only moved
(guard ``python_fallback``; the static words behind them are :mod:`~upskills.verify.static_host`'s).
``cudaMemcpy`` itself is not denied: honest extensions copy on the device with it, and its
direction is an argument, which the GPU's own copy records show at run time
(:func:`upskills.verify.shadow_ops.host_copy_bytes`)."""

HOST_ALLOCATOR_NAMES = frozenset(
    {"getPinnedMemoryAllocator", "getCachingHostAllocator", "getHostAllocator"}
)
"""PyTorch's pinned-memory allocators (``at::cuda::``, ``at::``), reached from C++."""

OP_SUFFIX = re.compile(r"(?:_symint)?(?:_outf?)?$")
"""Suffixes of the per-backend functions of one op (``add_out``, ``add_outf``, ``add_symint``)."""


@functools.cache
def aten_op_names() -> frozenset[str]:
    """Names of the ``aten`` ops this torch registers, without overloads (``add``, ``add_``)."""
    import torch

    names = torch._C._dispatch_get_all_op_names()  # pyright: ignore[reportPrivateUsage]
    return frozenset(n[6:].split(".")[0] for n in names if n.startswith("aten::"))


def _backend_op(parts: list[str]) -> bool:
    """Is ``at::<backend>::<name>`` an op's kernel called past the dispatcher?

    Allocations and views are not counted: the recorder lets them through anyway.
    """
    if len(parts) < 3 or parts[0] != "at" or parts[1] not in BACKEND_NAMESPACES:
        return False
    op = OP_SUFFIX.sub("", parts[2])
    return op not in ALLOWED_OPS and (op in aten_op_names() or parts[2] in aten_op_names())


WORKER = re.compile(
    r"^(pthread_create|thrd_create|GOMP_(parallel|task|teams)\w*|__kmpc_fork_\w+|fork|vfork"
    r"|clone3?|posix_spawnp?|execv\w*|execl\w*|fexecve|system|popen)$"
)
"""Imports that start a thread or a process: a native thread starts with none of the calling
thread's dispatch keys, so an op it runs bypasses the recorder (``std::thread`` is matched by
:func:`symbol_rule`); a process computes out of the judge's sight. Not ``syscall``: every
honest extension built on the GPU machine (torch 2.11) imports it, which ``SCAN=1`` found on
its first run (2026-12-05, ``benchmarks/results/verifier_v2/scan_extensions_h100_session30.json``);
this machine's torch 2.13 headers did not show it."""

TRITON_HELPER = re.compile(r"^(__triton_launcher|cuda_utils)\.cpython-[\w.-]+\.so$")
"""Objects Triton builds in its cache that load the CUDA driver with ``dlopen``/``dlsym``.

Found on the H200 (Triton 3.6, ``benchmarks/verifier_v2/so_imports.py``): each kernel's
``__triton_launcher`` and the driver's ``cuda_utils`` import ``dlopen`` and ``dlsym``. They are
let through only under a Triton cache folder (named by a 52-character base32 key) and when they
import nothing of torch (Triton's helpers never link it; an extension that does the
candidate's work reads tensors through torch's symbols)."""

TRITON_KEY = re.compile(r"^[A-Z2-7]{52}$")
"""A Triton cache folder's name (the base32 key of what it holds)."""

TORCH_SYMBOL = re.compile(r"^_ZN(2at|3c10|5torch)")

LIBRARY_SYMBOL = re.compile(rb"_ZN(?:3cub|6thrust)\w+")
"""A mangled name in CUB's or Thrust's namespace, anywhere in an object's bytes."""

LIBRARY_KERNEL = re.compile(r"(?:\w*Kernel(?:Small|Large)?|\w*_kernel|_kernel_agent\w*|kernel)")
"""The last part of a CUB or Thrust ``__global__``'s name (``DeviceSegmentedReduceKernel``,
``DeviceRadixSortOnesweepKernel``, Thrust's ``_kernel_agent``, ``for_each``'s
``static_kernel``); matched whole."""

NOT_LIBRARY_WORK = frozenset({"EmptyKernel", "ExampleKernel"})
"""CUB kernels that do no work: ``EmptyKernel`` is compiled into every object that includes
``cub/cub.cuh`` (CUB launches it to read the PTX version); ``ExampleKernel`` is its docs'."""

NVTX_LOADER = b"NVTX_INJECTION64_PATH"
"""The variable NVTX's header-only injection loader reads: an object holding it was compiled
with NVTX, whose loader imports ``dlopen`` and ``dlsym``. ``<cub/cub.cuh>`` brings it (CUB's
device-wide algorithms open NVTX ranges), so an honest kernel using ``cub::BlockReduce``
through that header imports the loader too (found on an H100, 2026-12-07). The loader stays
denied (the same imports reach cuBLAS by name); the verdict says where it came from."""

NVTX_HINT = (
    " (NVTX's injection loader, which <cub/cub.cuh> brings: include CUB's block or warp "
    "header alone, e.g. <cub/block/block_reduce.cuh>, or define NVTX_DISABLE first)"
)

MAX_BYTES = 512 << 20
"""Shared objects larger than this are not read (a candidate's extension is a few MB)."""


def peer(conn: socket.socket) -> tuple[int, int] | None:
    """``(pid, uid)`` of the process at the other end of a Unix socket (the kernel's word)."""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, uid, _ = struct.unpack("3i", raw)
    return (pid, uid) if pid else None


def parent_of(pid: int) -> int | None:
    """The parent pid of ``pid`` (from ``/proc/PID/stat``), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
    return int(fields[1]) if len(fields) > 1 else None


def undefined_symbols(data: bytes) -> set[str]:
    """Names a 64-bit little-endian ELF shared object imports (empty for anything else)."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return set()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections: list[tuple[int, int, int, int]] = []  # type, offset, size, link
    for i in range(shnum):
        at = shoff + i * shentsize
        if at + 64 > len(data):
            return set()
        kind = struct.unpack_from("<I", data, at + 4)[0]
        offset, size, link = struct.unpack_from("<QQI", data, at + 24)
        sections.append((kind, offset, size, link))
    names: set[str] = set()
    for kind, offset, size, link in sections:
        if kind != 11 or link >= len(sections):  # SHT_DYNSYM
            continue
        _, str_off, str_size, _ = sections[link]
        strtab = data[str_off : str_off + str_size]
        for at in range(offset, min(offset + size, len(data) - 23), 24):
            name_at, _, _, shndx = struct.unpack_from("<IBBH", data, at)
            if shndx != 0 or not name_at or name_at >= len(strtab):
                continue
            end = strtab.find(b"\0", name_at)
            names.add(strtab[name_at : end if end >= 0 else len(strtab)].decode(errors="replace"))
    return names


def _candidate_made(path: str, owner: int, candidate_uid: int) -> bool:
    """Could the candidate have written this file?

    A candidate of another user than the judge's writes files its user owns; one of the
    judge's user, files of that user in a temporary or cache folder (where compilers put their
    output), outside the installed Python and its packages (a venv under /tmp is installed, and
    torch's own libraries import cuBLAS and ATen's native code). Files of any other user (a
    system-wide torch for a judge that is not root) are installed, not made.
    """
    if candidate_uid != os.geteuid():
        return owner == candidate_uid
    if owner != candidate_uid or any(path.startswith(p) for p in installed_prefixes()):
        return False
    home = Path.home()
    writable = [tempfile.gettempdir(), str(home / ".cache"), str(home / ".triton")]
    writable += [os.environ.get("TORCH_EXTENSIONS_DIR", ""), os.environ.get("TRITON_CACHE_DIR", "")]
    return any(path.startswith(w.rstrip("/") + "/") for w in writable if w)


@functools.cache
def installed_prefixes() -> list[str]:
    """Folders of the installed Python and its packages (a venv may well sit under /tmp).

    Also each folder on the judge's ``sys.path`` that holds installed distributions
    (``*.dist-info``): packages installed with ``pip install --target`` onto ``PYTHONPATH``, as
    the GPU machine's carried wheels are in ``/tmp/site``. Until 2026-12-03 pydantic's compiled
    core there, which imports ``dlsym`` and which the candidate's host process loads, read as the
    candidate's own object, and every candidate of the judge's user failed guard (b) on the H200.
    Cached, and read by the judge's zygote before any candidate runs, so a candidate of the
    judge's user cannot make a folder "installed" by writing a ``.dist-info`` into it.
    """
    import site
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    try:
        roots.update(site.getsitepackages())
    except AttributeError:  # some embedded interpreters lack it
        pass
    roots.update(entry for entry in sys.path if entry and _holds_distributions(Path(entry)))
    return [str(Path(r).resolve()).rstrip("/") + "/" for r in roots if r]


def _holds_distributions(folder: Path) -> bool:
    """Does this ``sys.path`` folder hold installed distributions (a ``*.dist-info`` folder)?"""
    try:
        return folder.is_dir() and any(folder.glob("*.dist-info"))
    except OSError:
        return False


def mapped_objects(pid: int, uid: int) -> dict[str, str]:
    """Shared objects mapped into ``pid`` the candidate could have made: path -> a readable path.

    A deleted file is read through ``/proc/PID/map_files`` where that is allowed.
    """
    found: dict[str, str] = {}
    try:
        lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        path = parts[5]
        deleted = path.endswith(" (deleted)")
        path = path.removesuffix(" (deleted)")
        if path in found or ".so" not in Path(path).name:
            continue
        readable = f"/proc/{pid}/map_files/{parts[0]}" if deleted else path
        try:
            st = os.stat(readable)
        except OSError:
            continue
        if _candidate_made(path, st.st_uid, uid):
            found[path] = readable
    return found


def library_kernels(data: bytes) -> set[str]:
    """CUB's and Thrust's device-wide kernels compiled into an object (``cub::...::Name``).

    CUB, Thrust and CUTLASS are headers: an extension that calls their device-wide
    algorithms imports nothing (:func:`undefined_symbols` cannot see them) but holds the
    library's ``__global__`` functions. Their names are read from the object's bytes, not its
    symbol table: a stripped object keeps them in the strings it registers its kernels with
    (``__cudaRegisterFunction``) and in its device code's section names. A name the C++
    assembled with the preprocessor is mangled like any other, so this is the fence behind
    :data:`~upskills.verify.static_cpp.CPP_LIBRARY_CALLS`.
    """
    found: set[str] = set()
    for match in set(LIBRARY_SYMBOL.findall(data)):
        parts = nested_names(match.decode("ascii"))
        if parts and parts[-1].startswith("__wrapper__device_stub_"):
            parts[-1] = parts[-1].removeprefix("__wrapper__device_stub_")
        if (
            len(parts) > 1
            and LIBRARY_KERNEL.fullmatch(parts[-1])
            and parts[-1] not in NOT_LIBRARY_WORK
        ):
            found.add("::".join(parts))
    return found


def nested_names(symbol: str) -> list[str]:
    """The qualified name's parts of an Itanium-mangled C++ symbol: ``std``, ``thread``, ...

    Only the leading nested name (``_ZN...``, also a thread-local's ``_ZTW``/``_ZTH`` wrapper)
    is read, up to its first part that is not a plain identifier; anything else gives ``[]``.
    A part of internal linkage (GCC's ``L`` before its length) is read like any other.
    """
    head = re.match(r"_Z(?:T[HW])?N[rVKRO]*", symbol)
    if head is None:
        return []
    at, parts = head.end(), list[str]()
    if symbol.startswith("St", at):
        parts.append("std")
        at += 2
    while at < len(symbol):
        if symbol[at] == "L" and symbol[at + 1 : at + 2].isdigit():
            at += 1
        if not symbol[at].isdigit():
            break
        digits = re.match(r"\d+", symbol[at:])
        assert digits is not None
        start = at + digits.end()
        parts.append(symbol[start : start + int(digits.group())])
        at = start + int(digits.group())
    return parts


def symbol_rule(name: str, triton_helper: bool = False) -> str | None:
    """The guard an imported symbol breaks (``vendor_library``, ``hidden_ops``, ...) or None.

    ``triton_helper``: the object is one of Triton's own helpers (:func:`_triton_helper`),
    which load the driver by name and call nothing of torch.
    """
    if DENIED.match(name) or (LOADER.match(name) and not triton_helper):
        return "vendor_library"
    parts = nested_names(name)
    if not triton_helper and (
        HOST_MEMORY_IMPORTS.match(name) or HOST_ALLOCATOR_NAMES.intersection(parts)
    ):
        return "python_fallback"
    if parts[:1] in (["at"], ["c10"], ["torch"]) and HIDING_NAMES.intersection(parts[1:]):
        return "hidden_ops"
    if name.startswith("cupti") or parts[:1] == ["libkineto"]:
        return "hidden_ops"  # the GPU half of the shadow profile switched off (watched_speed.py)
    if _backend_op(parts):
        return "hidden_ops"
    if parts[:3] == ["std", "thread", "_M_start_thread"]:
        return "hidden_ops"
    if WORKER.match(name) and not triton_helper:
        return "hidden_ops"
    return None


def import_hits(pid: int, uid: int) -> list[tuple[str, str]]:
    """``(guard, "object: symbol")`` for each denied import of a candidate-made object.

    ``pid``: the candidate's process; ``uid``: its user. Guards: :func:`symbol_rule`.
    """
    hits: list[tuple[str, str]] = []
    for path, readable in sorted(mapped_objects(pid, uid).items()):
        try:
            if os.stat(readable).st_size > MAX_BYTES:
                continue
            data = Path(readable).read_bytes()
        except OSError:
            continue
        names = undefined_symbols(data)
        helper = _triton_helper(path, names)
        for kernel in sorted(library_kernels(data)):
            hits.append(("vendor_library", f"{Path(path).name}: {kernel}"))
        nvtx = NVTX_LOADER in data
        for name in sorted(names):
            if rule := symbol_rule(name, helper):
                why = NVTX_HINT if nvtx and name.startswith("dl") else ""
                hits.append((rule, f"{Path(path).name}: {name}{why}"))
    return hits


def _triton_helper(path: str, imports: set[str]) -> bool:
    """Is this one of Triton's own helpers in its cache (see :data:`TRITON_HELPER`)?"""
    where = Path(path)
    return (
        TRITON_HELPER.match(where.name) is not None
        and TRITON_KEY.match(where.parent.name) is not None
        and not any(TORCH_SYMBOL.match(n) for n in imports)
    )


def accept_candidate(
    listener: socket.socket, parent: int | None, impostors: list[str]
) -> tuple[socket.socket, tuple[int, int] | None]:
    """The connection whose process is a child of ``parent`` (None: the first connection).

    Other processes are turned away and listed in ``impostors``.
    """
    while True:
        conn, _ = listener.accept()
        who = peer(conn)
        if parent is None or (who is not None and parent_of(who[0]) == parent):
            return conn, who
        impostors.append(f"pid {who[0]}, uid {who[1]}" if who else "unknown process")
        conn.close()


GUARD_MESSAGES = {
    "vendor_library": "calls a library to do the work, or finds or loads code at run time",
    "hidden_ops": "runs PyTorch's ops where the op recorder cannot see them (past the "
    "dispatcher, inside a kernel it registers for an op, or on a thread or process of its own)",
    "python_fallback": "gives its kernels host memory or copies to the host by name (pinned, "
    "registered or managed memory, cuMemcpyDtoH): the work then runs on the host",
}
"""What each import guard says the candidate's process did."""


def check_libraries(pid: int, uid: int, display: str) -> None:
    """Raise the guard of the first denied import the candidate's process linked.

    Denied: a vendor library's or ATen's compute, or a run-time loader outside Triton's helpers
    (``vendor_library``); code that runs ops out of the op recorder's sight (``hidden_ops``);
    host memory for kernels, or a copy to the host, by name (``python_fallback``).
    """
    hits = import_hits(pid, uid)
    if hits:
        guard = hits[0][0]
        named = [hit for rule, hit in hits if rule == guard]
        raise StageFailure(
            ErrorClass.GUARD,
            VerdictStage.GUARDS,
            f"{display}: guard (b) its process loaded code that {GUARD_MESSAGES[guard]} "
            f"({'; '.join(named[:3])}{'; ...' if len(named) > 3 else ''}): the compute must be "
            "the candidate's own kernels",
            guard=guard,
        )
