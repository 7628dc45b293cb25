from __future__ import annotations

from upskills.distill.lessons import Effect, Lesson, LessonSource, Preconditions
from upskills.distill.render import PackPlan, render_pack
from upskills.skills.provenance import Provenance
from upskills.skills.tokens import COMPACT_TOKEN_BUDGET, SKILL_TOKEN_BUDGET, estimate_tokens


def _lesson(i: int) -> Lesson:
    example = "\n".join(
        f"+    acc{i}_{j} = tl.load(ptr + offs_{j}, mask=offs_{j} < n)" for j in range(20)
    )
    return Lesson(
        id=f"fix-masking-mismatch-case{i:03d}",
        kind="fix",
        technique="masking",
        intent="Guard every load.",
        preconditions=Preconditions(shape_regimes=["ragged"]),
        effect=Effect(verdict_before="fail: mismatch on ragged", verdict_after="pass"),
        failure=f"mismatch: case {i} " + "detail " * 30,
        example=example,
        sources=[
            LessonSource(
                trace_id=f"{i:032x}", trace_sha256="0" * 16, task="t", first_line=1, last_line=9
            )
        ]
        * 2,
        prevalence=100 - i,
    )


def test_budget_trims_skill_md_by_prevalence_and_keeps_everything_in_references():
    lessons = [_lesson(i) for i in range(60)]
    plan = PackPlan("big-pack", "Big pack", "any", lessons, [], Provenance(distiller="x"))
    files = render_pack(plan, "1.0.0")
    assert estimate_tokens(files["SKILL.md"]) <= SKILL_TOKEN_BUDGET
    assert estimate_tokens(files["references/compact.md"]) <= COMPACT_TOKEN_BUDGET
    assert 0 < len(plan.main_ids) < 60
    assert plan.main_ids == [x.id for x in lessons[: len(plan.main_ids)]]  # most prevalent first
    refs = files["references/lessons.md"]
    assert all(x.id in refs for x in lessons)
    kept, dropped = len(plan.main_ids) - 1, len(plan.main_ids)
    assert f"`mismatch: case {kept} detail" in files["SKILL.md"]
    assert f"`mismatch: case {dropped} detail" not in files["SKILL.md"]
    assert f"`{lessons[dropped].id}` (references only)" in refs
