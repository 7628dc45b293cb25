"""Fix lessons told in the agent's words, kept apart per change, with the failing regime."""

from __future__ import annotations

from pathlib import Path

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, verdict, write_trace
from upskills.distill import DistillConfig, distill
from upskills.distill.episodes import summarize_trace
from upskills.distill.lessons import explain, fix_regime, merge_lessons, mine_trace
from upskills.skills.pack import load_pack

OFF_BY_ONE = ROW_SUM_MASKED.replace("tl.store(out_ptr + row,", "tl.store(out_ptr + row + 1,")
"""Stores each row's sum one slot late."""

SCALED = ROW_SUM_MASKED.replace("tl.sum(acc, axis=0))", "tl.sum(acc, axis=0) / N)")
"""Returns the mean instead of the sum."""

NOTE_OFF_BY_ONE = (
    "Verdict: every row lands one slot late. The store offset added 1 to the row; store at "
    "out_ptr + row. Predict a pass."
)
NOTE_SCALED = (
    "Verdict: sums are N times too small. I divided the row sum by N; the task wants the plain sum."
)


def _trace(tmp: Path, name: str, bad: str, good: str, note: str, **verdict_kw) -> Path:
    path = tmp / f"{name}.jsonl"
    write_trace(
        path,
        [(bad, verdict(bad, False, **verdict_kw)), (good, verdict(good, True))],
        notes={0: ["Plan: one program per row."], 1: [note]},
    )
    return path


def _fixes(path: Path):
    return [x for x in mine_trace(summarize_trace(path)) if x.kind == "fix"]


def test_unclassified_fix_is_described_by_the_agents_note(tmp_path):
    path = _trace(tmp_path, "a", OFF_BY_ONE, ROW_SUM_MASKED, NOTE_OFF_BY_ONE)
    t = summarize_trace(path)
    assert t.attempts[0].notes == ("Plan: one program per row.",)
    assert t.attempts[1].notes == (NOTE_OFF_BY_ONE,)
    [fix] = _fixes(path)
    assert fix.technique == "unclassified"
    assert fix.intent == fix.explanation
    assert fix.intent == "The store offset added 1 to the row; store at out_ptr + row."
    assert "-    tl.store(out_ptr + row + 1, tl.sum(acc, axis=0))" in fix.example
    assert "+    tl.store(out_ptr + row, tl.sum(acc, axis=0))" in fix.example


def test_different_unclassified_changes_stay_apart_and_the_same_change_merges(tmp_path):
    lessons = _fixes(_trace(tmp_path, "a", OFF_BY_ONE, ROW_SUM_MASKED, NOTE_OFF_BY_ONE))
    lessons += _fixes(_trace(tmp_path, "b", SCALED, ROW_SUM_MASKED, NOTE_SCALED))
    redoc = '"""Row sum, documented."""\n'  # same code change, other docstrings and notes
    lessons += _fixes(
        _trace(tmp_path, "c", redoc + OFF_BY_ONE, redoc + ROW_SUM_MASKED, "Store at row.")
    )
    merged = merge_lessons(lessons)
    assert len(merged) == 2
    same, other = merged  # most prevalent first
    assert same.prevalence == 2 and len(same.sources) == 2
    assert other.prevalence == 1
    assert other.intent == "I divided the row sum by N; the task wants the plain sum."
    assert same.id.startswith("fix-unclassified-mismatch-ragged-") and same.id != other.id


def test_classified_fix_keeps_the_technique_and_the_agents_words(tmp_path):
    note = "Verdict: ragged rows are short. The loop skipped the last partial block; mask it."
    [fix] = _fixes(_trace(tmp_path, "m", ROW_SUM_TAIL_DROPPED, ROW_SUM_MASKED, note))
    assert fix.id == "fix-masking-mismatch-ragged"
    assert fix.intent.startswith("Guard every load and store")
    assert fix.explanation == "The loop skipped the last partial block; mask it."


def test_regime_comes_from_the_variants_that_failed(tmp_path):
    cases = {
        ("small", "ragged"): ("all", "mismatch on all shapes"),
        ("ragged",): ("ragged", "mismatch on ragged shapes"),
        ("small",): ("small", "mismatch on variants small"),
    }
    for i, (failing, (regime, headline)) in enumerate(sorted(cases.items())):
        path = _trace(
            tmp_path, f"r{i}", OFF_BY_ONE, ROW_SUM_MASKED, NOTE_OFF_BY_ONE, failing=failing
        )
        [fix] = _fixes(path)
        assert fix.preconditions.shape_regimes == [regime]
        assert fix.failure_headline == headline
    assert fix_regime("row_sum", ["main", "ragged"], ["main", "small", "ragged"]) == "main+ragged"
    assert fix_regime("row_sum", ["main", "small", "ragged"]) == "all"  # task's variants
    assert fix_regime("row_sum", []) == "any"  # nothing ran: a compile error


def test_going_back_to_a_kernel_that_already_passed_is_not_a_fix(tmp_path):
    path = tmp_path / "revert.jsonl"
    write_trace(
        path,
        [
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True)),
            (OFF_BY_ONE, verdict(OFF_BY_ONE, False)),
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True)),
        ],
        notes={2: ["Measured: the first kernel was better; submitting it."]},
    )
    assert len(summarize_trace(path).attempts) == 3
    assert _fixes(path) == []


def test_explain_trims_to_the_cause_and_the_fix():
    assert explain([NOTE_OFF_BY_ONE]) == (
        "The store offset added 1 to the row; store at out_ptr + row."
    )
    # too little left without the symptom: keep it, without its label
    assert explain(["Verdict: shape [1] instead of []. Allocate zeros(()). Predict a pass."]) == (
        "shape [1] instead of []. Allocate zeros(())."
    )
    long = "Verdict: x. " + " ".join(f"Sentence number {i} is here." for i in range(5))
    assert explain([long]) == "Sentence number 0 is here. Sentence number 1 is here."
    assert explain(["Use e.g. a mask here. Then store."]) == "Use e.g. a mask here. Then store."
    huge = "Verdict: y. " + "word " * 200 + "end."
    out = explain([huge])
    assert len(out) <= 320 and out.endswith("...")
    assert explain(["Predict a pass."]) == "" and explain([]) == ""


def test_skill_md_lists_rare_repairs_in_the_agents_words_and_keeps_frequent_ones_whole(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    _trace(traces, "a", OFF_BY_ONE, ROW_SUM_MASKED, NOTE_OFF_BY_ONE)
    _trace(traces, "c", OFF_BY_ONE, ROW_SUM_MASKED, NOTE_OFF_BY_ONE)
    tid = write_trace(
        traces / "b.jsonl",
        [(SCALED, verdict(SCALED, False)), (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True))],
        notes={1: [NOTE_SCALED]},
    )
    distill([traces], tmp_path / "skills", None)
    pack = load_pack(tmp_path / "skills" / "gpu-kernel-debugging")
    pitfalls = pack.body.split("\n## Pitfalls")[1].split("\n## ")[0]
    assert (
        "### mismatch on ragged shapes in row_sum -> fixed by the change shown (2 traces)"
        in pitfalls
    )
    assert "- Fix: The store offset added 1 to the row; store at out_ptr + row." in pitfalls
    rare = (
        "- `mismatch on ragged shapes` in row_sum -> I divided the row sum by N; the task wants "
        f"the plain sum. (trace `{tid}`)"
    )
    assert rare in pitfalls
    compact = (tmp_path / "skills/gpu-kernel-debugging/references/compact.md").read_text()
    assert "I divided the row sum by N; the task wants the plain sum." in compact
    lessons = (tmp_path / "skills/gpu-kernel-debugging/references/lessons.md").read_text()
    assert "- Fix: I divided the row sum by N; the task wants the plain sum." in lessons
    distill([traces], tmp_path / "off", None, DistillConfig(rare_fixes=0))
    body = load_pack(tmp_path / "off" / "gpu-kernel-debugging").body
    assert "I divided the row sum" not in body and "The store offset added 1" in body


def test_going_back_to_a_faster_kernel_is_not_a_perf_lesson(tmp_path):
    from tests.distill.tracegen import ROW_SUM_TUNED

    path = tmp_path / "perf_revert.jsonl"
    write_trace(
        path,
        [
            (ROW_SUM_TUNED, verdict(ROW_SUM_TUNED, True, speedup=1.5)),
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=1.0)),
            (ROW_SUM_TUNED, verdict(ROW_SUM_TUNED, True, speedup=1.5)),
        ],
    )
    t = summarize_trace(path)
    assert len(t.attempts) == 3
    # the return to the tuned kernel adds num_warps back, but it was measured already
    assert [x for x in mine_trace(t) if x.kind == "perf"] == []
