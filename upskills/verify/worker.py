"""Shared pieces of the verifier's child processes: stage failures, exceptions, imports, jobs.

:func:`run_job` is the entry point of a judge child (see :mod:`upskills.verify.sandbox`);
:func:`import_candidate` and the exception helpers serve the candidate's process
(:mod:`upskills.verify.candidate_host`).
"""

from __future__ import annotations

import importlib.util
import platform
import re
import sys
import traceback
import types
from typing import Any

from upskills.verify.gpu_compile_server import FRONT_END_ERRORS
from upskills.verify.verdict import ErrorClass

_CUDA_FATAL = (
    "illegal memory access",
    "unspecified launch failure",
    "device-side assert",
    "misaligned address",
    "illegal instruction",
    "an illegal",
)
"""CUDA error texts after which the context is unusable: reported as a crash."""


class StageFailure(Exception):
    """A check stage failed; carries the error class, the stage and the message."""

    def __init__(
        self, error_class: ErrorClass, stage: str, message: str, guard: str | None = None
    ) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.stage = stage
        self.message = message
        self.guard = guard


def candidate_location(exc: BaseException, path: str, display: str) -> str:
    """``display:line in func`` of the innermost traceback frame in the candidate's file."""
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            where = f"{display}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return where


def describe_exception(exc: BaseException, path: str, display: str) -> str:
    """One message: where in the candidate (if anywhere), the exception type and text."""
    where = candidate_location(exc, path, display)
    text = str(exc).replace(path, display).strip()
    if "Error building extension" in text:
        text = build_errors(text)
    if len(text) > 2000:
        text = text[:2000] + " ..."
    head = f"{where}: " if where else ""
    return f"{head}{type(exc).__name__}: {text}{environment_hint(exc)}{loop_hint(exc, path)}"


def loop_hint(exc: BaseException, path: str) -> str:
    """Why a GPU-valid kernel fails only in Triton's interpreter, where it is the loop's int.

    The interpreter runs a ``@triton.jit`` body's ``for row in range(tl.program_id(0), rows,
    tl.num_programs(0))`` as Python, so ``row`` is an ``int`` there and a tensor on a GPU:
    ``row.to(tl.int64)`` compiles for sm_90 and fails in the interpreter (a KernelBench L2
    norm of the corpus, 2026-12-07; ``tl.cast(row, tl.int64)`` passed both).
    """
    cause = exc.__cause__
    if type(exc).__name__ != "InterpreterError" or not isinstance(cause, AttributeError):
        return ""
    found = re.match(r"'int' object has no attribute '(\w+)'", str(cause))
    if found is None or _innermost_file(cause) != path:
        return ""
    return (
        " (Triton's interpreter runs a kernel's loops as Python: a `for` loop's variable is an "
        "int here and a tensor on a GPU; if this is one, write tl.cast(v, ...) rather than "
        f"v.{found.group(1)}(...), which runs on both)"
    )


def _innermost_file(exc: BaseException) -> str:
    """The file of the frame that raised ``exc`` ("" without a traceback)."""
    tb, last = exc.__traceback__, ""
    while tb is not None:
        last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    return last


NUMPY_SCALARS = "only 0-dimensional arrays can be converted to Python scalars"
"""NumPy 2.4's error for ``int()`` of an array with a dimension (a deprecation since 1.25)."""


def environment_hint(exc: BaseException) -> str:
    """Why the machine, not the kernel, failed, where the innermost cause says so; else "".

    Triton's interpreter before the fix of triton-lang/triton#9171 turns a one-element block
    into a Python number with ``int()``, which NumPy 2.4 refuses: the device's Triton 3.6
    under its NumPy 2.5.2 failed the known-good ``cumsum_rows`` on CPU so (2026-12-07), an
    honest kernel. Said only when the refusal was raised inside Triton's interpreter module.
    """
    cause: BaseException | None = exc
    for _ in range(8):
        if cause is None:
            return ""
        inside = _innermost_file(cause).replace("\\", "/").endswith("triton/runtime/interpreter.py")
        if inside and NUMPY_SCALARS in str(cause):
            versions = _versions()
            return (
                f" (the machine, not the kernel: Triton's interpreter{versions} converts a "
                "one-element block to a Python number, which NumPy 2.4 and later refuse, "
                "triton-lang/triton#9171; use NumPy < 2.4 or a Triton with the fix, such as 3.9)"
            )
        cause = cause.__cause__ or cause.__context__
    return ""


def _versions() -> str:
    import importlib.metadata as metadata

    found: list[str] = []
    for name in ("triton", "numpy"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return f" ({', '.join(found)})" if found else ""


def build_errors(text: str) -> str:
    """A load_inline build failure with its compiler's diagnostics up front.

    torch's message is ninja's output: each failed step's full compiler command (a few thousand
    characters of flags and include paths), then the diagnostics. The commands are dropped, so
    the errors survive any truncation of the message.
    """
    head, _, rest = text.partition("\n")
    name, sep, first = head.partition(": ")
    keep = [first] if sep and first else []
    keep += rest.splitlines()
    kept = [
        line
        for line in keep
        if line.strip()
        and not re.match(r"\s*\[\d+/\d+\] ", line)
        and not line.startswith("FAILED: ")
        and "-DTORCH_EXTENSION_NAME=" not in line
    ]
    return name + (": " if kept else "") + "\n".join(kept)


def classify_exception(exc: BaseException) -> ErrorClass:
    """COMPILE for kernel compilation errors, CRASH for fatal CUDA errors, else RUNTIME."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc)
    if names & (FRONT_END_ERRORS | {"GpuCompileError"}):
        return ErrorClass.COMPILE
    if "InterpreterChanged" in names | _causes(exc):  # interpreter_integrity (a rewrite inside
        return ErrorClass.GUARD  # a launch's programs is raised as InterpreterError from it)
    if "Error building extension" in text or "ninja: build stopped" in text:
        return ErrorClass.COMPILE
    if any(marker in text for marker in _CUDA_FATAL):
        return ErrorClass.CRASH
    return ErrorClass.RUNTIME


def _causes(exc: BaseException) -> set[str]:
    """Class names of the exceptions ``exc`` was raised from (``raise ... from``), nearest first."""
    names: set[str] = set()
    cause = exc.__cause__
    for _ in range(8):
        if cause is None:
            break
        names.add(type(cause).__name__)
        cause = cause.__cause__
    return names


def import_candidate(path: str, display: str) -> types.ModuleType:
    """Import the candidate file as a fresh module (IMPORT/SYNTAX failure on error)."""
    name = "upskills_candidate"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StageFailure(ErrorClass.IMPORT, "import", f"{display}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise StageFailure(
            ErrorClass.SYNTAX, "parse", f"{display}:{exc.lineno}: syntax error: {exc.msg}"
        ) from exc
    except ImportError as exc:
        raise StageFailure(
            ErrorClass.IMPORT, "import", describe_exception(exc, path, display)
        ) from exc
    except Exception as exc:  # noqa: BLE001 - anything at import time is an import failure
        cls = classify_exception(exc)
        cls = ErrorClass.IMPORT if cls == ErrorClass.RUNTIME else cls
        raise StageFailure(cls, "import", describe_exception(exc, path, display)) from exc
    return module


def environment(init_cuda: bool = False) -> dict[str, str]:
    """Versions of python, torch, triton and, on CUDA, the GPU and CUDA runtime.

    Args:
        init_cuda: Name the GPU even if this process has not touched CUDA yet (initialises it);
            otherwise the GPU is named only once CUDA is initialised.
    """
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton  # pyright: ignore[reportMissingTypeStubs]

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = "none"
    try:  # after a fatal CUDA error (a crashed kernel) any CUDA call may raise
        if torch.cuda.is_available() and (init_cuda or torch.cuda.is_initialized()):
            env["gpu"] = torch.cuda.get_device_name()
            env["cuda"] = str(torch.version.cuda)
    except Exception:  # noqa: BLE001 - the verdict matters more than the GPU's name
        env["cuda"] = str(torch.version.cuda)
    return env


def run_job(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Entry point of a forked judge child: ``judge``, ``baseline`` or ``hardware``."""
    if kind == "judge":
        from upskills.verify.judge import JudgeJob, judge_check

        return judge_check(JudgeJob.model_validate(payload)).model_dump(mode="json")
    if kind == "baseline":
        from upskills.verify.baselines import measure_baselines

        return measure_baselines(payload)
    if kind == "hardware":
        from upskills.verify.hardware import describe_local

        return describe_local(payload.get("device", "cuda"))
    raise ValueError(f"unknown job kind {kind!r}")


def format_internal_error(exc: BaseException) -> str:
    """A traceback for errors of the verifier itself (never the candidate's fault).

    The judge's own GPU memory running out is said first, with what it held: on an H100's 80
    GB, KernelBench's largest inputs (8.6 GB a tensor, each held several times over by the
    judge) are the likely case (the thirty-second session's re-check of 38_L1Norm_).
    """
    text = "".join(traceback.format_exception(exc))[-4000:]
    if "out of memory" not in str(exc).lower():
        return text
    from upskills.verify.judge_memory import memory_note

    try:
        held = memory_note()
    except Exception:  # noqa: BLE001 - no CUDA to ask: the message goes without it
        held = ""
    return (
        "the judge itself ran out of GPU memory: this task's inputs, the judge's copies of them "
        f"and the reference's outputs do not fit this GPU{held}\n{text}"
    )
