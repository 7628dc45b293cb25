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
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.distill.changes import change_key, fix_patterns, launch_signature
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
    """Shape regimes: ``all``, ``ragged``, failing variant names (``main+ragged``), ``large-k``,
    ``any``."""
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
    """Median speedup vs eager after the change (perf lessons; fix: the fixed kernel's)."""
    compile_before: float | None = None
    """Median speedup vs ``torch.compile`` before the change, same verdicts as
    ``speedup_before``."""
    compile_after: float | None = None
    """Median speedup vs ``torch.compile`` after the change."""
    attribution: Literal["", "isolated", "ablated", "confounded"] = ""
    """Perf lessons: ``isolated`` (the diff was one change), ``ablated`` (the change was
    applied alone and timed in the same session as before/after), ``confounded`` (several
    changes measured only together; ``changes`` names them)."""
    changes: list[str] = Field(default_factory=list)
    """Perf lessons: every change in the diff (``adds vectorized_memory; num_warps 4 -> 8``)."""
    note: str = ""
    """Why a perf effect is confounded, or how its changes interact."""
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
    explanation: str = ""
    """The agent's own account of the change (its notes before the fixed attempt, trimmed)."""
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
        if not regimes:
            return cls
        if all(r in NAMED_REGIMES for r in regimes):
            return f"{cls} on {'/'.join(regimes)} shapes"
        return f"{cls} on variants {'/'.join(regimes)}"


NAMED_REGIMES = ("all", "ragged", "large-k")
"""Regimes with a name; any other regime is the list of failing variants (``main+ragged``)."""


_ABS_PATH = re.compile(r"(?:/[\w.\-]+)+/([\w.\-]+)")


def clean_message(message: str, limit: int = 300) -> str:
    """Verifier message with absolute paths reduced to file names, one line, bounded."""
    text = " ".join(_ABS_PATH.sub(r"\1", message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


TaskMeta = tuple[tuple[str, ...], tuple[str, ...], frozenset[str], frozenset[str]]
"""Tags, dtypes, ragged variant names and all variant names of a task."""

_NO_META: TaskMeta = ((), (), frozenset(), frozenset())


def _meta_of(task: Any) -> TaskMeta:
    variants = task.all_variants()
    ragged = frozenset(v.name for v in variants if v.ragged)
    return tuple(task.tags), tuple(task.dtypes), ragged, frozenset(v.name for v in variants)


@functools.cache
def task_meta(name: str) -> TaskMeta:
    """Tags, dtypes, ragged variant names and all variant names of a task (empty if unknown)."""
    try:
        from upskills.tasks import load_task

        return _meta_of(load_task(name))
    except Exception:  # noqa: BLE001 - an unknown task only loses metadata
        return _NO_META


@functools.cache
def _embedded_meta(trace_path: str) -> TaskMeta:
    from upskills.tasks.embedded import embedded_task

    try:
        task = embedded_task(trace_path)
    except ValueError:  # a state.json with no valid task only loses metadata
        return _NO_META
    return _NO_META if task is None else _meta_of(task)


def trace_meta(trace: TraceSummary) -> TaskMeta:
    """``task_meta`` of a trace's task: a built-in by its name, else the task its session embeds.

    A KernelBench task's name loads nothing, so its lessons had no dtypes, tags or variants; a
    session folder's ``state.json`` carries the whole task, on any machine, ``.kb/`` or not.
    """
    meta = task_meta(trace.task)
    return meta if meta[3] else _embedded_meta(str(trace.path))


def _regime(trace: TraceSummary) -> str:
    """Regime of a passing kernel's lesson (perf, practice): ``large-k`` for GEMMs, else any."""
    return "large-k" if "gemm" in trace_meta(trace)[0] else "any"


def fix_regime(
    task: str,
    failing: Iterable[str],
    checked: Iterable[str] = (),
    meta: TaskMeta | None = None,
) -> str:
    """The shape regime of a failure, from the variants that failed.

    Args:
        task: the task's name (its variants say which are ragged).
        failing: variants with a failing trial.
        checked: every variant the verdict ran; when empty, the task's variants stand in.
        meta: the task's ``task_meta`` when known otherwise (``trace_meta``); else by name.

    Returns:
        ``all`` when every variant checked failed, ``ragged`` when only ragged variants
        failed, ``any`` when no variant ran (a compile or launch error), else the failing
        variant names joined by ``+``.
    """
    _, _, ragged, variants = meta or task_meta(task)
    failing = sorted(set(failing))
    ran = set(checked) or variants
    if not failing:
        return "any"
    if ran and set(failing) >= ran:
        return "all"
    if all(v in ragged or "ragged" in v for v in failing):
        return "ragged"
    return "+".join(failing)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "etc.")
_PREDICTION = re.compile(r"^(?:predict|expect)\b", re.IGNORECASE)
_SYMPTOM = re.compile(r"^verdict:\s*", re.IGNORECASE)
_LABEL = re.compile(r"^(?:attempt\s*\d+\s+)?(?:plan|note)\s*:\s*", re.IGNORECASE)
"""A note's leading label (``Attempt 2 plan:``), which says nothing about the change."""
MIN_EXPLANATION = 40
"""Below this many characters, the explanation keeps the agent's symptom sentence too."""


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for part in _SENTENCE_END.split(" ".join(text.split())):
        if out and out[-1].lower().endswith(_ABBREVIATIONS):
            out[-1] += " " + part
        elif part:
            out.append(part)
    return out


def explain(notes: Iterable[str], max_sentences: int = 2, limit: int = 320) -> str:
    """The agent's own explanation of a change, trimmed to a sentence or two.

    The notes written between a failing verdict and the next attempt are split into sentences;
    predictions (``Predict a pass.``) are dropped, and so is a leading ``Verdict: ...`` sentence
    (the symptom, which the failure message already shows) unless what remains is shorter than
    ``MIN_EXPLANATION`` characters, in which case the symptom stays without its label. The first
    ``max_sentences`` that fit in ``limit`` characters are kept; a leading label
    (``Attempt 2 plan:``) is dropped. The same notes always give the same text.

    Returns:
        The explanation, or "" when the notes hold none.
    """
    sentences: list[str] = []
    for note in notes:
        parts = [p for p in _sentences(_LABEL.sub("", note)) if not _PREDICTION.match(p)]
        if parts and _SYMPTOM.match(parts[0]):
            symptom, rest = _SYMPTOM.sub("", parts[0]), parts[1:]
            parts = rest if len(" ".join(rest)) >= MIN_EXPLANATION else [symptom, *rest]
        sentences += parts
    out = ""
    for sentence in sentences[:max_sentences]:
        joined = f"{out} {sentence}".strip()
        if len(joined) > limit:
            if not out:
                out = sentence[: limit - 3].rsplit(" ", 1)[0] + "..."
            break
        out = joined
    return out


def diff_text(before: str, after: str, limit: int = 24) -> str:
    """Unified diff (one line of context) of two kernels, cut after ``limit`` lines."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), "before.py", "after.py", n=1, lineterm=""
        )
    )
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


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
    tags, dtypes, _, _ = trace_meta(trace)
    gpus = sorted({a.gpu or "cpu" for a in attempts})
    return Preconditions(gpus=gpus, dtypes=list(dtypes), shape_regimes=[regime], tags=list(tags))


def _changed_techniques(before: str, after: str, repair: bool = False) -> list[str]:
    """Techniques a change added; for a repair also the fix patterns it matches.

    When nothing was added, a changed launch setup (``num_warps``, autotune configs and sizes
    outside the jit functions) counts as launch configuration / autotuning.
    """
    tb, ta = analyze_kernel(before), analyze_kernel(after)
    added = [t for t in ta if t not in tb]
    if repair:
        added += [p for p in fix_patterns(before, after) if p not in added]
    if not added and launch_signature(before) != launch_signature(after):
        added = [t for t in ("launch_config", "autotune") if t in ta]
    return added


def _fix_lessons(trace: TraceSummary, b: Attempt, a: Attempt, src: LessonSource) -> list[Lesson]:
    regime = fix_regime(trace.task, b.failing_variants, b.checked_variants, trace_meta(trace))
    err = b.error_class or "error"
    failure = f"{err}: {clean_message(b.message)}"
    note = explain(a.notes)
    out = []
    for tech in _changed_techniques(b.kernel_source, a.kernel_source, repair=True) or [None]:
        if tech is None:  # each distinct change is its own lesson, told in the agent's words
            lesson_id = (
                f"fix-unclassified-{err}-{regime}-{change_key(b.kernel_source, a.kernel_source)}"
            )
            intent = note or "Apply the change shown."
        else:
            lesson_id, intent = f"fix-{tech}-{err}-{regime}", TECHNIQUES[tech].intent
        out.append(
            Lesson(
                id=lesson_id,
                kind="fix",
                technique=tech or "unclassified",
                intent=intent,
                preconditions=_pre(trace, regime, (b, a)),
                effect=Effect(
                    verdict_before=_verdict_text(b),
                    verdict_after=_verdict_text(a),
                    speedup_after=a.speedup,
                    observations=1,
                ),
                failure=failure,
                explanation=note,
                example=diff_text(b.kernel_source, a.kernel_source),
                sources=[src],
            )
        )
    return out


AblationLookup = Callable[[TraceSummary, Attempt, Attempt], Any]
"""(trace, before, after) -> the episode's ``EpisodeAblation`` or None (not measured)."""


def mine_trace(trace: TraceSummary, ablations: AblationLookup | None = None) -> list[Lesson]:
    """Lessons of one trace (each with prevalence 1), from its episodes and final kernel.

    A return to a kernel that already passed earlier in the trace is a revert, not a change:
    it yields neither a fix lesson nor a perf lesson (the comparison was already counted when
    the abandoned kernel was measured). A failing -> passing episode is a fix only when
    neither kernel got both verdicts unchanged (``TraceSummary.is_repair``): a kernel that
    failed and later passed with the same hash met a verifier fault, not a bug.

    Args:
        trace: the trace's summary.
        ablations: gives the attribution of a multi-change perf episode (see ``perf.py``);
            None: every multi-change effect is confounded.
    """
    from upskills.distill.perf import perf_lessons
    from upskills.distill.snippets import technique_snippet

    lessons: list[Lesson] = []
    passed: set[str] = (
        {trace.attempts[0].kernel_hash}
        if trace.attempts[:1] and trace.attempts[0].passed
        else set()
    )
    if trace.prior is not None:
        lessons += _cross_session(trace, trace.prior, trace.attempts[0], ablations)
    for ep in trace.episodes:
        b, a = ep.before, ep.after
        src = _source(trace, b.first_line, a.last_line)
        revert = a.kernel_hash in passed
        if a.passed:
            passed.add(a.kernel_hash)
        if revert:
            continue
        if trace.is_repair(ep):
            lessons += _fix_lessons(trace, b, a, src)
        elif b.passed and a.passed and b.speedup and a.speedup:
            ratio = a.speedup / b.speedup
            if 1 / PERF_THRESHOLD < ratio < PERF_THRESHOLD:
                continue
            ablation = ablations(trace, b, a) if ablations else None
            lessons += perf_lessons(trace, b, a, src, _regime(trace), ablation)
    final = trace.final_kernel()
    if final is not None:
        regime = _regime(trace)
        for tech, finding in analyze_kernel(final.kernel_source).items():
            lessons.append(
                Lesson(
                    id=f"practice-{tech}",
                    kind="practice",
                    technique=tech,
                    intent=TECHNIQUES[tech].intent,
                    preconditions=_pre(trace, regime, (final,)),
                    effect=Effect(
                        speedup_after=final.speedup,
                        compile_after=final.speedup_compile,
                        observations=1,
                    ),
                    example=technique_snippet(final.kernel_source, tech, finding.line),
                    sources=[_source(trace, final.first_line, final.last_line)],
                )
            )
    return lessons


def _cross_session(
    trace: TraceSummary, b: Attempt, a: Attempt, ablations: AblationLookup | None
) -> list[Lesson]:
    """Perf lessons of a session's first attempt against the previous session's final kernel.

    Only speed changes between two passing, timed kernels count (a failure of the new kernel is
    not a repair of anything). The source is the new session's first attempt; the effect notes
    that before and after come from different verifier runs and names the earlier trace.
    """
    from upskills.distill.perf import perf_lessons

    if not (b.passed and a.passed and b.speedup and a.speedup):
        return []
    ratio = a.speedup / b.speedup
    if 1 / PERF_THRESHOLD < ratio < PERF_THRESHOLD:
        return []
    ablation = ablations(trace, b, a) if ablations else None
    src = _source(trace, a.first_line, a.last_line)
    out = perf_lessons(trace, b, a, src, _regime(trace), ablation)
    where = (
        f"before: the final kernel of the previous session (trace {trace.prior_trace}), "
        "timed in an earlier verifier run"
    )
    for lesson in out:
        note = "; ".join(x for x in (lesson.effect.note, where) if x)
        lesson.effect = lesson.effect.model_copy(update={"note": note})
    return out


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _union(lists: Iterable[list[str]]) -> list[str]:
    return sorted({x for xs in lists for x in xs})


def _exemplar_rank(lesson: Lesson) -> tuple[bool, bool, int, str]:
    """Order of a lesson's candidate examples: the smallest that shows something.

    A trace with no example never wins over one with an example; for a practice lesson a
    one-line example (a lone ``__syncthreads();``, ``if (r >= m) return;``) ranks after
    examples of two lines or more, which show the construct with what it does.
    """
    lines = len(lesson.example.splitlines())
    return (lines == 0, lesson.kind == "practice" and lines < 2, lines, lesson.sources[0].trace_id)


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
        exemplar = min(pro, key=_exemplar_rank)
        effect = Effect(
            verdict_before=exemplar.effect.verdict_before,
            verdict_after=exemplar.effect.verdict_after,
            speedup_before=_median(
                [g.effect.speedup_before for g in pro if g.effect.speedup_before]
            ),
            speedup_after=_median([g.effect.speedup_after for g in pro if g.effect.speedup_after]),
            compile_before=_median(
                [g.effect.compile_before for g in pro if g.effect.compile_before]
            ),
            compile_after=_median([g.effect.compile_after for g in pro if g.effect.compile_after]),
            attribution=exemplar.effect.attribution,
            changes=exemplar.effect.changes,
            note=exemplar.effect.note,
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
