from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from upskills.trace import TraceFormatError, TraceWriter, iter_trace_files, read_trace, trace_stats
from upskills.trace.events import ModelCall, Note, RunEnd, RunStart, ToolResult

from .conftest import make_verdict


def test_round_trip_uses_otel_names_and_validates(sample_trace: Path) -> None:
    lines = sample_trace.read_text().splitlines()
    assert len(lines) == 9
    first_call = json.loads(lines[1])
    assert first_call["gen_ai.operation.name"] == "chat"
    assert first_call["usage"]["gen_ai.usage.input_tokens"] == 100
    tool = json.loads(lines[2])
    assert tool["gen_ai.tool.name"] == "check" and tool["gen_ai.tool.call.id"] == "c1"
    trace = read_trace(sample_trace, strict=True)
    assert [e.event for e in trace.events] == [
        "run_start",
        "model_call",
        "tool_call",
        "tool_result",
        "note",
        "model_call",
        "tool_call",
        "tool_result",
        "run_end",
    ]
    assert isinstance(trace.events[3], ToolResult) and trace.events[3].verdict is not None
    assert trace.events[3].verdict.passed is False
    assert len({e.trace_id for e in trace.events}) == 1
    assert len({e.id for e in trace.events}) == 9


def test_bad_lines_are_named_and_skipped(sample_trace: Path) -> None:
    text = sample_trace.read_text().splitlines()
    text.insert(2, "{not json")
    text.insert(4, json.dumps({"event": "model_call", "trace_id": "t"}))  # missing provider/model
    text.insert(6, json.dumps({"event": "teleport", "trace_id": "t"}))
    sample_trace.write_text("\n".join(text) + "\n")
    trace = read_trace(sample_trace)
    assert len(trace.events) == 9
    assert [e.line for e in trace.errors] == [3, 5, 7]
    assert "not valid JSON" in trace.errors[0].message
    assert "gen_ai.system" in trace.errors[1].message or "provider" in trace.errors[1].message
    assert str(sample_trace) in str(trace.errors[2])
    with pytest.raises(TraceFormatError, match=r":3: not valid JSON"):
        read_trace(sample_trace, strict=True)


def test_stats_counts_repairs_tokens_and_speedup(sample_trace: Path) -> None:
    st = trace_stats(read_trace(sample_trace))
    assert (st.turns, st.tool_calls, st.verdicts, st.passed_verdicts) == (2, 2, 2, 1)
    assert st.input_tokens == 100 + 5 + 150 and st.output_tokens == 50
    assert st.repaired_failures == 1 and st.failure_classes == {"mismatch": 1}
    assert st.solved and st.best_speedup == pytest.approx(1.7) and st.gpu == "NVIDIA H200"


def test_iter_trace_files_recurses_and_rejects_missing(tmp_path: Path, sample_trace: Path) -> None:
    (tmp_path / "run" / "nested").mkdir()
    other = tmp_path / "run" / "nested" / "b.jsonl"
    other.write_text("")
    (tmp_path / "run" / "notes.txt").write_text("x")
    assert list(iter_trace_files([tmp_path / "run"])) == sorted([sample_trace, other])
    with pytest.raises(FileNotFoundError, match="nowhere"):
        list(iter_trace_files([tmp_path / "nowhere"]))


def test_writer_appends_and_refuses_after_close(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    w = TraceWriter(path, trace_id="abc")
    w.write(Note(trace_id="abc", text="one"))
    w.close()
    with TraceWriter(path, trace_id="abc") as w2:
        w2.write(Note(trace_id="abc", text="two"))
    assert [e.text for e in read_trace(path, strict=True).events] == ["one", "two"]
    with pytest.raises(ValueError, match="closed"):
        w.write(Note(trace_id="abc", text="three"))


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from upskills.trace import TraceWriter
    from upskills.trace.events import RunStart, ModelCall, Usage
    with TraceWriter(sys.argv[1]) as w:
        w.write(RunStart(trace_id=w.trace_id, task="t", task_hash="h", agent_role="teacher"))
        i = 0
        while True:
            w.write(ModelCall(trace_id=w.trace_id, provider="mock", model="m",
                              response_text="x" * 5000, usage=Usage(output_tokens=i)))
            i += 1
    """
)


def test_sigkill_mid_run_leaves_a_readable_prefix(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, str(path)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 200_000):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    trace = read_trace(path)
    assert isinstance(trace.events[0], RunStart)
    assert len(trace.events) > 10
    assert trace.end is None and not isinstance(trace.events[-1], RunEnd)
    assert len(trace.errors) <= 1  # at most a torn final line
    outs = [e.usage.output_tokens for e in trace.events if isinstance(e, ModelCall)]
    assert outs == list(range(len(outs)))


def test_stats_names_the_best_kernels_language_and_the_tasks_origin(
    sample_trace: Path, tmp_path: Path
) -> None:
    cuda = "from torch.utils.cpp_extension import load_inline\n_e = load_inline(cuda_sources=S)"
    folder = tmp_path / "session"
    folder.mkdir()
    text = sample_trace.read_text().replace('"good"', json.dumps(cuda))
    (folder / "trace.jsonl").write_text(text)
    st = trace_stats(read_trace(folder / "trace.jsonl"))
    assert st.language == "cuda" and st.origin is None
    origin = {"task": {"origin": ".kb/KernelBench/level1/19_ReLU.py"}}
    (folder / "state.json").write_text(json.dumps(origin))
    assert trace_stats(read_trace(folder / "trace.jsonl")).origin == "kernelbench"
    for broken in ("{not json", '{"task": 3}', '{"task": {"origin": 7}}'):  # no origin, no error
        (folder / "state.json").write_text(broken)
        assert trace_stats(read_trace(folder / "trace.jsonl")).origin is None
    triton = text.replace(json.dumps(cuda), json.dumps("@triton.jit\ndef k(): pass"))
    (folder / "trace.jsonl").write_text(triton)
    assert trace_stats(read_trace(folder / "trace.jsonl")).language == "triton"


def _session(path: Path, ts: str, results: list[tuple[str, bool]], agent: str = "a") -> None:
    """One session on row_sum: each (kernel source, passed) is one check verdict."""
    with TraceWriter(path) as w:
        tid = w.trace_id
        w.write(
            RunStart(
                trace_id=tid,
                ts=ts,
                task="row_sum",
                task_hash="abc",
                agent_role="external",
                agent_name=agent,
            )
        )
        for n, (source, passed) in enumerate(results):
            w.write(
                ToolResult(
                    trace_id=tid,
                    tool_name="check",
                    call_id=f"c{n}",
                    verdict=make_verdict(passed),
                    kernel_source=source,
                    kernel_hash=f"h-{source}",
                )
            )


def test_a_failure_fixed_in_a_later_session_is_a_repair_across_sessions(tmp_path: Path) -> None:
    from upskills.trace.stats import tasks_repaired_across_sessions

    def repaired(name: str, later: list[tuple[str, bool]], agent: str = "a") -> list[str]:
        folder = tmp_path / name
        # written out of order: the sessions are ordered by their run_start, not by file name
        _session(folder / "b.jsonl", "2026-12-02T00:00:00+00:00", later, agent=agent)
        _session(folder / "a.jsonl", "2026-12-01T00:00:00+00:00", [("broken", False)])
        traces = [read_trace(p) for p in sorted(folder.glob("*.jsonl"))]
        assert [trace_stats(t).repaired_failures for t in traces] == [0, 0]  # no one trace shows it
        return tasks_repaired_across_sessions(traces)

    assert repaired("fixed", [("fixed", True)]) == ["row_sum"]
    # the same kernel passing later (judged again unchanged) is no repair
    assert repaired("unchanged", [("broken", True)]) == []
    # nor is another agent's pass: each agent's sessions are one run
    assert repaired("other", [("fixed", True)], agent="other") == []
