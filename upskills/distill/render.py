"""Render a pack plan into files: SKILL.md, the compact variant, references and templates.

Rendering is a pure function of the plan (lessons, templates, provenance, version): no clocks,
no random ids, every list sorted, so the same evidence gives the same bytes. Lessons that do not
fit the SKILL.md budget (or were seen in fewer traces than the configured prevalence) go to
``references/lessons.md``, which carries every lesson with all its sources.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from upskills.distill.guidance import LOWERING, WORKFLOW, WORKFLOW_COMPACT, sizing_rules
from upskills.distill.lessons import Lesson
from upskills.distill.techniques import TECHNIQUES
from upskills.skills.provenance import Provenance
from upskills.skills.tokens import COMPACT_TOKEN_BUDGET, SKILL_TOKEN_BUDGET, estimate_tokens

_CUDA_CODE = re.compile(
    r"__(?:global|device|shared)__|__shfl|threadIdx|blockIdx|\)\s*\{\s*$|;\s*(?://.*)?$", re.M
)
"""Code that is CUDA C++ (an example cut from a ``load_inline`` string), fenced as ``cpp``:
CUDA keywords, a block opened after ``)``, or a line ending in ``;`` (Python lines do not)."""

MAX_SOURCES_SHOWN = 3
"""Sources cited inline per lesson in SKILL.md (all are in references/lessons.md)."""

MAX_RARE_SHOWN = 12
"""Repairs seen too rarely for a full entry, listed in one line each under SKILL.md's Pitfalls."""


@dataclass(frozen=True)
class Template:
    """A verified final kernel shipped in ``scripts/``."""

    task: str
    task_hash: str
    trace_id: str
    source: str
    speedup: float | None
    speedup_compile: float | None = None
    gpu: str | None = None

    @property
    def measured(self) -> str:
        """``1.42x eager, 0.97x torch.compile on NVIDIA H200`` or ``correctness only``."""
        if self.speedup is None:
            return "verified for correctness only (not timed)"
        comp = f", {self.speedup_compile:.2f}x torch.compile" if self.speedup_compile else ""
        return f"{self.speedup:.2f}x eager{comp} on {self.gpu or 'unknown GPU'}"

    @property
    def filename(self) -> str:
        """``scripts/<task>_kernel.py``."""
        return f"scripts/{self.task}_kernel.py"


@dataclass
class PackPlan:
    """Everything one pack is rendered from."""

    name: str
    title: str
    scope: str
    lessons: list[Lesson]
    templates: list[Template]
    provenance: Provenance
    min_prevalence: int = 2
    rare_fixes: int = MAX_RARE_SHOWN
    body_override: str | None = None
    main_ids: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[str]:
        """Tasks behind the pack's lessons."""
        return sorted({s.task for lesson in self.lessons for s in lesson.sources})

    @property
    def trace_count(self) -> int:
        """Distinct traces behind the pack."""
        return len({s.trace_id for lesson in self.lessons for s in lesson.sources})


def _title(lesson: Lesson) -> str:
    info = TECHNIQUES.get(lesson.technique)
    if info:
        return info.title
    return "Several changes together" if lesson.technique == "confounded" else "The change shown"


def _fix_heading(lesson: Lesson) -> str:
    """``mismatch on ragged shapes`` (+ the tasks, for a change no analyzer could name)."""
    if lesson.technique in TECHNIQUES:
        return lesson.failure_headline
    return f"{lesson.failure_headline} in {', '.join(sorted({s.task for s in lesson.sources}))}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _speed(value: float | None) -> str:
    return f"{value:.2f}x eager" if value is not None else "not timed"


def _before_after(lesson: Lesson) -> str:
    """``0.45x -> 0.98x eager, 0.30x -> 0.66x torch.compile, NVIDIA H200``."""
    e = lesson.effect
    if e.speedup_before is None or e.speedup_after is None:
        return "not timed"
    text = f"{e.speedup_before:.2f}x -> {e.speedup_after:.2f}x eager"
    if e.compile_before is not None and e.compile_after is not None:
        text += f", {e.compile_before:.2f}x -> {e.compile_after:.2f}x torch.compile"
    return text + f", {', '.join(lesson.preconditions.gpus) or 'unknown GPU'}"


def _cite(lesson: Lesson, limit: int | None = MAX_SOURCES_SHOWN) -> str:
    shown = lesson.sources if limit is None else lesson.sources[:limit]
    parts = [f"trace `{s.trace_id}` ({s.task}, lines {s.first_line}-{s.last_line})" for s in shown]
    more = len(lesson.sources) - len(shown)
    return "; ".join(parts) + (f"; and {more} more in references/lessons.md" if more > 0 else "")


def _pre(lesson: Lesson) -> str:
    p = lesson.preconditions
    bits = []
    if p.shape_regimes and p.shape_regimes != ["any"]:
        bits.append("shapes: " + ", ".join(p.shape_regimes))
    if p.dtypes:
        bits.append("dtypes: " + ", ".join(p.dtypes))
    if p.gpus:
        bits.append("measured on: " + ", ".join(p.gpus))
    return "; ".join(bits)


def _lesson_block(lesson: Lesson, full: bool = False, seen: dict[str, str] | None = None) -> str:
    """One lesson in Markdown; ``seen`` (example -> where) keeps an example from repeating."""
    title = _title(lesson)
    n = _count(lesson.prevalence, "trace")
    lines: list[str] = []
    if lesson.kind == "fix":
        lines.append(f"### {_fix_heading(lesson)} -> fixed by {title.lower()} ({n})")
        lines.append(f"- Failure: `{lesson.failure}`")
        lines.append(f"- Verdicts: {lesson.effect.verdict_before} -> {lesson.effect.verdict_after}")
        lines.append(f"- Fix: {lesson.intent}")
        if lesson.explanation and lesson.explanation != lesson.intent:
            lines.append(f"- In the agent's words: {lesson.explanation}")
        fence = "diff"
    elif lesson.kind == "perf":
        e = lesson.effect
        verb = "helped" if lesson.supported else "did not help"
        lines.append(f"### {title}: {_before_after(lesson)} ({e.attribution or 'isolated'})")
        if e.attribution == "confounded":
            lines.append(
                "- Confounded: these changes were measured only together, so none is credited: "
                + "; ".join(f"`{c}`" for c in e.changes)
                + (f" ({e.note})." if e.note else ".")
            )
        else:
            how = "applied alone (ablation)" if e.attribution == "ablated" else "the only change"
            lines.append(
                f"- {lesson.intent} Measured as {how}: {verb} ({e.observations} "
                f"observation{'' if e.observations == 1 else 's'}, {lesson.contradicting} against)."
            )
            if e.note:
                lines.append(f"- Note: {e.note}.")
        if lesson.explanation and (
            e.attribution == "confounded" or lesson.explanation != lesson.intent
        ):
            lines.append(f"- In the teacher's words: {lesson.explanation}")
        fence = "diff"
    else:
        lines.append(f"### {title} ({n})")
        lines.append(f"- {lesson.intent}")
        if lesson.technique in LOWERING:
            lines.append(f"- {LOWERING[lesson.technique]}")
        fence = "cpp" if _CUDA_CODE.search(lesson.example) else "python"
    if _pre(lesson):
        lines.append(f"- When: {_pre(lesson)}")
    lines.append(f"- Sources: {_cite(lesson, None if full else MAX_SOURCES_SHOWN)}")
    if lesson.example and seen is not None and _norm(lesson.example) in seen:
        lines.append(f"- Example: as shown above under {seen[_norm(lesson.example)]}.")
    elif lesson.example:
        if seen is not None:
            seen[_norm(lesson.example)] = f"*{title}*"
        lines += ["", f"```{fence}", lesson.example.rstrip(), "```"]
    return "\n".join(lines)


def _norm(code: str) -> str:
    """Code with whitespace normalised: two examples that differ only in layout are one."""
    return " ".join(code.split())


def _frontmatter(plan: PackPlan, version: str, description: str) -> str:
    meta = {
        "version": version,
        "generator": plan.provenance.distiller,
        "traces": str(plan.trace_count),
        "lessons": str(len(plan.lessons)),
        "evidence-sha256": plan.provenance.evidence_sha256,
        "provenance": "references/provenance.json",
    }
    lines = ["---", f"name: {plan.name}", f"description: {json.dumps(description)}"]
    lines += ["license: Apache-2.0", "metadata:"]
    lines += [f"  {k}: {json.dumps(v)}" for k, v in meta.items()]
    return "\n".join(lines + ["---", ""])


def describe(plan: PackPlan) -> str:
    """The frontmatter description: what the pack covers and when to use it (<= 1024 chars)."""
    techs = []
    for lesson in plan.lessons:
        title = _title(lesson).lower()
        if lesson.supported and lesson.technique in TECHNIQUES and title not in techs:
            techs.append(title)
    errors = sorted(
        {(x.failure or "error").split(":", 1)[0] for x in plan.lessons if x.kind == "fix"}
        if any(x.technique not in TECHNIQUES for x in plan.lessons)
        else set()
    )
    if errors:
        techs.append(f"verified repairs of {', '.join(errors)} failures")
    text = (
        f"{plan.title} (Triton/CUDA): {', '.join(techs[:8]) or 'lessons from traces'}. "
        f"Use when writing, fixing or speeding up {plan.scope} kernels. Distilled from "
        f"{_count(plan.trace_count, 'verified trace')} ({', '.join(plan.tasks[:8])}"
        f"{', ...' if len(plan.tasks) > 8 else ''})."
    )
    return text[:1024]


def _rare_line(lesson: Lesson) -> str:
    """One line: the failure, where, what fixed it (in the agent's words when it gave some)."""
    tasks = ", ".join(sorted({s.task for s in lesson.sources}))
    fix = lesson.explanation or lesson.intent
    if lesson.technique in TECHNIQUES:
        fix = f"{_title(lesson)}. {fix}"
    src = lesson.sources[0]
    return f"- `{lesson.failure_headline}` in {tasks} -> {fix} (trace `{src.trace_id}`)"


def _sections(plan: PackPlan, main: list[Lesson], rare: list[Lesson] | None = None) -> list[str]:
    fixes = [x for x in main if x.kind == "fix"]
    perf = [x for x in main if x.kind == "perf"]
    practice = [x for x in main if x.kind == "practice"]
    out = [
        f"# {plan.title}",
        "",
        f"Distilled by upskills from {_count(plan.trace_count, 'verified trace')} of "
        f"{_count(len(plan.tasks), 'task')}. Every lesson below cites the trace and the lines "
        "of its events; numbers come from the verifier.",
        "",
        "## When to use",
        "",
        f"- You are writing a Triton or CUDA kernel for {plan.scope} work.",
    ]
    if fixes:
        out.append(
            "- A kernel fails the verifier with: "
            + "; ".join(sorted({f"`{x.failure_headline}`" for x in fixes}))
            + "."
        )
    if perf:
        out.append("- A correct kernel is slower than it should be.")
    out += ["", "## Workflow", "", *WORKFLOW, "", "## Techniques", ""]
    seen: dict[str, str] = {}
    out += [_lesson_block(x, seen=seen) + "\n" for x in practice] or [
        "No technique seen often enough yet; see references/lessons.md.\n"
    ]
    out += ["## Pitfalls", ""]
    out += [_lesson_block(x, seen=seen) + "\n" for x in fixes] or (
        [] if rare else ["No repaired failure seen often enough yet; see references/lessons.md.\n"]
    )
    if rare:
        out += [
            "Repairs seen in fewer traces so far (diff, verdicts and sources in "
            "references/lessons.md):",
            "",
            *[_rare_line(x) for x in rare],
            "",
        ]
    if perf:
        out += ["## Performance", ""]
        out += [
            "Each effect is before -> after from one verifier session, vs eager and vs "
            "`torch.compile`, on the GPU named; `ablated` means the change was applied alone "
            "and timed, `confounded` that several changes were only measured together.",
            "",
        ]
        out += [_lesson_block(x, seen=seen) + "\n" for x in perf]
    rules = sizing_rules(main)
    if rules:
        out += ["## Sizing rules (measured)", "", *rules, ""]
    out += ["## Checklist", ""]
    techs = sorted(
        {x.technique for x in main if x.technique in TECHNIQUES}, key=list(TECHNIQUES).index
    )
    out += [f"- [ ] {TECHNIQUES[t].check}" for t in techs] or ["- [ ] Check ragged shapes."]
    out += ["", "## Files", ""]
    for t in plan.templates:
        out.append(
            f"- `{t.filename}`: verified kernel for `{t.task}` (trace `{t.trace_id}`, "
            f"{t.measured}); adapt it rather than starting from scratch."
        )
    out += [
        "- `references/lessons.md`: every lesson with all its sources, including rare ones.",
        "- `references/compact.md`: this skill in brief.",
        "- `references/provenance.json`: traces, hashes, distiller and prompt versions.",
        "",
    ]
    return out


def _rare(plan: PackPlan) -> list[Lesson]:
    """Supported repairs seen in fewer than ``min_prevalence`` traces (at most ``rare_fixes``)."""
    rare = [
        x
        for x in plan.lessons
        if x.kind == "fix" and x.supported and x.prevalence < plan.min_prevalence
    ]
    return rare[: max(plan.rare_fixes, 0)]


def render_skill_body(plan: PackPlan) -> str:
    """SKILL.md body: the largest prefix of eligible lessons that fits the token budget.

    Repairs seen in fewer than ``min_prevalence`` traces get one line each under Pitfalls
    (their full entries stay in references/lessons.md); those lines are dropped first when the
    body does not fit.
    """
    eligible = [x for x in plan.lessons if x.supported and x.prevalence >= plan.min_prevalence]
    measured = [
        x
        for x in plan.lessons
        if x.kind == "perf"
        and x.supported
        and x.effect.attribution in ("isolated", "ablated")
        and x not in eligible
    ]
    main = eligible + measured
    rare = _rare(plan)
    while True:
        body = "\n".join(_sections(plan, main, rare))
        if estimate_tokens(body) + 300 <= SKILL_TOKEN_BUDGET or not (main or rare):
            plan.main_ids = [x.id for x in main]
            return body
        if rare:
            rare.pop()
        else:
            main.pop()


def _first_sentence(text: str) -> str:
    head, _, _ = text.partition(": ")
    cut = text.split(". ")[0].rstrip(".")
    return cut if len(cut) < 220 else head.rstrip(".")


def render_compact(plan: PackPlan) -> str:
    """The compact variant: workflow, pitfalls, measured effects, checks, a template.

    One line each, most useful first, cut to its budget from the end.
    """
    main = [x for x in plan.lessons if x.id in set(plan.main_ids)]
    lines = [f"# {plan.title} (compact)", "", WORKFLOW_COMPACT]
    for x in main:
        if x.kind == "fix":
            lines.append(f"- Pitfall: `{x.failure_headline}` -> {x.intent}")
    for x in main:
        if x.kind == "perf" and x.effect.attribution in ("isolated", "ablated"):
            what = "; ".join(x.effect.changes[:1]) or _title(x).lower()
            lines.append(f"- Measured ({x.effect.attribution}): {what}: {_before_after(x)}.")
    supported = [x for x in plan.lessons if x.supported]
    techs = sorted(
        {x.technique for x in supported if x.technique in TECHNIQUES}, key=list(TECHNIQUES).index
    )
    lines += [f"- Do: {TECHNIQUES[t].intent}" for t in techs]
    lines += [
        f"- {TECHNIQUES[t].title}: {_first_sentence(LOWERING[t])}." for t in techs if t in LOWERING
    ]
    lines += [f"- Sizing (measured){rule[1:]}" for rule in sizing_rules(main, limit=3)]
    lines += [f"- Check: {TECHNIQUES[t].check}" for t in techs]
    for t in plan.templates[:1]:
        lines.append(f"- Template: `{t.filename}` (verified on `{t.task}`, {t.measured}).")
    for x in _rare(plan):  # last, so the budget drops them first
        tasks = ", ".join(sorted({s.task for s in x.sources}))
        lines.append(
            f"- Pitfall ({_count(x.prevalence, 'trace')}): `{x.failure_headline}` in {tasks} -> "
            f"{x.explanation or x.intent}"
        )
    while estimate_tokens("\n".join(lines)) > COMPACT_TOKEN_BUDGET:
        lines.pop()
    return "\n".join(lines) + "\n"


def render_lessons_md(plan: PackPlan) -> str:
    """references/lessons.md: every lesson, all sources, unsupported ones flagged."""
    out = [f"# {plan.title}: all lessons", ""]
    for x in plan.lessons:
        flag = "" if x.supported else " (evidence against outweighs evidence for)"
        where = "SKILL.md" if x.id in plan.main_ids else "references only"
        out += [_lesson_block(x, full=True), f"- Id: `{x.id}` ({where}){flag}", ""]
    return "\n".join(out)


def render_pack(plan: PackPlan, version: str) -> dict[str, str]:
    """Every file of the pack, relative path -> text."""
    body = render_skill_body(plan)
    if plan.body_override is not None:
        body = plan.body_override
    files = {
        "SKILL.md": _frontmatter(plan, version, describe(plan)) + "\n" + body,
        "references/compact.md": render_compact(plan),
        "references/lessons.md": render_lessons_md(plan),
        "references/lessons.json": json.dumps(
            {
                "schema_version": 1,
                "skill_body": sorted(plan.main_ids),
                "lessons": [x.model_dump(mode="json") for x in plan.lessons],
            },
            indent=1,
            sort_keys=True,
        )
        + "\n",
        "references/provenance.json": plan.provenance.to_json(),
    }
    for t in plan.templates:
        header = (
            f"# Verified kernel for task `{t.task}` (task hash {t.task_hash}), from trace "
            f"{t.trace_id}.\n# Measured: {t.measured}.\n"
            f"# Check it: upskills check {t.task} {t.filename}\n"
        )
        files[t.filename] = header + t.source.rstrip() + "\n"
    return files
