"""Segment a trace into attempts: the one walker every reader of traces uses.

An *attempt* is one kernel judged by the verifier: a ``tool_result`` carrying a Verdict, and
every following verdict on the same kernel (``check`` then ``benchmark`` then ``submit``) merged
into it. A kernel is known by the result's ``kernel_hash``, else the hash of its
``kernel_source``, else the Verdict's ``candidate_hash`` (an imported trace may carry verdicts
without the source). Agent notes written between two attempts belong to the later one. Results
that name a kernel but carry no verdict (``write_kernel``) are attempts with no verdicts, so a
reader can tell written from judged.

``trace.stats`` (repairs), ``distill.episodes`` (attempt -> verdict -> change -> verdict) and
``report.corpus`` (per-kernel history) are views of this one segmentation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from upskills.core.hashing import kernel_hash
from upskills.trace.events import Note, ToolResult, TraceEvent
from upskills.verify.verdict import Verdict

AGENT_NOTE_KINDS = ("note", "plan")
"""Note kinds that carry the agent's own reasoning (harness budget/warning notes do not)."""


@dataclass
class Attempt:
    """One kernel and the verdicts given to it, consecutively."""

    kernel_hash: str
    """The kernel's hash."""
    kernel_source: str | None
    """Its source, when the trace carries it."""
    verdicts: list[Verdict] = field(default_factory=list[Verdict])
    """Verdicts in order (empty: written, never judged)."""
    verdict_tools: list[str] = field(default_factory=list[str])
    """Tool that gave each verdict (``check``, ``benchmark``, ``submit``), aligned."""
    tools: list[str] = field(default_factory=list[str])
    """Tool of each result merged in, ``write_kernel`` included."""
    first_line: int = 1
    """First line of the attempt: the line after the previous attempt's last."""
    last_line: int = 1
    """Line of its last result."""
    notes: tuple[str, ...] = ()
    """Agent notes written after the previous attempt and before this one was judged."""

    @property
    def judged(self) -> bool:
        """Whether any verdict was given."""
        return bool(self.verdicts)

    @property
    def verdict(self) -> Verdict | None:
        """The last verdict."""
        return self.verdicts[-1] if self.verdicts else None

    @property
    def passed(self) -> bool:
        """The last verdict passed."""
        return self.verdict is not None and self.verdict.passed

    @property
    def submitted(self) -> list[Verdict]:
        """Verdicts given by ``submit``."""
        return [v for t, v in zip(self.verdict_tools, self.verdicts, strict=True) if t == "submit"]


def _kernel_of(result: ToolResult) -> str | None:
    if result.kernel_hash:
        return result.kernel_hash
    if result.kernel_source:
        return kernel_hash(result.kernel_source)
    if result.verdict is not None and result.verdict.candidate_hash:
        return result.verdict.candidate_hash
    return None


def iter_attempts(events: Iterable[tuple[int, TraceEvent]]) -> Iterator[Attempt]:
    """Walk ``(line, event)`` pairs and yield attempts as each one closes.

    Args:
        events: numbered events, as ``reader.iter_events`` yields them (or
            ``enumerate(trace.events, start=2)`` for a read trace).

    Yields:
        Attempts in order; consecutive results on the same kernel are one attempt.
    """
    current: Attempt | None = None
    notes: list[str] = []
    first = 1
    for line, event in events:
        if isinstance(event, Note) and event.kind in AGENT_NOTE_KINDS and event.text.strip():
            notes.append(event.text.strip())
            continue
        if not isinstance(event, ToolResult):
            continue
        kernel = _kernel_of(event)
        if kernel is None:
            continue
        if current is None or current.kernel_hash != kernel:
            if current is not None:
                yield current
            current = Attempt(kernel, event.kernel_source, first_line=first, notes=tuple(notes))
            notes = []
        current.tools.append(event.tool_name)
        current.kernel_source = current.kernel_source or event.kernel_source
        current.last_line = line
        if event.verdict is not None:
            current.verdicts.append(event.verdict)
            current.verdict_tools.append(event.tool_name)
        first = line + 1
    if current is not None:
        yield current


def attempts_of(events: Iterable[TraceEvent]) -> list[Attempt]:
    """All attempts of a read trace's events (lines numbered from 1)."""
    return list(iter_attempts(enumerate(events, start=1)))


def disputed_kernels(attempts: Iterable[Attempt]) -> set[str]:
    """Kernels that got both a failing and a passing verdict in one trace, unchanged.

    Nothing changed between such verdicts, so neither the failure nor the pass that followed is
    evidence of a repair: one of them is the judge's fault (a verifier bug, an out-of-memory on
    a shared GPU), or the kernel fails only on some of the shapes and seeds each check draws.
    """
    passed: set[str] = set()
    failed: set[str] = set()
    for a in attempts:
        for v in a.verdicts:
            (passed if v.passed else failed).add(a.kernel_hash)
    return passed & failed


def repaired_failures(attempts: Iterable[Attempt]) -> int:
    """Failing verdicts followed by a passing verdict of a *different* kernel (fail -> pass).

    A pass of the very kernel that failed (judged again unchanged) is not a repair.
    """
    count, failed_kernel = 0, None
    for a in attempts:
        for v in a.verdicts:
            if v.passed:
                if failed_kernel is not None and failed_kernel != a.kernel_hash:
                    count += 1
                failed_kernel = None
            else:
                failed_kernel = a.kernel_hash
    return count
