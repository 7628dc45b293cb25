"""The verifier: ``check(task, candidate) -> Verdict`` and the reusable :class:`Verifier`.

Stages, in order: parse (syntax, with line) -> static guards -> import/compile -> interface ->
correctness (seeds x variants, run-time guards) -> timing (GPU) -> speedup (against cached
baselines). Parsing and static guards run here, in the caller's process; everything that
executes the candidate runs in a fresh child forked from a warm worker
(:mod:`upskills.verify.sandbox`), so a hang or crash costs one verdict and nothing else.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import signal
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from upskills.tasks.model import Task
from upskills.verify.options import CheckOptions
from upskills.verify.sandbox import JobOutcome, Zygote
from upskills.verify.static import parse_candidate, static_guards
from upskills.verify.verdict import ErrorClass, Timing, VariantResult, Verdict

BASELINE_TIMEOUT_S = 900.0
"""Time limit of one baseline measurement (torch.compile can take minutes)."""

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; validates the others."""
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', not {device!r}")
    if device == "cpu":
        return device
    try:
        import torch
    except ImportError as exc:
        raise ValueError("the verifier needs torch: pip install 'upskills[kernels]'") from exc
    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise ValueError("device 'cuda' requested but torch sees no CUDA GPU; use --device cpu")
    return "cuda" if available else "cpu"


def resolve_task(task: Task | str | Path) -> Task:
    """A Task as given, or loaded by built-in name or path (raises ``TaskError``)."""
    if isinstance(task, Task):
        return task
    from upskills.tasks import load_task

    return load_task(task)


def resolve_candidate(candidate: str | Path) -> tuple[str, str]:
    """``(source, display name)`` of a candidate given as a path or as source text."""
    if isinstance(candidate, Path):
        return candidate.read_text(), candidate.name
    if "\n" not in candidate and candidate.endswith(".py"):
        path = Path(candidate)
        if not path.is_file():
            raise FileNotFoundError(f"candidate file not found: {candidate}")
        return path.read_text(), path.name
    return candidate, "candidate.py"


def source_hash(source: str) -> str:
    """sha256 of the candidate source, 16 hex chars."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _where_in_log(log: str, path: str, display: str) -> str:
    """Innermost ``display:line in func`` of a faulthandler dump in the child's log."""
    where = ""
    for m in _FRAME.finditer(log):
        if m.group("file") == path:
            where = f"{display}:{m.group('line')} in {m.group('func')}"
            break  # faulthandler prints the innermost frame first
    return where


def _death_message(outcome: JobOutcome, path: str, display: str) -> str:
    code = outcome.exit_code
    if code is not None and code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"exited with status {code}"
    where = _where_in_log(outcome.log_tail, path, display)
    lines = outcome.log_tail.splitlines()
    fatal = [ln.strip() for ln in lines if ln.startswith(("Fatal Python error", "CUDA error"))]
    ours = [ln.strip().replace(path, display) for ln in lines if path in ln]
    if not fatal and not ours:  # no faulthandler dump: show the end of the output
        ours = [ln.strip() for ln in lines[-6:]]
    detail = "\n".join(["", *fatal[:2], *ours[:8]]).rstrip()
    at = f" at {where}" if where else ""
    return f"{display}: the worker process {how}{at} (segfault, abort or fatal error){detail}"


class Verifier:
    """A reusable checker: a warm worker per device, a fresh child per candidate.

    Args:
        device: ``auto``, ``cpu`` (Triton interpreter, correctness only) or ``cuda``.
        options: Default options of each check.

    Use as a context manager, or call :meth:`close` when done.
    """

    def __init__(self, device: str = "auto", options: CheckOptions | None = None) -> None:
        self.device = resolve_device(device)
        self.options = options or CheckOptions()
        self._zygote: Zygote | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="upskills-candidates-")
        self._count = 0

    def __enter__(self) -> Verifier:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker process and remove temporary files."""
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        self._tmp.cleanup()

    @property
    def zygote(self) -> Zygote:
        """The warm worker (started on first use)."""
        if self._zygote is None:
            self._zygote = Zygote(self.device)
        return self._zygote

    def _variants(self, task: Task, options: CheckOptions) -> list[str]:
        variants = task.all_variants()
        if options.variants is not None:
            known = {v.name for v in variants}
            unknown = [n for n in options.variants if n not in known]
            if unknown:
                raise ValueError(
                    f"task {task.name!r} has no variant {unknown[0]!r} "
                    f"(variants: {', '.join(sorted(known))})"
                )
            variants = [v for v in variants if v.name in options.variants]
        if self.device == "cpu":
            variants = [v for v in variants if v.cpu]
        return [v.name for v in variants]

    def check(
        self, task: Task | str | Path, candidate: str | Path, options: CheckOptions | None = None
    ) -> Verdict:
        """Judge one candidate against one task.

        Args:
            task: A Task, a built-in task name or a path to a KernelBench-format file.
            candidate: The candidate's source text or a path to its ``.py`` file.
            options: Options for this check (default: the verifier's).

        Returns:
            The Verdict; ``passed`` only when every stage passed.
        """
        start = time.monotonic()
        options = options or self.options
        task = resolve_task(task)
        source, display = resolve_candidate(candidate)
        verdict = Verdict(
            task=task.name,
            task_hash=task.hash,
            candidate_hash=source_hash(source),
            device=self.device,
            passed=False,
            timing_status="unavailable" if self.device == "cpu" else "skipped",
        )
        self._judge(verdict, task, source, display, options)
        verdict.duration_s = round(time.monotonic() - start, 3)
        return verdict

    def _judge(
        self, verdict: Verdict, task: Task, source: str, display: str, options: CheckOptions
    ) -> None:
        tree, issue = parse_candidate(source, display)
        if tree is None:
            assert issue is not None
            verdict.error_class, verdict.stage, verdict.message = (
                issue.error_class,
                "parse",
                issue.message,
            )
            return
        issues = static_guards(tree, display)
        if issues:
            more = f" (+{len(issues) - 1} more)" if len(issues) > 1 else ""
            verdict.error_class, verdict.stage = ErrorClass.GUARD, "guards"
            verdict.message = issues[0].message + more
            return
        variants = self._variants(task, options)
        if not variants:
            verdict.error_class, verdict.stage = ErrorClass.TASK, "correctness"
            verdict.message = f"task {task.name!r} has no variant small enough for the CPU"
            return
        self._count += 1
        folder = Path(self._tmp.name) / f"c{self._count}"
        folder.mkdir()
        path = folder / (display if display.endswith(".py") else "candidate.py")
        path.write_text(source)
        payload = {
            "task": task.model_dump(mode="json"),
            "path": str(path),
            "display": display,
            "device": self.device,
            "seeds": options.seeds,
            "variants": variants,
            "timing": options.timing,
            "main_variant": task.main_variant().name,
            "timeout_s": options.timeout_s,
        }
        try:
            outcome = self.zygote.run("check", payload, options.timeout_s)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self._apply(verdict, outcome, str(path), display, options)
        if verdict.passed and verdict.timing is not None and options.baselines:
            self._speedups(verdict, task, options)

    def _apply(
        self,
        verdict: Verdict,
        outcome: JobOutcome,
        path: str,
        display: str,
        options: CheckOptions,
    ) -> None:
        if outcome.timed_out:
            where = _where_in_log(outcome.log_tail, path, display)
            at = f" (it was at {where})" if where else ""
            verdict.error_class, verdict.stage = ErrorClass.TIMEOUT, "correctness"
            verdict.message = (
                f"{display}: did not finish within {options.timeout_s:g} s{at}; "
                "the worker was killed (infinite loop or hang?)"
            )
            return
        result = outcome.result
        if result is None:
            verdict.error_class, verdict.stage = ErrorClass.CRASH, "correctness"
            verdict.message = _death_message(outcome, path, display)
            return
        if "internal_error" in result:
            verdict.error_class, verdict.stage = ErrorClass.RUNTIME, "correctness"
            verdict.message = (
                f"internal verifier error (not the candidate's fault?):\n{result['internal_error']}"
            )
            return
        verdict.passed = bool(result.get("passed"))
        verdict.error_class = (
            ErrorClass(result["error_class"]) if result.get("error_class") else None
        )
        verdict.stage = "done" if verdict.passed else result.get("stage", "correctness")
        verdict.message = result.get("message", "")
        verdict.variants = [VariantResult.model_validate(v) for v in result.get("variants", [])]
        verdict.env = dict(result.get("env", {}))
        verdict.gpu = verdict.env.get("gpu")
        if self.device == "cuda":
            verdict.timing_status = result.get("timing_status", "skipped")
        if result.get("timing"):
            verdict.timing = Timing.model_validate(result["timing"])

    def _speedups(self, verdict: Verdict, task: Task, options: CheckOptions) -> None:
        entry = self.baseline(task, verdict.env.get("gpu", ""), verdict.env.get("torch", ""))
        if entry is None or verdict.timing is None:
            return
        median = verdict.timing.median_ms
        if entry.eager is not None:
            verdict.baselines["eager"] = entry.eager
            verdict.speedup_eager = round(entry.eager.median_ms / median, 4)
        if entry.compile is not None:
            verdict.baselines["compile"] = entry.compile
            verdict.speedup_compile = round(entry.compile.median_ms / median, 4)
        if verdict.speedup_eager is not None:
            verdict.message += f"; {verdict.speedup_eager:.2f}x vs eager"
        if verdict.speedup_compile is not None:
            verdict.message += f", {verdict.speedup_compile:.2f}x vs torch.compile"

    def baseline(self, task: Task, gpu: str, torch_version: str) -> Any:
        """The cached baseline entry for ``task`` on this GPU, measuring it on a miss."""
        from upskills.verify.baselines import BaselineEntry, lookup_baseline, store_baseline

        entry = lookup_baseline(gpu, torch_version, task.hash) if gpu else None
        if entry is not None or self.device != "cuda":
            return entry
        outcome = self.measure_baseline(task)
        if outcome.result is None or "internal_error" in outcome.result:
            return None
        entry = BaselineEntry.model_validate(outcome.result)
        store_baseline(entry)
        return entry

    def measure_baseline(self, task: Task, timeout_s: float = BASELINE_TIMEOUT_S) -> JobOutcome:
        """Measure eager and torch.compile baselines of ``task`` in a child (CUDA only)."""
        payload = {"task": task.model_dump(mode="json"), "variant": task.main_variant().name}
        return self.zygote.run("baseline", payload, timeout_s)


def check(
    task: Task | str | Path,
    candidate: str | Path,
    *,
    device: str = "auto",
    options: CheckOptions | None = None,
) -> Verdict:
    """Judge one candidate kernel against one task (a one-shot :class:`Verifier`).

    Args:
        task: A Task, a built-in task name, or a path to a KernelBench-format ``.py``.
        candidate: Source text of the candidate, or a path to its ``.py`` file.
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
        options: Seeds, timing, timeout, variant subset, baselines.

    Returns:
        The Verdict.
    """
    with Verifier(device, options) as verifier:
        return verifier.check(task, candidate)
