"""The one attempt walker: merging re-checks, notes, unjudged writes, repairs."""

from __future__ import annotations

from upskills.core.hashing import kernel_hash
from upskills.trace.attempts import attempts_of, repaired_failures
from upskills.trace.events import Note, ToolResult

from .conftest import make_verdict


def _result(tool: str, source: str | None, passed: bool | None, speedup: float | None = None):
    verdict = None if passed is None else make_verdict(passed, speedup=speedup)
    return ToolResult(
        trace_id="t",
        tool_name=tool,
        call_id=tool,
        kernel_source=source,
        kernel_hash=kernel_hash(source) if source else None,
        verdict=verdict,
    )


def test_rechecks_of_one_kernel_are_one_attempt_and_notes_go_to_the_next():
    events = [
        _result("write_kernel", "a", None),
        _result("check", "a", False),
        Note(trace_id="t", kind="plan", text="mask the tail"),
        Note(trace_id="t", kind="budget", text="10 turns left"),
        _result("check", "b", True),
        _result("benchmark", "b", True, speedup=1.5),
        _result("submit", "b", True, speedup=1.4),
    ]
    a, b = attempts_of(events)
    assert (a.kernel_hash, a.tools, a.passed, a.notes) == (
        kernel_hash("a"),
        ["write_kernel", "check"],
        False,
        (),
    )
    assert b.verdict_tools == ["check", "benchmark", "submit"] and b.passed
    assert b.notes == ("mask the tail",) and (b.first_line, b.last_line) == (3, 7)
    assert [v.speedup_eager for v in b.submitted] == [1.4]
    assert repaired_failures([a, b]) == 1


def test_a_kernel_failing_then_passing_unchanged_is_not_a_repair():
    events = [
        _result("check", "a", False),
        _result("benchmark", "a", True, speedup=1.2),
        _result("check", "b", False),
        _result("check", "c", True),
    ]
    attempts = attempts_of(events)
    assert [a.kernel_hash for a in attempts] == [kernel_hash(x) for x in "abc"]
    assert repaired_failures(attempts) == 1  # only b -> c


def test_a_verdict_without_source_is_known_by_its_candidate_hash():
    (only,) = attempts_of([_result("Bash", None, True)])
    assert only.kernel_hash == make_verdict(True).candidate_hash and only.kernel_source is None
