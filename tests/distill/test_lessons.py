from __future__ import annotations

from pathlib import Path

from tests.distill.tracegen import (
    ROW_SUM_MASKED,
    ROW_SUM_TAIL_DROPPED,
    ROW_SUM_TUNED,
    verdict,
    write_trace,
)
from upskills.distill.episodes import summarize_trace
from upskills.distill.lessons import merge_lessons, mine_trace


def _trace(tmp: Path, name: str, attempts, **kw):
    path = tmp / f"{name}.jsonl"
    write_trace(path, attempts, **kw)
    return summarize_trace(path)


def test_fail_then_pass_yields_a_fix_lesson_citing_the_episode(tmp_path):
    t = _trace(
        tmp_path,
        "a",
        [
            (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False)),
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True)),
        ],
    )
    assert len(t.attempts) == 2 and t.episodes[0].repaired
    fixes = [x for x in mine_trace(t) if x.kind == "fix"]
    assert [x.technique for x in fixes] == ["masking"]
    fix = fixes[0]
    assert fix.failure.startswith("mismatch: variant ragged")
    assert fix.preconditions.shape_regimes == ["ragged"]
    assert (
        "+        acc += tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)"
        in fix.example
    )
    src = fix.sources[0]
    assert src.trace_id == t.trace_id
    assert (src.first_line, src.last_line) == (1, t.attempts[1].last_line) == (1, 7)
    assert fix.effect.verdict_before == "fail: mismatch on ragged"


def test_fail_then_fail_is_not_a_fix(tmp_path):
    bad2 = ROW_SUM_TAIL_DROPPED.replace("BLOCK=128", "BLOCK=64")
    t = _trace(
        tmp_path,
        "b",
        [
            (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False)),
            (bad2, verdict(bad2, False)),
        ],
    )
    assert [x for x in mine_trace(t) if x.kind == "fix"] == []
    assert mine_trace(t) == []  # unsolved: no final kernel either


def test_perf_lesson_carries_measured_before_and_after(tmp_path):
    t = _trace(
        tmp_path,
        "c",
        [
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=0.8, gpu="H200")),
            (ROW_SUM_TUNED, verdict(ROW_SUM_TUNED, True, speedup=1.6, gpu="H200")),
        ],
    )
    perf = [x for x in mine_trace(t) if x.kind == "perf"]
    assert len(perf) == 1
    assert perf[0].technique == "launch_config"
    assert (perf[0].effect.speedup_before, perf[0].effect.speedup_after) == (0.8, 1.6)
    assert perf[0].preconditions.gpus == ["H200"]


def test_recheck_of_the_same_kernel_merges_into_one_attempt(tmp_path):
    t = _trace(
        tmp_path,
        "d",
        [
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True)),
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=1.3)),
        ],
    )
    assert len(t.attempts) == 1 and t.attempts[0].speedup == 1.3


def test_merge_counts_prevalence_and_resolves_conflicts_by_evidence(tmp_path):
    good = [
        (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False)),
        (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True)),
    ]
    lessons = []
    for i in range(3):
        lessons += mine_trace(_trace(tmp_path, f"fix{i}", good))
    slower = [
        (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=1.6)),
        (ROW_SUM_TUNED, verdict(ROW_SUM_TUNED, True, speedup=0.9)),
    ]
    faster = [
        (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=1.0)),
        (ROW_SUM_TUNED, verdict(ROW_SUM_TUNED, True, speedup=1.5)),
    ]
    lessons += mine_trace(_trace(tmp_path, "s1", slower)) + mine_trace(
        _trace(tmp_path, "s2", slower)
    )
    lessons += mine_trace(_trace(tmp_path, "f1", faster))
    merged = {x.id: x for x in merge_lessons(lessons)}
    fix = merged["fix-masking-mismatch-ragged"]
    assert fix.prevalence == 3 and len(fix.sources) == 3
    perf = merged["perf-launch_config-any"]
    assert perf.prevalence == 3 and perf.contradicting == 2
    assert perf.supported is False
    assert list(merge_lessons(lessons))[-1].id == "perf-launch_config-any"  # unsupported sort last


def test_malformed_lines_are_reported_by_file_and_line_and_skipped(tmp_path):
    path = tmp_path / "torn.jsonl"
    write_trace(
        path,
        [
            (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False)),
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True)),
        ],
    )
    lines = path.read_text().splitlines()
    lines.insert(2, "{not json")
    path.write_text("\n".join(lines) + "\n")
    t = summarize_trace(path)
    assert len(t.errors) == 1 and t.errors[0].line == 3 and t.errors[0].path == path
    assert len(t.attempts) == 2 and t.solved
