"""Whole-trace analysis: stream a trace file and segment it into attempts and episodes.

An *attempt* is one kernel source judged by the verifier (a ``tool_result`` that carries a
Verdict). An *episode* is two consecutive attempts with different kernels: attempt -> verdict ->
change -> verdict. Every line of the file is parsed (no excerpt), but only what lessons need is
kept (the kernels judged and their verdict summaries), so memory per trace stays small.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from upskills.core.session_state import embedded_origin
from upskills.trace.attempts import AGENT_NOTE_KINDS, disputed_kernels, iter_attempts
from upskills.trace.attempts import Attempt as WalkedAttempt
from upskills.trace.events import Note, RunEnd, RunStart, ToolResult, TraceEvent
from upskills.trace.reader import TraceLineError, iter_events


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
        """A failing verdict turned into a passing one (see ``TraceSummary.repairs``)."""
        return not self.before.passed and self.after.passed


@dataclass
class TraceSummary:
    """What distillation keeps of one trace file."""

    path: Path
    sha256: str = ""
    trace_id: str = ""
    task: str = ""
    task_hash: str = ""
    task_origin: str = ""
    """Where the task was loaded from (a KernelBench file) when it is not a built-in name."""
    model: str | None = None
    outcome: str | None = None
    best_speedup: float | None = None
    best_kernel_source: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    errors: list[TraceLineError] = field(default_factory=list)
    lines: int = 0
    disputed: set[str] = field(default_factory=set)
    """Kernel hashes that got both failing and passing verdicts (the judge erred on one)."""
    started: str = ""
    """UTC time of the trace's run_start (orders sessions of one task)."""
    session_agent: str = ""
    """The agent's name when the trace is an external agent's ``upskills session`` (else "")."""
    prior: Attempt | None = None
    """The final kernel of the previous session on the same task, when this session began
    from it (``link_sessions``): its first attempt is then a change to that kernel."""
    prior_trace: str = ""
    """Trace id of ``prior``."""

    @property
    def episodes(self) -> list[Episode]:
        """Consecutive pairs of attempts."""
        return [Episode(a, b) for a, b in zip(self.attempts, self.attempts[1:], strict=False)]

    def is_repair(self, episode: Episode) -> bool:
        """A failing kernel replaced by a passing one, and both verdicts about the kernels.

        When either kernel got a passing and a failing verdict unchanged somewhere in the
        trace, the failure was the judge's (``trace.attempts.disputed_kernels``), not a bug
        that the change fixed.
        """
        kernels = {episode.before.kernel_hash, episode.after.kernel_hash}
        return episode.repaired and not kernels & self.disputed

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


NOTE_KINDS = AGENT_NOTE_KINDS
"""Note kinds that carry the agent's own reasoning (harness budget/warning notes do not)."""


def _attempt(walked: WalkedAttempt) -> Attempt:
    """Distillation's view of one walked attempt: its last verdict, summarised."""
    verdicts = walked.verdicts
    last = verdicts[-1]
    timed = [v for v in verdicts if v.passed] if last.passed else verdicts
    speedups = [v.speedup_eager for v in timed if v.speedup_eager is not None]
    compiles = [v.speedup_compile for v in timed if v.speedup_compile is not None]
    gpus = [v.gpu for v in verdicts if v.gpu]
    messages = [v.message for v in verdicts if v.message]
    return Attempt(
        kernel_source=walked.kernel_source or "",
        kernel_hash=walked.kernel_hash,
        passed=last.passed,
        error_class=str(last.error_class) if last.error_class else None,
        message=messages[-1] if messages else "",
        failing_variants=tuple(sorted({v.variant for v in last.variants if not v.passed})),
        speedup=speedups[-1] if speedups else None,
        gpu=gpus[-1] if gpus else None,
        first_line=walked.first_line,
        last_line=walked.last_line,
        checked_variants=tuple(sorted({v.variant for v in last.variants})),
        notes=walked.notes,
        speedup_compile=compiles[-1] if compiles else None,
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

    def judged(path: Path) -> Iterator[tuple[int, TraceEvent]]:
        """The events the walker needs; run_start/run_end fill the summary on the way."""
        for lineno, event in iter_events(path, errors=summary.errors):
            summary.lines = lineno
            if not summary.trace_id:
                summary.trace_id = event.trace_id
            if isinstance(event, RunStart):
                summary.task, summary.task_hash = event.task, event.task_hash
                summary.model = event.model
                summary.started = event.ts
                origin = event.parameters.get("task_origin") or embedded_origin(path)
                summary.task_origin = str(origin or "")
                session = event.parameters.get("interface") == "session"
                if event.agent_role == "external" and session:
                    summary.session_agent = event.agent_name or "external"
            elif isinstance(event, RunEnd):
                summary.outcome = event.outcome
                summary.best_speedup = event.best_speedup
                summary.best_kernel_source = event.best_kernel_source
            elif isinstance(event, Note):
                yield lineno, event
            elif isinstance(event, ToolResult) and event.verdict and event.kernel_source:
                if not summary.task:
                    summary.task, summary.task_hash = event.verdict.task, event.verdict.task_hash
                yield lineno, event

    walked = [a for a in iter_attempts(judged(path)) if a.judged]
    summary.disputed = disputed_kernels(walked)
    summary.attempts = [_attempt(a) for a in walked]
    return summary


def link_sessions(traces: list[TraceSummary]) -> int:
    """Chain one agent's sessions on one task: a later session's first attempt follows on.

    An external agent working through ``upskills session`` that ends a session and starts
    another on the same task writes its next kernel after reading the earlier sessions'
    verdicts, so an earlier session's final (passing, timed) kernel and the new session's first
    attempt are an episode like any other, except that the two were timed in different verifier
    runs (the lesson says so). Only sessions of the same agent are chained (driven teacher runs
    and students are independent samples, never chained); they are ordered by run_start time.
    The "before" is the earlier final the first attempt differs from least (fewest changed
    lines; the latest on a tie): an agent that tries two variants of one kernel side by side,
    or goes back to an older final after a slower try, changed that kernel, not the slower
    session's. A first attempt identical to an earlier final (the same kernel re-checked) links
    nothing. Returns how many sessions were linked.
    """
    by_task: dict[tuple[str, str], list[TraceSummary]] = {}
    for t in traces:
        if t.task_hash and t.attempts and t.session_agent:
            by_task.setdefault((t.task_hash, t.session_agent), []).append(t)
    linked = 0
    for group in by_task.values():
        group.sort(key=lambda t: (t.started, t.trace_id))
        finals: list[tuple[Attempt, str]] = []
        for t in group:
            first = t.attempts[0]
            base = _nearest(finals, first.kernel_source)
            if base is not None and base[0].kernel_hash != first.kernel_hash:
                t.prior, t.prior_trace = base
                linked += 1
            final = t.final_kernel()
            if final is not None and final.speedup is not None:
                finals.append((final, t.trace_id))
    return linked


def _nearest(finals: list[tuple[Attempt, str]], source: str) -> tuple[Attempt, str] | None:
    """The final that needs the fewest changed lines to become ``source`` (latest on a tie)."""
    lines = source.splitlines()
    best: tuple[Attempt, str] | None = None
    best_cost = -1
    for final in finals:
        cost = changed_lines(final[0].kernel_source.splitlines(), lines)
        if best is None or cost <= best_cost:
            best, best_cost = final, cost
    return best


def changed_lines(before: list[str], after: list[str]) -> int:
    """Lines removed plus lines added between two sources (a line diff, no junk heuristic)."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return sum(i2 - i1 + j2 - j1 for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal")
