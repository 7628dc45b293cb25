"""Per-trace summaries: turns, tool calls, tokens, verdicts, repairs, outcome."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from upskills.core.session_state import embedded_origin
from upskills.trace.attempts import attempts_of, repaired_failures
from upskills.trace.events import ModelCall, RunOutcome, ToolCall
from upskills.trace.reader import TraceFile


class TraceStats(BaseModel):
    """What one trace amounts to."""

    model_config = ConfigDict(extra="forbid")

    path: str
    """Trace file."""
    trace_id: str | None = None
    """Trace id."""
    task: str | None = None
    """Task name from run_start."""
    role: str | None = None
    """Agent role (teacher, student, external)."""
    agent: str | None = None
    """Agent name, and provider/model when known."""
    turns: int = 0
    """Model calls."""
    tool_calls: int = 0
    """Tool calls."""
    input_tokens: int = 0
    """Input tokens, cache reads and writes included."""
    output_tokens: int = 0
    """Output tokens."""
    verdicts: int = 0
    """Tool results carrying a verifier Verdict."""
    passed_verdicts: int = 0
    """Verdicts that passed."""
    failure_classes: dict[str, int] = Field(default_factory=dict[str, int])
    """Error class -> count over failing verdicts."""
    repaired_failures: int = 0
    """Failing verdicts followed later by a passing one (fail -> pass transitions)."""
    language: str | None = None
    """Language of the best passing kernel: ``cuda`` (``load_inline``), ``triton``, else None."""
    origin: str | None = None
    """Where the task came from: ``builtin``, ``kernelbench``, or the loader's origin string."""
    solved: bool = False
    """run_end says solved."""
    outcome: str | None = None
    """run_end outcome; None when the run has no run_end (killed)."""
    best_speedup: float | None = None
    """Best speedup vs eager over passing verdicts (or run_end's)."""
    gpu: str | None = None
    """GPU of the verdicts, when measured on one."""
    bad_lines: int = 0
    """Lines that could not be read."""


def trace_stats(trace: TraceFile) -> TraceStats:
    """Summarise one trace."""
    st = TraceStats(path=str(trace.path), trace_id=trace.trace_id, bad_lines=len(trace.errors))
    start, end = trace.start, trace.end
    if start is not None:
        st.task, st.role = start.task, start.agent_role
        model = "/".join(x for x in (start.provider, start.model) if x)
        st.agent = f"{start.agent_name} ({model})" if model else start.agent_name
    classes: Counter[str] = Counter()
    best: float | None = None
    for event in trace.events:
        if isinstance(event, ModelCall):
            st.turns += 1
            st.input_tokens += event.usage.total_input_tokens
            st.output_tokens += event.usage.output_tokens
        elif isinstance(event, ToolCall):
            st.tool_calls += 1
    attempts = attempts_of(trace.events)
    for v in (v for a in attempts for v in a.verdicts):
        st.verdicts += 1
        st.gpu = v.gpu or st.gpu
        if v.passed:
            st.passed_verdicts += 1
            if v.speedup_eager is not None:
                best = v.speedup_eager if best is None else max(best, v.speedup_eager)
        else:
            classes[str(v.error_class or "unknown")] += 1
    st.repaired_failures = repaired_failures(attempts)
    st.language = _best_language(attempts)
    st.origin = _origin(trace, start.parameters if start is not None else {})
    st.failure_classes = dict(sorted(classes.items()))
    if end is not None:
        st.outcome, st.solved = str(end.outcome), end.outcome == RunOutcome.SOLVED
        if end.best_speedup is not None:
            best = end.best_speedup if best is None else max(best, end.best_speedup)
    st.best_speedup = best
    return st


def tasks_repaired_across_sessions(traces: list[TraceFile]) -> list[str]:
    """Tasks whose failing kernel was followed by a passing *different* kernel, across sessions.

    One agent's sessions on one task are read as one run, ordered by their ``run_start``. A
    session that fails and ends, then a new session whose kernel passes, is a repair that no
    single trace shows (the live corpus's 24_LogSoftmax: an interface failure in one session,
    fixed in the next).
    """
    runs: dict[tuple[str, str], list[tuple[str, TraceFile]]] = {}
    for trace in traces:
        start = trace.start
        if start is None or not start.task:
            continue
        key = (start.task, f"{start.agent_role}/{start.agent_name}")
        runs.setdefault(key, []).append((start.ts, trace))
    out: list[str] = []
    for (task, _), sessions in sorted(runs.items()):
        attempts = [
            a for _, t in sorted(sessions, key=lambda p: p[0]) for a in attempts_of(t.events)
        ]
        if repaired_failures(attempts) > 0:
            out.append(task)
    return sorted(set(out))


def kernel_language(source: str | None) -> str | None:
    """``cuda`` for a ``load_inline`` CUDA extension, ``triton`` for ``@triton.jit``, else None."""
    if not source:
        return None
    if "load_inline" in source and "cuda_sources" in source:
        return "cuda"
    if "triton.jit" in source:
        return "triton"
    return None


def _best_language(attempts: list[Any]) -> str | None:
    best: tuple[float, int] | None = None
    language: str | None = None
    for i, a in enumerate(attempts):
        passed = [v for v in a.verdicts if v.passed]
        if not passed:
            continue
        key = (max((v.speedup_eager or 0.0) for v in passed), i)
        if best is None or key >= best:
            best, language = key, kernel_language(a.kernel_source)
    return language


def _origin(trace: TraceFile, parameters: dict[str, Any]) -> str | None:
    """The task's origin: from run_start, else from the session folder's ``state.json``."""
    raw = parameters.get("task_origin")
    if raw is None:
        raw = embedded_origin(trace.path)
    if not isinstance(raw, str):
        return None
    return "kernelbench" if "KernelBench" in raw else raw
