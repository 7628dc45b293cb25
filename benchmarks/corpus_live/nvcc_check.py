"""A CUDA attempt's device code compiled here, before any device time is spent on it.

The teacher's notes since round 7 say "checked here before the GPU: nvcc 13 for sm_90 ...":
registers, spills, and what the SASS shows. This is that check as a command. It runs the
attempt's module with ``load_inline`` replaced by a recorder (nothing is built or run, no GPU
needed), compiles each recorded ``cuda_sources`` with nvcc to an object for ``--arch``
(``-Xptxas -v``, torch's headers, the cuBLAS-family headers stubbed as in
``scan_extensions_local.py``), and prints per kernel its registers, spill bytes and stack, then,
with ``--sass PATTERN``, how many SASS lines of the object match each regular expression (which
needs ``cuobjdump``: the CUDA toolkit's, else the one Triton ships).

Usage: python benchmarks/corpus_live/nvcc_check.py ATTEMPT.py [--arch sm_90a] [--sass NANOSLEEP]
Exit status: 0 if every source compiled, 1 if one did not (nvcc's first error lines printed).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verifier_v2"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus_live"))

from scan_extensions_local import (  # noqa: E402  # pyright: ignore[reportMissingImports]
    PRELUDE,
    cuda_sources,
    include_dirs,
)

_FUNCTION = re.compile(r"Compiling entry function '(\w+)'|Function properties for (\w+)")
_SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGISTERS = re.compile(r"Used (\d+) registers")


def ptxas_report(log: str) -> list[dict[str, Any]]:
    """Per function in ptxas's ``-v`` output: name, registers, spill stores/loads, stack bytes."""
    rows: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in log.splitlines():
        if m := _FUNCTION.search(line):
            name = m.group(1) or m.group(2)
            if current is None or current["function"] != name:
                current = {"function": name}
                rows.append(current)
        elif current is not None and (m := _SPILLS.search(line)):
            current["stack"], current["spill_stores"], current["spill_loads"] = map(int, m.groups())
        elif current is not None and (m := _REGISTERS.search(line)):
            current["registers"] = int(m.group(1))
    return rows


def _cuobjdump() -> str | None:
    if found := shutil.which("cuobjdump"):
        return found
    try:
        import triton

        shipped = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        return str(shipped) if shipped.exists() else None
    except ImportError:
        return None


def check(
    source: str, name: str, arch: str, sass: list[str], root: Path, prelude: str = PRELUDE
) -> list[dict[str, Any]]:
    """Compile each ``cuda_sources`` of ``source``; one result per source.

    ``prelude`` is what ``load_inline`` puts before the sources (torch's headers); a test of
    this script's own logic passes a lighter one.
    """
    includes = include_dirs(root)
    results: list[dict[str, Any]] = []
    for i, cu in enumerate(cuda_sources(source, name)):
        unit = root / f"k{i}.cu"
        unit.write_text(prelude + cu)
        cmd = ["nvcc", "-c", f"-arch={arch}", "-std=c++17", "-O3", "-Xptxas", "-v"]
        cmd += [f"-I{p}" for p in includes] + ["-o", str(unit.with_suffix(".o")), str(unit)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        result: dict[str, Any] = {"source": i}
        if proc.returncode:
            lines = proc.stderr.strip().splitlines()
            result["error"] = [line for line in lines if "error" in line][:5] or lines[-3:]
        else:
            result["functions"] = ptxas_report(proc.stderr)
            if sass:
                result["sass"] = _sass_counts(unit.with_suffix(".o"), sass)
        results.append(result)
    return results


def _sass_counts(obj: Path, patterns: list[str]) -> dict[str, int] | str:
    tool = _cuobjdump()
    if tool is None:
        return "no cuobjdump here"
    text = subprocess.run([tool, "-sass", str(obj)], capture_output=True, text=True).stdout
    lines = text.splitlines()
    return {p: sum(bool(re.search(p, line)) for line in lines) for p in patterns}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("attempt", type=Path, help="a kernel module that calls load_inline")
    ap.add_argument("--arch", default="sm_90a", help="nvcc -arch (default sm_90a: the H200)")
    ap.add_argument("--sass", action="append", default=[], help="count SASS lines matching this")
    args = ap.parse_args(argv)
    if shutil.which("nvcc") is None:
        print("nvcc is not on PATH", file=sys.stderr)
        return 2
    source = args.attempt.read_text()
    with tempfile.TemporaryDirectory(prefix="nvcc-check-") as tmp:
        results = check(source, args.attempt.name, args.arch, args.sass, Path(tmp))
    if not results:
        print(f"{args.attempt}: no load_inline cuda_sources found", file=sys.stderr)
        return 1
    failed = False
    for r in results:
        if "error" in r:
            failed = True
            print(f"cuda_sources[{r['source']}]: did not compile:")
            print("\n".join("  " + line for line in r["error"]))
            continue
        for f in r["functions"]:
            regs = f"{f['registers']} registers" if "registers" in f else "a device function"
            print(
                f"cuda_sources[{r['source']}] {f['function']}: {regs}, "
                f"{f.get('spill_stores', 0)} B spill stores, {f.get('spill_loads', 0)} B spill "
                f"loads, {f.get('stack', 0)} B stack"
            )
        if "sass" in r:
            print(f"cuda_sources[{r['source']}] SASS lines: {r['sass']}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
