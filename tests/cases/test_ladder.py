"""The case ladder: mutants are minimal, labels come from the judge, prompts carry no skill."""

from pathlib import Path

from upskills.cases.ladder import LadderConfig, ladder_for_task
from upskills.cases.mutate import mutants
from upskills.lift.prompting import splice_line
from upskills.tasks import load_task

KERNEL = (Path(__file__).parents[2] / "testcases" / "known_good" / "row_max.py").read_text()


class _Verdict:
    def __init__(self, passed: bool, message: str = "") -> None:
        self.passed, self.message, self.error_class = passed, message, None if passed else "x"


def _judge(task, source, variants):  # noqa: ANN001 - a labelled test double of the verifier
    """Passes exactly the original kernel (labels stand in for the verifier's)."""
    return _Verdict(source.strip() == KERNEL.split('"""', 2)[2].strip(), "wrong")


def test_every_mutant_changes_exactly_one_line():
    lines = KERNEL.split("\n")
    found = mutants(KERNEL)
    assert {m.bug for m in found} >= {"drop_load_mask", "mask_off_by_one", "wrong_padding"}
    for m in found:
        new = m.source.split("\n")
        assert len(new) == len(lines)
        assert [i for i, (a, b) in enumerate(zip(lines, new, strict=True)) if a != b] == [m.line]


def test_choose_fill_repair_cases_are_labelled_by_the_judge():
    task = load_task("row_max")
    cases = ladder_for_task(task, KERNEL, _judge, "heldout", LadderConfig(max_choices=3))
    by_rung = {c.rung: c for c in cases}
    assert set(by_rung) == {"choose", "fill", "repair"}
    choose = by_rung["choose"]
    assert [c.correct for c in choose.choices] == [True, False, False]
    assert choose.family and all(c.split == "heldout" for c in cases)
    # the correct candidate rebuilds the verified kernel exactly
    rebuilt = choose.candidate_source(choose.choices[0].line).strip()
    assert rebuilt == KERNEL.split('"""', 2)[2].strip()
    fill = by_rung["fill"]
    assert "MISSING LINE" in fill.prompt and fill.choices[0].line not in fill.prompt
    assert "wrong" in by_rung["repair"].prompt


def test_fill_answer_is_spliced_with_the_removed_lines_indent():
    task = load_task("row_max")
    fill = next(c for c in ladder_for_task(task, KERNEL, _judge, "heldout") if c.rung == "fill")
    wanted = fill.choices[0].line
    kernel = splice_line(fill, f"```python\n{wanted.strip()}\n```")
    assert kernel is not None and kernel.strip() == KERNEL.split('"""', 2)[2].strip()
    assert splice_line(fill, "no code here\n") is not None  # a text line is spliced, and fails
    assert splice_line(fill, "") is None
