"""Probe (GPU machine, as root): can a process of another user share GPU memory with the judge?

The verifier keeps CUDA candidates under the judge's user because CUDA IPC handles
(`cudaIpcOpenMemHandle`) do not open across users ("mapping of buffer object failed", seen on
the H200). So a candidate can write the judge's files (the baseline cache: see
`docs/design/verifier.md`, fourth device session). This probe tries the other door: memory made
with the driver's virtual memory API and exported as a POSIX file descriptor
(`cuMemCreate` + `cuMemExportToShareableHandle(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)`). A file
descriptor passes to a child of another user through `exec` (`pass_fds`), so if the driver lets
that child import and map it, judge-owned buffers can reach an unprivileged candidate.

Steps: the parent (this user) fills a buffer with 7s; a child started as `nobody` imports the
descriptor, reads the buffer back (must be all 7s), writes 9s and exits; the parent reads 9s.
Each step's driver status is printed; the last line is `RESULT ok` or `RESULT failed: ...`.
Pure ctypes over libcuda (no torch in the child: it needs no Python packages readable by nobody).

Usage (on the GPU machine): python3 benchmarks/verifier_v2/cross_user_cuda_probe.py [--user nobody]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

N = 1 << 20
"""int32 elements in the probe buffer (4 MiB before rounding up to the granularity)."""


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class AllocationProp(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", AllocFlags),
    ]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


PINNED, POSIX_FD, ON_DEVICE, READ_WRITE = 1, 1, 1, 3


class Driver:
    """The few driver calls the probe needs; every call's status is checked and named."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")

    def __call__(self, name: str, *args: object) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise RuntimeError(f"{name} returned CUresult {status}")

    def context(self) -> None:
        self("cuInit", 0)
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self("cuDeviceGet", ctypes.byref(dev), 0)
        self("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self("cuCtxSetCurrent", ctx)

    def size(self) -> int:
        prop = _prop()
        gran = ctypes.c_size_t()
        self("cuMemGetAllocationGranularity", ctypes.byref(gran), ctypes.byref(prop), 0)
        g = gran.value
        return (N * 4 + g - 1) // g * g

    def map(self, handle: ctypes.c_ulonglong, size: int) -> ctypes.c_ulonglong:
        ptr = ctypes.c_ulonglong()
        zero = ctypes.c_ulonglong(0)
        self(
            "cuMemAddressReserve",
            ctypes.byref(ptr),
            ctypes.c_size_t(size),
            ctypes.c_size_t(0),
            zero,
            zero,
        )
        self("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, zero)
        desc = AccessDesc(Location(ON_DEVICE, 0), READ_WRITE)
        self("cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(desc), ctypes.c_size_t(1))
        return ptr

    def fill(self, ptr: ctypes.c_ulonglong, value: int) -> None:
        self("cuMemsetD32_v2", ptr, ctypes.c_uint(value), ctypes.c_size_t(N))
        self("cuCtxSynchronize")

    def all_equal(self, ptr: ctypes.c_ulonglong, value: int) -> bool:
        host = (ctypes.c_uint * N)()
        self("cuMemcpyDtoH_v2", host, ptr, ctypes.c_size_t(N * 4))
        return all(v == value for v in host)


def _prop() -> AllocationProp:
    prop = AllocationProp()
    prop.type = PINNED
    prop.requestedHandleTypes = POSIX_FD
    prop.location = Location(ON_DEVICE, 0)
    return prop


def child(fd: int, size: int) -> int:
    """As the other user: import, check the 7s, write 9s."""
    drv = Driver()
    drv.context()
    handle = ctypes.c_ulonglong()
    drv("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), POSIX_FD)
    ptr = drv.map(handle, size)
    if not drv.all_equal(ptr, 7):
        print("child: imported buffer does not hold the parent's 7s", flush=True)
        return 2
    drv.fill(ptr, 9)
    print(f"child (uid {os.getuid()}): imported, read 7s, wrote 9s", flush=True)
    return 0


def parent(user: str) -> int:
    drv = Driver()
    drv.context()
    size = drv.size()
    handle = ctypes.c_ulonglong()
    prop = _prop()
    flags = ctypes.c_ulonglong(0)
    drv("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), flags)
    ptr = drv.map(handle, size)
    drv.fill(ptr, 7)
    fd = ctypes.c_int(-1)
    drv("cuMemExportToShareableHandle", ctypes.byref(fd), handle, POSIX_FD, flags)
    print(f"parent (uid {os.getuid()}): {size} bytes, exported fd {fd.value}", flush=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp"}
    script = os.path.join(tempfile.mkdtemp(prefix="cross-user-probe-"), "probe.py")
    shutil.copyfile(os.path.abspath(__file__), script)  # readable by the other user
    os.chmod(os.path.dirname(script), 0o755)
    os.chmod(script, 0o644)
    proc = subprocess.run(
        [sys.executable, script, "--child", str(fd.value), str(size)],
        user=user if os.geteuid() == 0 else None,
        pass_fds=(fd.value,),
        env=env,
        cwd="/tmp",
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(proc.stdout + proc.stderr, end="", flush=True)
    if proc.returncode != 0:
        print(f"RESULT failed: child exit {proc.returncode}")
        return 1
    if not drv.all_equal(ptr, 9):
        print("RESULT failed: the parent does not see the child's 9s")
        return 1
    print("RESULT ok: a child of another user mapped the judge's buffer, read it and wrote it")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description="cross-user GPU memory probe")
    ap.add_argument("--user", default="nobody")
    ap.add_argument("--child", nargs=2, type=int, metavar=("FD", "SIZE"))
    args = ap.parse_args()
    try:
        return child(*args.child) if args.child else parent(args.user)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"RESULT failed: {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
