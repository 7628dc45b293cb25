"""Lessons: typed records mined from episodes, then merged across traces.

Three kinds, each backed by verdicts in the trace:

- ``fix``: an episode whose change turned a failing verdict into a passing one; the techniques
  the passing kernel added are the fix, the failing verdict is the failure it avoids.
- ``perf``: an episode between two passing, timed kernels; the measured speedups before and
  after are the effect. A technique that made things slower elsewhere is counted against it.
- ``practice``: a technique present in a trace's final (best passing) kernel.

Lessons with the same key (kind, technique, failure class, shape regime) merge across traces;
prevalence is the number of distinct traces behind a lesson.
"""

from __future__ import annotations

import difflib
import functools
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.distill.episodes import Attempt, TraceSummary
from upskills.distill.techniques import TECHNIQUES, analyze_kernel

PERF_THRESHOLD = 1.05
"""A perf change counts when the speedup ratio is at least this (or at most its inverse)."""


class LessonSource(BaseModel):
    """Where in which trace a lesson was seen."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str
    """Trace id."""
    trace_sha256: str
    """sha256 (16 hex) of the trace file."""
    task: str
    """Task the trace solved."""
    first_line: int
    """First line (1-based) of the event range in the trace file."""
    last_line: int
    """Last line of the event range."""


class Preconditions(BaseModel):
    """When a lesson applies."""

    model_config = ConfigDict(extra="forbid")

    gpus: list[str] = Field(default_factory=list)
    """GPU names the evidence was measured on (``cpu`` for the interpreter)."""
    dtypes: list[str] = Field(default_factory=list)
    """Input dtypes of the tasks behind the lesson."""
    shape_regimes: list[str] = Field(default_factory=list)
    """Shape regimes (``ragged``, ``large-k``, ``any``)."""
    tags: list[str] = Field(default_factory=list)
    """Category tags of the tasks behind the lesson."""


class Effect(BaseModel):
    """The measured effect of a lesson."""

    model_config = ConfigDict(extra="forbid")

    verdict_before: str = ""
    """The verdict before the change (``fail: mismatch on ragged``), for fix lessons."""
    verdict_after: str = ""
    """The verdict after the change."""
    speedup_before: float | None = None
    """Median speedup vs eager before the change (perf lessons)."""
    speedup_after: float | None = None
    """Median speedup vs eager after the change (perf and practice lessons)."""
    observations: int = 0
    """Measurements behind the medians."""


class Lesson(BaseModel):
    """One lesson: what to do, when, what it buys, and the traces that show it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    id: str
    """Stable id: kind, technique, failure class and regime."""
    kind: Literal["fix", "perf", "practice"]
    """fix: failing -> passing; perf: measured speed change; practice: used by final kernels."""
    technique: str
    """Technique id (see ``upskills.distill.techniques.TECHNIQUES``) or ``unclassified``."""
    intent: str
    """What to do, in one sentence."""
    preconditions: Preconditions = Field(default_factory=Preconditions)
    """When the lesson applies."""
    effect: Effect = Field(default_factory=Effect)
    """Measured effect."""
    failure: str | None = None
    """The failure the lesson avoids (error class and verifier message), for fix lessons."""
    example: str = ""
    """Code: the fix as a diff (fix, perf) or the technique in a final kernel (practice)."""
    sources: list[LessonSource] = Field(default_factory=list)
    """Traces and event ranges the lesson comes from."""
    prevalence: int = 1
    """Distinct traces behind the lesson."""
    contradicting: int = 0
    """Observations that went against the lesson (perf: the technique made things slower)."""
    supported: bool = True
    """False when the evidence against outweighs the evidence for (kept for references only)."""

    @property
    def failure_headline(self) -> str:
        """Short name of the failure: error class, and the shape regime when it is special."""
        cls = (self.failure or "failure").split(":", 1)[0]
        regimes = [r for r in self.preconditions.shape_regimes if r != "any"]
        return f"{cls} on {'/'.join(regimes)} shapes" if regimes else cls


_ABS_PATH = re.compile(r"(?:/[\w.\-]+)+/([\w.\-]+)")


def clean_message(message: str, limit: int = 300) -> str:
    """Verifier message with absolute paths reduced to file names, one line, bounded."""
    text = " ".join(_ABS_PATH.sub(r"\1", message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@functools.cache
def task_meta(name: str) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    """Tags, dtypes and ragged variant names of a task, or empty when it cannot be loaded."""
    try:
        from upskills.tasks import load_task

        task = load_task(name)
    except Exception:  # noqa: BLE001 - an unknown task only loses metadata
        return (), (), frozenset()
    ragged = frozenset(v.name for v in task.all_variants() if v.ragged)
    return tuple(task.tags), tuple(task.dtypes), ragged


def _regime(trace: TraceSummary, failing: Iterable[str]) -> str:
    tags, _, ragged = task_meta(trace.task)
    failing = list(failing)
    if failing and any(v in ragged or "ragged" in v for v in failing):
        return "ragged"
    if "gemm" in tags:
        return "large-k"
    return "any"


def _diff(before: str, after: str, limit: int = 24) -> str:
    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), "before.py", "after.py", n=1, lineterm=""
        )
    )
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


def _snippet(source: str, line: int, radius: int = 3) -> str:
    lines = source.splitlines()
    lo, hi = max(0, line - 1 - radius), min(len(lines), line + radius)
    return "\n".join(lines[lo:hi])


def _verdict_text(a: Attempt) -> str:
    if a.passed:
        return "pass" + (f" ({a.speedup:.2f}x eager)" if a.speedup is not None else "")
    where = f" on {', '.join(a.failing_variants)}" if a.failing_variants else ""
    return f"fail: {a.error_class or 'error'}{where}"


def _source(trace: TraceSummary, first: int, last: int) -> LessonSource:
    return LessonSource(
        trace_id=trace.trace_id,
        trace_sha256=trace.sha256,
        task=trace.task,
        first_line=first,
        last_line=last,
    )


def _pre(trace: TraceSummary, regime: str, attempts: Iterable[Attempt]) -> Preconditions:
    tags, dtypes, _ = task_meta(trace.task)
    gpus = sorted({a.gpu or "cpu" for a in attempts})
    return Preconditions(gpus=gpus, dtypes=list(dtypes), shape_regimes=[regime], tags=list(tags))


def _changed_techniques(before: str, after: str) -> list[str]:
    tb, ta = analyze_kernel(before), analyze_kernel(after)
    added = [t for t in ta if t not in tb]
    if not added:
        added = [t for t in ("launch_config", "autotune") if t in ta and t in tb and ta[t] != tb[t]]
    return added


def mine_trace(trace: TraceSummary) -> list[Lesson]:
    """Lessons of one trace (each with prevalence 1), from its episodes and final kernel."""
    lessons: list[Lesson] = []
    for ep in trace.episodes:
        b, a = ep.before, ep.after
        src = _source(trace, b.first_line, a.last_line)
        if ep.repaired:
            regime = _regime(trace, b.failing_variants)
            failure = f"{b.error_class or 'error'}: {clean_message(b.message)}"
            for tech in _changed_techniques(b.kernel_source, a.kernel_source) or ["unclassified"]:
                intent = (
                    TECHNIQUES[tech].intent if tech in TECHNIQUES else "Apply the change shown."
                )
                lessons.append(
                    Lesson(
                        id=f"fix-{tech}-{b.error_class or 'error'}-{regime}",
                        kind="fix",
                        technique=tech,
                        intent=intent,
                        preconditions=_pre(trace, regime, (b, a)),
                        effect=Effect(
                            verdict_before=_verdict_text(b),
                            verdict_after=_verdict_text(a),
                            speedup_after=a.speedup,
                            observations=1,
                        ),
                        failure=failure,
                        example=_diff(b.kernel_source, a.kernel_source),
                        sources=[src],
                    )
                )
        elif b.passed and a.passed and b.speedup and a.speedup:
            ratio = a.speedup / b.speedup
            if 1 / PERF_THRESHOLD < ratio < PERF_THRESHOLD:
                continue
            regime = _regime(trace, ())
            for tech in _changed_techniques(b.kernel_source, a.kernel_source):
                lessons.append(
                    Lesson(
                        id=f"perf-{tech}-{regime}",
                        kind="perf",
                        technique=tech,
                        intent=TECHNIQUES[tech].intent,
                        preconditions=_pre(trace, regime, (b, a)),
                        effect=Effect(
                            speedup_before=b.speedup, speedup_after=a.speedup, observations=1
                        ),
                        example=_diff(b.kernel_source, a.kernel_source),
                        sources=[src],
                        contradicting=0 if ratio > 1 else 1,
                        supported=ratio > 1,
                    )
                )
    final = trace.final_kernel()
    if final is not None:
        regime = _regime(trace, ())
        for tech, finding in analyze_kernel(final.kernel_source).items():
            lessons.append(
                Lesson(
                    id=f"practice-{tech}",
                    kind="practice",
                    technique=tech,
                    intent=TECHNIQUES[tech].intent,
                    preconditions=_pre(trace, regime, (final,)),
                    effect=Effect(speedup_after=final.speedup, observations=1),
                    example=_snippet(final.kernel_source, finding.line),
                    sources=[_source(trace, final.first_line, final.last_line)],
                )
            )
    return lessons


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _union(lists: Iterable[list[str]]) -> list[str]:
    return sorted({x for xs in lists for x in xs})


def merge_lessons(lessons: Iterable[Lesson]) -> list[Lesson]:
    """Merge lessons with the same id across traces; count prevalence; resolve conflicts.

    Conflicts are resolved by evidence: a perf lesson whose observations mostly went the wrong
    way (the technique made kernels slower) is marked ``supported=False``.

    Returns:
        Merged lessons sorted by (unsupported last, prevalence descending, id).
    """
    groups: dict[str, list[Lesson]] = defaultdict(list)
    for lesson in lessons:
        groups[lesson.id].append(lesson)
    merged: list[Lesson] = []
    for lesson_id in sorted(groups):
        group = sorted(
            groups[lesson_id], key=lambda x: (x.sources[0].trace_id, x.sources[0].first_line)
        )
        sources = sorted(
            {(s.trace_id, s.first_line): s for g in group for s in g.sources}.values(),
            key=lambda s: (s.trace_id, s.first_line),
        )
        against = sum(g.contradicting for g in group)
        pro = [g for g in group if g.contradicting == 0] or group
        exemplar = min(pro, key=lambda g: (len(g.example.splitlines()), g.sources[0].trace_id))
        effect = Effect(
            verdict_before=exemplar.effect.verdict_before,
            verdict_after=exemplar.effect.verdict_after,
            speedup_before=_median(
                [g.effect.speedup_before for g in pro if g.effect.speedup_before]
            ),
            speedup_after=_median([g.effect.speedup_after for g in pro if g.effect.speedup_after]),
            observations=sum(g.effect.observations for g in group),
        )
        pre = Preconditions(
            gpus=_union(g.preconditions.gpus for g in group),
            dtypes=_union(g.preconditions.dtypes for g in group),
            shape_regimes=_union(g.preconditions.shape_regimes for g in group),
            tags=_union(g.preconditions.tags for g in group),
        )
        merged.append(
            exemplar.model_copy(
                update={
                    "preconditions": pre,
                    "effect": effect,
                    "sources": sources,
                    "prevalence": len({s.trace_id for s in sources}),
                    "contradicting": against,
                    "supported": len(group) - against > against,
                }
            )
        )
    return sorted(merged, key=lambda x: (not x.supported, -x.prevalence, x.id))
