"""The child side of a check: import the candidate, check its interface, run the trials.

Runs inside a fresh process forked for one candidate (see :mod:`upskills.verify.sandbox`), so
whatever the candidate does to the interpreter dies with it. Returns a plain dict the parent
turns into a :class:`~upskills.verify.verdict.Verdict`.
"""

from __future__ import annotations

import importlib.util
import inspect
import platform
import sys
import traceback
import types
from typing import Any

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

    def __init__(self, error_class: ErrorClass, stage: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.stage = stage
        self.message = message


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
    if len(text) > 2000:
        text = text[:2000] + " ..."
    head = f"{where}: " if where else ""
    return f"{head}{type(exc).__name__}: {text}"


def classify_exception(exc: BaseException) -> ErrorClass:
    """COMPILE for kernel compilation errors, CRASH for fatal CUDA errors, else RUNTIME."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc)
    if names & {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"}:
        return ErrorClass.COMPILE
    if "Error building extension" in text or "ninja: build stopped" in text:
        return ErrorClass.COMPILE
    if any(marker in text for marker in _CUDA_FATAL):
        return ErrorClass.CRASH
    return ErrorClass.RUNTIME


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


def _params(fn: Any) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    return params[1:] if params and params[0].name == "self" else params


def _signature_text(cls_name: str, method: str, params: list[inspect.Parameter]) -> str:
    return f"{cls_name}.{method}(self{''.join(', ' + str(p) for p in params)})"


def check_signature(ref_fn: Any, cand_fn: Any, method: str, display: str, line: int) -> None:
    """Raise INTERFACE unless the candidate accepts the reference's arguments by name.

    The candidate's parameters must start with the reference's, same names and order; extra
    parameters need defaults; ``*args``/``**kwargs`` accept anything in their position.
    """
    ref = _params(ref_fn)
    cand = _params(cand_fn)
    var_kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    problem = ""
    for i, rp in enumerate(ref):
        if rp.kind in var_kinds:
            break
        if i >= len(cand):
            problem = f"missing parameter {rp.name!r}"
            break
        cp = cand[i]
        if cp.kind in var_kinds:
            break
        if cp.name != rp.name:
            problem = f"parameter {i + 1} is {cp.name!r}, expected {rp.name!r}"
            break
    else:
        extra = [p for p in cand[len(ref) :] if p.kind not in var_kinds and p.default is p.empty]
        if extra:
            problem = f"extra parameter {extra[0].name!r} has no default"
    if problem:
        raise StageFailure(
            ErrorClass.INTERFACE,
            "interface",
            f"{display}:{line}: {_signature_text('ModelNew', method, cand)} does not match "
            f"{_signature_text('Model', method, ref)}: {problem}",
        )


def check_interface(candidate: types.ModuleType, reference: types.ModuleType, display: str) -> Any:
    """Return ``ModelNew`` after checking it is an ``nn.Module`` with the reference's signatures."""
    import torch

    new_cls = getattr(candidate, "ModelNew", None)
    if new_cls is None:
        raise StageFailure(
            ErrorClass.INTERFACE, "interface", f"{display}: defines no class ModelNew"
        )
    if not (isinstance(new_cls, type) and issubclass(new_cls, torch.nn.Module)):
        raise StageFailure(
            ErrorClass.INTERFACE,
            "interface",
            f"{display}: ModelNew must be a class deriving from torch.nn.Module",
        )
    try:
        line = inspect.getsourcelines(new_cls)[1]
    except (OSError, TypeError):
        line = 0
    for method in ("__init__", "forward"):
        check_signature(
            getattr(reference.Model, method), getattr(new_cls, method), method, display, line
        )
    return new_cls


def environment() -> dict[str, str]:
    """Versions of python, torch, triton and, on CUDA, the GPU and CUDA runtime."""
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = "none"
    try:  # after a fatal CUDA error (a crashed kernel) any CUDA call may raise
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            env["gpu"] = torch.cuda.get_device_name()
            env["cuda"] = str(torch.version.cuda)
    except Exception:  # noqa: BLE001 - the verdict matters more than the GPU's name
        env["cuda"] = str(torch.version.cuda)
    return env


def run_job(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Entry point of a forked child: ``check`` or ``baseline``."""
    if kind == "check":
        from upskills.verify.trials import run_check

        try:
            return run_check(payload)
        except StageFailure as failure:
            return {
                "passed": False,
                "error_class": failure.error_class.value,
                "stage": failure.stage,
                "message": failure.message,
                "env": environment(),
            }
    if kind == "baseline":
        from upskills.verify.baselines import measure_baselines

        return measure_baselines(payload)
    if kind == "hardware":
        from upskills.verify.hardware import describe_local

        return describe_local(payload.get("device", "cuda"))
    raise ValueError(f"unknown job kind {kind!r}")


def format_internal_error(exc: BaseException) -> str:
    """A traceback for errors of the verifier itself (never the candidate's fault)."""
    return "".join(traceback.format_exception(exc))[-4000:]
