"""Perf lessons: a measured speed change credited only to the change that caused it.

An episode between two passing, timed kernels whose speedup moved by at least 5% is split into
its changes (``changeset``). One change: its effect is the episode's (``isolated``). Several:
each change whose effect was measured alone (``ablate``: before + that change, timed in the
same session) is credited with its own effect (``ablated``); whatever could not be measured
alone is one ``confounded`` lesson that names every change and credits none of them.

Each lesson carries before -> after vs eager and vs ``torch.compile`` from the same verifier
session, the GPU, and the teacher's own notes on the change.
"""

from __future__ import annotations

from collections.abc import Iterable

from upskills.distill.ablate import ChangeEffect, EpisodeAblation
from upskills.distill.changeset import apply_changes, split_changes
from upskills.distill.episodes import Attempt, TraceSummary
from upskills.distill.lessons import (
    PERF_THRESHOLD,
    Effect,
    Lesson,
    LessonSource,
    Preconditions,
    diff_text,
    explain,
    trace_meta,
)
from upskills.distill.techniques import TECHNIQUES

CONFOUNDED = "confounded"
"""Technique id of a perf lesson whose effect belongs to several changes together."""

NOTE_SENTENCES, NOTE_LIMIT = 3, 600
"""How much of the teacher's note a perf lesson keeps: what it measured, why, what it changed
(a fix needs only the why; a speed change is explained by a profiler reading and a plan)."""


def _pre(trace: TraceSummary, regime: str, gpus: list[str]) -> Preconditions:
    tags, dtypes, _, _ = trace_meta(trace)
    return Preconditions(gpus=gpus, dtypes=list(dtypes), shape_regimes=[regime], tags=list(tags))


def _intent(techniques: list[str], summary: str, note: str) -> str:
    if len(techniques) == 1 and techniques[0] in TECHNIQUES:
        return TECHNIQUES[techniques[0]].intent
    return note or f"Apply the change shown ({summary})."


def _credited(
    trace: TraceSummary,
    b: Attempt,
    a: Attempt,
    src: LessonSource,
    ablation: EpisodeAblation,
    eff: ChangeEffect,
    regime: str,
) -> list[Lesson]:
    ratio = eff.effect or 1.0
    if 1 / PERF_THRESHOLD < ratio < PERF_THRESHOLD:
        return []
    before, alone = ablation.before, eff.alone
    assert before is not None and alone is not None
    changes = split_changes(b.kernel_source, a.kernel_source)
    partial = apply_changes(b.kernel_source, a.kernel_source, [changes[eff.index]])
    techs = eff.techniques or ["unclassified"]
    note = explain(a.notes, NOTE_SENTENCES, NOTE_LIMIT)
    out = []
    for tech in techs:
        lesson_id = f"perf-{tech}-{regime}" if tech in TECHNIQUES else f"perf-change-{eff.key}"
        out.append(
            Lesson(
                id=lesson_id,
                kind="perf",
                technique=tech,
                intent=_intent([tech], eff.summary, note),
                preconditions=_pre(trace, regime, sorted({before.gpu or before.device})),
                effect=Effect(
                    speedup_before=before.speedup_eager,
                    speedup_after=alone.speedup_eager,
                    compile_before=before.speedup_compile,
                    compile_after=alone.speedup_compile,
                    attribution="ablated",
                    changes=[eff.summary],
                    note="; ".join(
                        x
                        for x in (
                            "measured alone, out of: "
                            + "; ".join(c.summary for c in ablation.changes),
                            _together(ablation),
                            ablation.interaction,
                        )
                        if x
                    ),
                    observations=1,
                ),
                explanation=note,
                example=diff_text(b.kernel_source, partial),
                sources=[src],
                contradicting=0 if ratio > 1 else 1,
                supported=ratio > 1,
            )
        )
    return out


REWRITE_SHARE = 0.5
"""A single change that removes more than this share of the kernel's code lines is a rewrite."""


def _rewrites(before: str, removed: tuple[str, ...]) -> bool:
    """Whether a change removing ``removed`` replaces most of ``before``'s code (not comments)."""

    def code(lines: Iterable[str]) -> list[str]:
        return [x for x in (line.strip() for line in lines) if x and not x.startswith("#")]

    total = len(code(before.splitlines()))
    return total > 0 and len(code(removed)) > REWRITE_SHARE * total


def perf_lessons(
    trace: TraceSummary,
    b: Attempt,
    a: Attempt,
    src: LessonSource,
    regime: str,
    ablation: EpisodeAblation | None = None,
) -> list[Lesson]:
    """The perf lessons of one episode between two passing, timed kernels.

    Args:
        trace: the trace (task metadata).
        b: the earlier kernel (passing, timed).
        a: the later kernel (passing, timed).
        src: where in the trace the episode is.
        regime: shape regime of the task (``large-k`` for GEMMs, else ``any``).
        ablation: the episode's attribution (``ablate.ablate_episode``); None: not measured.

    Returns:
        Credited lessons (one per technique of each change measured alone, or the single
        change), and at most one ``confounded`` lesson naming the changes left.
    """
    changes = split_changes(b.kernel_source, a.kernel_source)
    ratio = (a.speedup or 1.0) / (b.speedup or 1.0)
    note = explain(a.notes, NOTE_SENTENCES, NOTE_LIMIT)
    gpus = sorted({x.gpu or "unknown GPU" for x in (b, a)})
    effect = Effect(
        speedup_before=b.speedup,
        speedup_after=a.speedup,
        compile_before=b.speedup_compile,
        compile_after=a.speedup_compile,
        changes=[c.summary for c in changes],
        observations=1,
    )
    single = changes[0].techniques if len(changes) == 1 else ()
    rewrite = len(changes) == 1 and _rewrites(b.kernel_source, changes[0].removed)
    if len(changes) == 1 and len(single) <= 1 and not rewrite:
        if not single and ratio < 1:
            return []  # "apply the change shown" is no lesson when the change made it slower
        tech = single[0] if single else "unclassified"
        lesson_id = f"perf-{tech}-{regime}" if single else f"perf-change-{changes[0].key}"
        return [
            Lesson(
                id=lesson_id,
                kind="perf",
                technique=tech,
                intent=_intent(list(single), changes[0].summary, note),
                preconditions=_pre(trace, regime, gpus),
                effect=effect.model_copy(update={"attribution": "isolated"}),
                explanation=note,
                example=diff_text(b.kernel_source, a.kernel_source),
                sources=[src],
                contradicting=0 if ratio > 1 else 1,
                supported=ratio > 1,
            )
        ]
    ablation = ablation or EpisodeAblation(
        task=trace.task, status="confounded", reason="not measured one change at a time"
    )
    lessons: list[Lesson] = []
    left = list(range(len(changes)))
    if ablation.changes and len(ablation.changes) == len(changes):
        for eff in ablation.changes:
            if eff.credited:
                lessons += _credited(trace, b, a, src, ablation, eff, regime)
                left.remove(eff.index)
    if left:
        key = "-".join(sorted(changes[i].key for i in left))[:16]
        reason = ablation.reason or "changes measured only together"
        if rewrite:
            reason = "one change that rewrites most of the kernel (parts not measured alone)"
        elif len(changes) == 1:
            reason = "one change that does several things: " + ", ".join(single)
        lessons.append(
            Lesson(
                id=f"perf-{CONFOUNDED}-{key}",
                kind="perf",
                technique=CONFOUNDED,
                intent=note or "Several changes together; their separate effects are unknown.",
                preconditions=_pre(trace, regime, gpus),
                effect=effect.model_copy(
                    update={
                        "attribution": "confounded",
                        "changes": [changes[i].summary for i in left],
                        "note": reason,
                    }
                ),
                explanation=note,
                example=diff_text(b.kernel_source, a.kernel_source, limit=40),
                sources=[src],
                contradicting=0 if ratio > 1 else 1,
                supported=ratio > 1,
            )
        )
    return lessons


def _together(ablation: EpisodeAblation) -> str:
    """The whole attempt's speed from the same session, to read the change alone against."""
    after = ablation.after
    if after is None or after.speedup_eager is None:
        return ""
    n = len(ablation.changes)
    return f"all {n} changes together: {after.speedup_eager:.2f}x eager in the same session"
