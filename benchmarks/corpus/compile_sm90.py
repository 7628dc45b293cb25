"""Compile every kernel a corpus attempt launches for sm_90 (H100/H200) without a GPU.

A pre-flight for the GPU replay, not a substitute for it: it catches what the CPU interpreter
cannot see (lowering errors, shared memory per config, unsupported ops on sm_90) with the
installed Triton, which may differ from the GPU machine's. Nothing runs on a GPU and nothing
is timed.

Phase 1 (a child process, interpreter on) builds the task's inputs for one variant, calls the
attempt's ``forward`` with kernel launches recorded but not executed, and prints the launches
(kernel name, argument kinds, constexprs, launch options) as JSON. Phase 2 (this process,
interpreter off) imports the attempt, so its kernels are real ``JITFunction`` objects, and
``triton.compile``s each launch, and every config of an autotuned kernel, for
``GPUTarget("cuda", 90, 32)``, specialising pointers and multiples of 16 as the launcher
would. It relies on Triton internals (``InterpretedFunction.run``, ``ASTSource``).

Usage::

    python benchmarks/corpus/compile_sm90.py [TASK ...] [--variant main]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMEM_LIMIT = 232448
"""Shared memory per block on sm_90 (227 KB)."""
POINTER_TYPES = {
    "torch.float16": "fp16",
    "torch.bfloat16": "bf16",
    "torch.float32": "fp32",
    "torch.int64": "i64",
    "torch.int32": "i32",
    "torch.int16": "i16",
    "torch.uint8": "u8",
    "torch.bool": "i1",
}
"""torch dtype -> Triton pointee type name."""


def _load(path: Path, name: str, overrides: dict) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), mod.__dict__)
    mod.__dict__.update(overrides)
    return mod


def capture(task_name: str, attempt: Path, variant: str) -> list[dict]:
    """Record the kernel launches of one forward call (interpreter on, kernels not executed)."""
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton.runtime.interpreter as interp

    from upskills.tasks import load_task

    launches: list[dict] = []

    def record(self, *args, grid, warmup, **kwargs):
        code = self.fn.__code__
        bound = dict(zip(code.co_varnames[: code.co_argcount], args, strict=False))
        bound.update(kwargs)
        enc = {}
        for key, val in bound.items():
            if isinstance(val, torch.Tensor):
                enc[key] = ["ptr", "*" + POINTER_TYPES[str(val.dtype)]]
            elif isinstance(val, bool | int | float):
                enc[key] = [type(val).__name__, val]
            else:
                enc[key] = ["other", repr(val)]
        launches.append({"name": self.fn.__name__, "args": enc})

    interp.InterpretedFunction.run = record
    task = load_task(task_name)
    chosen = next((v for v in task.all_variants() if v.name == variant), None)
    if chosen is None:
        raise SystemExit(f"{task_name}: no variant {variant!r}")
    ref = types.ModuleType("reference")
    exec(compile(task.source, f"<{task_name}>", "exec"), ref.__dict__)
    ref.__dict__.update(chosen.globals)
    init = ref.get_init_inputs()
    _load(attempt, "attempt", {}).ModelNew(*init)(*ref.get_inputs())
    return launches


def _signature(jit_fn, args: dict) -> tuple[dict, dict, dict, dict]:
    opts = {k: args.pop(k)[1] for k in ("num_warps", "num_stages") if k in args}
    for k in ("num_ctas", "maxnreg"):
        args.pop(k, None)
    sig, consts, attrs = {}, {}, {}
    for i, p in enumerate(jit_fn.params):
        kind, val = args[p.name]
        if p.is_constexpr or (kind == "int" and val == 1 and not p.do_not_specialize):
            sig[p.name], consts[(i,)] = "constexpr", val
            continue
        if kind == "ptr" or (kind == "int" and val % 16 == 0):
            attrs[(i,)] = [["tt.divisibility", 16]]
        if kind == "ptr":
            sig[p.name] = val
        elif kind == "bool":
            sig[p.name] = "i1"
        elif kind == "int":
            sig[p.name] = "i64" if abs(val) >= 2**31 else "i32"
        elif kind == "float":
            sig[p.name] = "fp32"
        else:
            raise TypeError(f"{jit_fn.__name__}: argument {p.name}: cannot type {val}")
    return sig, consts, attrs, opts


def compile_launches(attempt: Path, launches: list[dict]) -> list[str]:
    """Compile each launch (every autotune config) for sm_90; return the failures."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.autotuner import Autotuner

    mod = _load(attempt, "attempt", {})
    tuned = {o.fn.__name__: o for o in vars(mod).values() if isinstance(o, Autotuner)}
    failures: list[str] = []
    for launch in launches:
        name = launch["name"]
        jit_fn = getattr(mod, name)
        configs = [c.all_kwargs() for c in tuned[name].configs] if name in tuned else [{}]
        for config in configs:
            args = dict(launch["args"])
            args.update({k: ["int", v] for k, v in config.items()})
            sig, consts, attrs, opts = _signature(jit_fn, args)
            label = (
                f"{name} {config or {k: v[1] for k, v in launch['args'].items() if k.isupper()}}"
            )
            try:
                src = ASTSource(fn=jit_fn, signature=sig, constexprs=consts, attrs=attrs)
                kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
            except Exception as exc:  # noqa: BLE001 - report any compiler failure
                failures.append(f"{label}: {type(exc).__name__}: {str(exc)[-600:]}")
                continue
            smem = kernel.metadata.shared
            if smem > SMEM_LIMIT:
                failures.append(f"{label}: needs {smem} B of shared memory (> {SMEM_LIMIT})")
            print(f"    {label} {opts} smem={smem}", flush=True)
    return failures


def main(argv: list[str] | None = None) -> int:
    """Compile every attempt of the chosen tasks; return the process exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", help="only these tasks (default: all)")
    parser.add_argument("--variant", default="main", help="shape variant to size launches")
    parser.add_argument("--capture", nargs=2, metavar=("TASK", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.capture:
        print(json.dumps(capture(args.capture[0], Path(args.capture[1]), args.variant)))
        return 0
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    sys.path.insert(0, str(HERE))
    from check_cpu import load_manifest

    attempts = [a for a in load_manifest() if not args.tasks or a.task in args.tasks]
    bad = 0
    for a in attempts:
        print(f"{a.task}/{a.file.name}", flush=True)
        cmd = [
            sys.executable,
            __file__,
            "--variant",
            args.variant,
            "--capture",
            a.task,
            str(a.file),
        ]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if run.returncode:
            bad += 1
            print(f"    capture failed: {run.stderr.strip()[-600:]}", flush=True)
            continue
        failures = compile_launches(a.file, json.loads(run.stdout.strip().splitlines()[-1]))
        bad += bool(failures)
        for f in failures:
            print(f"    FAIL {f}", flush=True)
    print(f"{len(attempts)} attempts, {bad} with compile failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
