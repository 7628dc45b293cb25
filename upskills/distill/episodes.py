"""Whole-trace analysis: stream a trace file and segment it into attempts and episodes.

An *attempt* is one kernel source judged by the verifier (a ``tool_result`` that carries a
Verdict). An *episode* is two consecutive attempts with different kernels: attempt -> verdict ->
change -> verdict. Every line of the file is parsed (no excerpt), but only what lessons need is
kept (the kernels judged and their verdict summaries), so memory per trace stays small.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from upskills.trace.events import Note, RunEnd, RunStart, ToolResult
from upskills.trace.reader import TraceLineError, iter_events
from upskills.verify.verdict import Verdict


@dataclass(frozen=True)
class Attempt:
    """One kernel judged by the verifier, with the summary of its verdict."""

    kernel_source: str
    kernel_hash: str
    passed: bool
    error_class: str | None
    message: str
    failing_variants: tuple[str, ...]
    speedup: float | None
    gpu: str | None
    first_line: int
    last_line: int
    checked_variants: tuple[str, ...] = ()
    """Every shape variant the verdict ran (passing or not)."""
    notes: tuple[str, ...] = ()
    """Agent notes written after the previous attempt and before this one was judged."""
    speedup_compile: float | None = None
    """torch.compile median / this kernel's median, from the same verdict as ``speedup``."""


@dataclass(frozen=True)
class Episode:
    """Two consecutive attempts: the change between them and both verdicts."""

    before: Attempt
    after: Attempt

    @property
    def repaired(self) -> bool:
        """A failing verdict turned into a passing one."""
        return not self.before.passed and self.after.passed


@dataclass
class TraceSummary:
    """What distillation keeps of one trace file."""

    path: Path
    sha256: str = ""
    trace_id: str = ""
    task: str = ""
    task_hash: str = ""
    model: str | None = None
    outcome: str | None = None
    best_speedup: float | None = None
    best_kernel_source: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    errors: list[TraceLineError] = field(default_factory=list)
    lines: int = 0

    @property
    def episodes(self) -> list[Episode]:
        """Consecutive pairs of attempts."""
        return [Episode(a, b) for a, b in zip(self.attempts, self.attempts[1:], strict=False)]

    @property
    def solved(self) -> bool:
        """The run ended solved, or (for a run without run_end) some attempt passed."""
        if self.outcome is not None:
            return self.outcome == "solved"
        return any(a.passed for a in self.attempts)

    def final_kernel(self) -> Attempt | None:
        """The best passing attempt: the run's best kernel, else the fastest or last passing."""
        passing = [a for a in self.attempts if a.passed]
        if not passing:
            return None
        if self.best_kernel_source:
            same = [a for a in passing if a.kernel_source == self.best_kernel_source]
            if same:
                return same[-1]
        timed = [a for a in passing if a.speedup is not None]
        if timed:
            return max(timed, key=lambda a: (a.speedup, a.last_line))
        return passing[-1]


NOTE_KINDS = ("note", "plan")
"""Note kinds that carry the agent's own reasoning (harness budget/warning notes do not)."""


def _attempt(
    result: ToolResult, verdict: Verdict, first: int, line: int, notes: tuple[str, ...]
) -> Attempt:
    source = result.kernel_source or ""
    failing = sorted({v.variant for v in verdict.variants if not v.passed})
    return Attempt(
        kernel_source=source,
        kernel_hash=result.kernel_hash or hashlib.sha256(source.encode()).hexdigest()[:16],
        passed=verdict.passed,
        error_class=str(verdict.error_class) if verdict.error_class else None,
        message=verdict.message,
        failing_variants=tuple(failing),
        speedup=verdict.speedup_eager,
        gpu=verdict.gpu,
        first_line=first,
        last_line=line,
        checked_variants=tuple(sorted({v.variant for v in verdict.variants})),
        notes=notes,
        speedup_compile=verdict.speedup_compile,
    )


def _merge(prev: Attempt, new: Attempt) -> Attempt:
    """A re-check of the same kernel (check, then benchmark) extends the previous attempt."""
    return Attempt(
        kernel_source=prev.kernel_source,
        kernel_hash=prev.kernel_hash,
        passed=new.passed,
        error_class=new.error_class,
        message=new.message or prev.message,
        failing_variants=new.failing_variants,
        speedup=new.speedup if new.speedup is not None else prev.speedup,
        gpu=new.gpu or prev.gpu,
        first_line=prev.first_line,
        last_line=new.last_line,
        checked_variants=new.checked_variants,
        notes=prev.notes,
        speedup_compile=new.speedup_compile if new.speedup is not None else prev.speedup_compile,
    )


def summarize_trace(path: str | Path) -> TraceSummary:
    """Parse every line of one trace and segment it into attempts.

    Malformed lines are recorded in ``errors`` (file and line) and skipped.

    Args:
        path: a ``.jsonl`` trace file.

    Returns:
        The trace's summary.

    Raises:
        FileNotFoundError: the file does not exist.
    """
    path = Path(path)
    summary = TraceSummary(path=path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    summary.sha256 = digest.hexdigest()[:16]
    first = 1
    notes: list[str] = []
    for lineno, event in iter_events(path, errors=summary.errors):
        summary.lines = lineno
        if not summary.trace_id:
            summary.trace_id = event.trace_id
        if isinstance(event, RunStart):
            summary.task, summary.task_hash, summary.model = (
                event.task,
                event.task_hash,
                event.model,
            )
        elif isinstance(event, RunEnd):
            summary.outcome = event.outcome
            summary.best_speedup = event.best_speedup
            summary.best_kernel_source = event.best_kernel_source
        elif isinstance(event, Note) and event.kind in NOTE_KINDS and event.text.strip():
            notes.append(event.text.strip())
        elif isinstance(event, ToolResult) and event.verdict is not None and event.kernel_source:
            if not summary.task:
                summary.task, summary.task_hash = event.verdict.task, event.verdict.task_hash
            attempt = _attempt(event, event.verdict, first, lineno, tuple(notes))
            prev = summary.attempts[-1] if summary.attempts else None
            if prev is not None and prev.kernel_hash == attempt.kernel_hash:
                summary.attempts[-1] = _merge(prev, attempt)  # its notes wait for the next one
            else:
                summary.attempts.append(attempt)
                notes = []
            first = lineno + 1
    return summary
