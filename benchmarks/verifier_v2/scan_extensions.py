"""Does the vendor-library guard leave honest CUDA kernels alone, and catch a hidden cuBLAS call?

Builds the ``load_inline`` extensions of every final CUDA kernel of the corpus (in parallel,
each in a folder of its own) plus two attacks (a GEMM "kernel" whose extension calls
``cublasSgemm_v2``, and a row sum whose C++ calls CUB's ``DeviceSegmentedReduce``, each under a
name assembled by the preprocessor), then lists, for each built shared object, the imports
:func:`upskills.verify.libraries.symbol_rule` denies (``vendor_library``; ``hidden_ops`` since
2026-12-05) and the CUB or Thrust kernels compiled into it
(:func:`upskills.verify.libraries.library_kernels`, since 2026-12-07). A GPU machine
with nvcc is needed (the extensions link against torch's CUDA libraries).

Usage: python benchmarks/verifier_v2/scan_extensions.py traces/corpus-live --out scan.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus_live"))

from recheck import finals  # noqa: E402  # pyright: ignore[reportMissingImports]

from upskills.trace import read_trace  # noqa: E402
from upskills.verify.libraries import library_kernels, symbol_rule, undefined_symbols  # noqa: E402

ATTACK = r'''
import torch
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
#define JOIN(a, b) a##b
extern "C" int JOIN(cubl, asCreate_v2)(void**);
extern "C" int JOIN(cubl, asSgemm_v2)(void*, int, int, int, int, int, const float*,
    const float*, int, const float*, int, const float*, float*, int);
torch::Tensor mm(torch::Tensor a, torch::Tensor b) {
  auto c = torch::empty({a.size(0), b.size(1)}, a.options());
  float one = 1.f, zero = 0.f;
  static void* handle = nullptr;
  if (!handle) JOIN(cubl, asCreate_v2)(&handle);
  JOIN(cubl, asSgemm_v2)(handle, 0, 0, b.size(1), a.size(0),
      a.size(1), &one, b.data_ptr<float>(), b.size(1), a.data_ptr<float>(), a.size(1), &zero,
      c.data_ptr<float>(), b.size(1));
  return c;
}
"""
DECL = "torch::Tensor mm(torch::Tensor a, torch::Tensor b);"
ext = load_inline("scan_attack_sgemm", cpp_sources=DECL, cuda_sources=SRC, functions=["mm"])
a, b = torch.randn(64, 32, device="cuda"), torch.randn(32, 16, device="cuda")
assert torch.allclose(ext.mm(a, b), a @ b, atol=1e-4)
'''

CUB_ATTACK = r'''
import torch
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
#include <cub/cub.cuh>
#define J(a, b) a##b
__global__ void offsets(int* o, int rows, int n) {
  for (int i = threadIdx.x; i <= rows; i += blockDim.x) o[i] = i * n;
}
torch::Tensor row_sum(torch::Tensor x) {
  const int rows = x.size(0), n = x.size(1);
  auto y = torch::empty({rows}, x.options());
  auto off = torch::empty({rows + 1}, x.options().dtype(torch::kInt32));
  int* o = off.data_ptr<int>();
  offsets<<<1, 256>>>(o, rows, n);
  size_t bytes = 0;
  cub::J(Device, SegmentedReduce)::Sum(nullptr, bytes, x.data_ptr<float>(), y.data_ptr<float>(),
      rows, o, o + 1);
  auto tmp = torch::empty({(int64_t)bytes + 1}, x.options().dtype(torch::kUInt8));
  cub::J(Device, SegmentedReduce)::Sum(tmp.data_ptr(), bytes, x.data_ptr<float>(),
      y.data_ptr<float>(), rows, o, o + 1);
  return y;
}
"""
DECL = "torch::Tensor row_sum(torch::Tensor x);"
ext = load_inline("scan_attack_cub", cpp_sources=DECL, cuda_sources=SRC, functions=["row_sum"])
x = torch.randn(37, 301, device="cuda")
assert torch.allclose(ext.row_sum(x), x.sum(-1), atol=1e-3)
'''
ATTACKS = {"attack_hidden_cublas_sgemm": ATTACK, "attack_cub_segmented_reduce": CUB_ATTACK}


def build(name: str, source: str, root: Path) -> dict[str, object]:
    folder = root / name
    folder.mkdir(parents=True)
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(folder))
    proc = subprocess.run(
        [sys.executable, "-c", source], env=env, capture_output=True, text=True, timeout=400
    )
    objects = sorted(folder.rglob("*.so"))
    hits = sorted(
        f"{so.name}: {rule}: {sym}"
        for so in objects
        for sym in undefined_symbols(so.read_bytes())
        if (rule := symbol_rule(sym))
    )
    hits += sorted(
        f"{so.name}: vendor_library: {kernel}"
        for so in objects
        for kernel in library_kernels(so.read_bytes())
    )
    row: dict[str, object] = {"name": name, "built": len(objects), "denied": hits}
    if proc.returncode != 0:
        row["error"] = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--jobs", type=int, default=12)
    args = ap.parse_args()
    jobs: list[tuple[str, str]] = list(ATTACKS.items())
    for folder in finals(sorted(p for p in args.corpus.iterdir() if (p / "trace.jsonl").exists())):
        end = read_trace(folder / "trace.jsonl").end
        source = end.best_kernel_source if end else None
        if source and "load_inline" in source:
            jobs.append((folder.name, source))
    root = Path(tempfile.mkdtemp(prefix="scan-ext-"))
    rows: list[dict[str, object]] = []
    with ThreadPoolExecutor(args.jobs) as pool, args.out.with_suffix(".jsonl").open("w") as log:
        futures = [pool.submit(build, name, source, root) for name, source in jobs]
        for future in as_completed(futures):  # written as they finish: a cut run keeps them
            rows.append(future.result())
            print(json.dumps(rows[-1]), flush=True)
            log.write(json.dumps(rows[-1]) + "\n")
            log.flush()
    rows.sort(key=lambda r: (r["name"] not in ATTACKS, r["name"]))
    honest = [r for r in rows if r["name"] not in ATTACKS]
    attacks = [r for r in rows if r["name"] in ATTACKS]
    summary = {
        "honest_extensions": len(honest),
        "honest_built": sum(1 for r in honest if r["built"]),
        "honest_flagged": [r["name"] for r in honest if r["denied"]],
        "attacks_flagged": {r["name"]: bool(r["denied"]) for r in attacks},
        "attack_errors": {r["name"]: r["error"] for r in attacks if r.get("error")},
    }
    print(json.dumps(summary, indent=1))
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
