"""The import guards against the corpus's CUDA finals, on a machine without a GPU.

What an extension imports is fixed when it is compiled, so nvcc alone answers whether an honest
kernel would trip :func:`upskills.verify.libraries.symbol_rule` (``vendor_library``, and since
2026-12-05 ``hidden_ops``): each final CUDA kernel of the corpus
is run with ``load_inline`` replaced by a recorder, its ``cuda_sources`` are compiled with nvcc
into a shared object (against this machine's torch headers; the cuBLAS/cuSPARSE/cuSOLVER
headers torch includes are stubbed with the few typedefs the declarations need, because a
CUDA toolkit without those libraries has none), and the object's undefined symbols are matched.
The hidden-SGEMM attack of ``scan_extensions.py`` goes through the same steps and must match.

Usage: python benchmarks/verifier_v2/scan_extensions_local.py traces/corpus-live [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
import tempfile
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus_live"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from recheck import finals  # noqa: E402  # pyright: ignore[reportMissingImports]
from scan_extensions import ATTACK  # noqa: E402  # pyright: ignore[reportMissingImports]

from upskills.trace import read_trace  # noqa: E402
from upskills.verify.libraries import symbol_rule, undefined_symbols  # noqa: E402

STUBS = {
    "cusparse.h": "typedef struct cusparseContext* cusparseHandle_t;\n"
    "typedef int cusparseStatus_t;",
    "cublas_v2.h": "typedef struct cublasContext* cublasHandle_t;\ntypedef int cublasStatus_t;",
    "cublasLt.h": "typedef struct cublasLtContext* cublasLtHandle_t;",
    "cusolverDn.h": "typedef struct cusolverDnContext* cusolverDnHandle_t;",
    "cusolver_common.h": "typedef int cusolverStatus_t;",
    "c10/cuda/impl/cuda_cmake_macros.h": "",
}
"""Headers a CUDA toolkit without cuBLAS & co. lacks: declarations only, no function."""

PRELUDE = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
"""What ``load_inline`` puts before ``cuda_sources``."""


def cuda_sources(source: str, name: str) -> list[str]:
    """The ``cuda_sources`` a kernel module passes to ``load_inline`` (recorded, not built)."""
    import torch.utils.cpp_extension as ce

    seen: list[str] = []

    def record(*args: Any, **kwargs: Any) -> Any:
        cuda = kwargs.get("cuda_sources", args[2] if len(args) > 2 else None)
        seen.append(cuda if isinstance(cuda, str) else "\n".join(cuda or []))
        return types.SimpleNamespace()

    real, ce.load_inline = ce.load_inline, record
    try:
        exec(compile(source, name, "exec"), {"__name__": "scan"})  # noqa: S102 - our own corpus
    except Exception:  # noqa: BLE001, S110 - module code after load_inline may need the GPU
        pass
    finally:
        ce.load_inline = real
    return [s for s in seen if s]


def include_dirs(root: Path) -> list[str]:
    """Write the header stubs under ``root``; the include path for a CUDA source of torch's."""
    import torch.utils.cpp_extension as ce

    for header, text in STUBS.items():
        (root / "stubs" / header).parent.mkdir(parents=True, exist_ok=True)
        (root / "stubs" / header).write_text("#pragma once\n" + text + "\n")
    return [str(root / "stubs"), *ce.include_paths(), sysconfig.get_paths()["include"]]


def compile_and_scan(name: str, cu: str, root: Path, includes: list[str]) -> dict[str, Any]:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cu").write_text(PRELUDE + cu)
    # the CUDA runtime linked as torch links an extension (-lcudart), not nvcc's static default,
    # which imports dlopen, pthread_create and syscall itself
    cmd = ["nvcc", "-shared", "-cudart", "shared", "-Xcompiler", "-fPIC", "-arch=sm_90"]
    cmd += ["-std=c++17", "-O1"]
    cmd += [f"-I{i}" for i in includes] + ["-o", str(folder / "k.so"), str(folder / "k.cu")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        return {"name": name, "error": proc.stderr.strip().splitlines()[-1:]}
    imports = undefined_symbols((folder / "k.so").read_bytes())
    denied = sorted(f"{rule}: {n}" for n in imports if (rule := symbol_rule(n)))
    return {"name": name, "imports": len(imports), "denied": denied}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="scan-local-"))
    includes = include_dirs(root)
    jobs = [
        (f"attack_hidden_cublas_sgemm:{i}", cu) for i, cu in enumerate(cuda_sources(ATTACK, "a"))
    ]
    folders = sorted(p for p in args.corpus.iterdir() if (p / "trace.jsonl").exists())
    for folder in finals(folders):
        end = read_trace(folder / "trace.jsonl").end
        if end and end.best_kernel_source and "load_inline" in end.best_kernel_source:
            for i, cu in enumerate(cuda_sources(end.best_kernel_source, folder.name)):
                jobs.append((f"{folder.name}:{i}", cu))
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda j: compile_and_scan(j[0], j[1], root, includes), jobs))
    for row in rows:
        print(json.dumps(row), flush=True)
    honest = [r for r in rows if not r["name"].startswith("attack")]
    attack = [r.get("denied") for r in rows if r["name"].startswith("attack")]
    print(
        f"honest extensions: {len(honest)}, compiled: {sum('imports' in r for r in honest)}, "
        f"with a denied import: {[r['name'] for r in honest if r.get('denied')]}; "
        f"attack denied imports: {attack}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
