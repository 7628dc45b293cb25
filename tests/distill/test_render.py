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


def _practice(trace: int, example: str, technique: str = "masking") -> Lesson:
    return Lesson(
        id=f"practice-{technique}",
        kind="practice",
        technique=technique,
        intent="Guard every load.",
        example=example,
        sources=[
            LessonSource(
                trace_id=f"{trace:032x}", trace_sha256="0" * 16, task="t", first_line=1, last_line=2
            )
        ],
    )


def test_a_practice_example_shows_more_than_one_line_and_cuda_is_fenced_as_cpp():
    from upskills.distill.lessons import merge_lessons

    one_line = "if (r >= m) return;"
    cuda = "float4 v = reinterpret_cast<const float4*>(row)[k];\nout[k] = v;"
    triton = "offs = pid * BLOCK + tl.arange(0, BLOCK)\nx = tl.load(x_ptr + offs, mask=offs < n)"
    [merged] = merge_lessons([_practice(0, ""), _practice(1, one_line), _practice(2, cuda)])
    assert merged.example == cuda and merged.prevalence == 3
    [alone] = merge_lessons([_practice(0, ""), _practice(1, one_line)])
    assert alone.example == one_line  # a one-liner still beats no example
    plan = PackPlan("p", "P", "any", [merged], [], Provenance(distiller="x"), min_prevalence=1)
    body = render_pack(plan, "1.0.0")["SKILL.md"]
    assert f"```cpp\n{cuda}\n```" in body
    lessons = merge_lessons([_practice(3, triton)])
    plan = PackPlan("p", "P", "any", lessons, [], Provenance(distiller="x"), min_prevalence=1)
    assert f"```python\n{triton}\n```" in render_pack(plan, "1.0.0")["SKILL.md"]
