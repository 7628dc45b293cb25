"""On a GPU: the loop's benchmark and submit report real timings and speedups."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskills.agent import AgentConfig, Session, run_agent
from upskills.llm.mock import MockProvider
from upskills.trace import read_trace
from upskills.trace.events import ToolResult

from .helpers import calls, kernel

pytestmark = pytest.mark.gpu


def test_scripted_teacher_on_gpu_gets_timed_verdicts_and_a_best_speedup(tmp_path: Path) -> None:
    provider = MockProvider(
        [
            calls(("read_task", {})),
            calls(("check", {"source": kernel("vector_add")})),
            calls(("benchmark", {})),
            calls(("submit", {})),
        ]
    )
    config = AgentConfig(device="cuda", check_seeds=2, max_turns=6)
    end = run_agent("vector_add", provider, config, tmp_path / "t.jsonl")
    assert end.outcome == "solved", end.message
    trace = read_trace(tmp_path / "t.jsonl", strict=True)
    assert trace.start is not None and trace.start.environment["gpu"]
    assert "GPU:" in provider.calls[0][0][0].content  # the prompt states the detected GPU
    results = {e.tool_name: e for e in trace.events if isinstance(e, ToolResult)}
    check, bench = results["check"].verdict, results["benchmark"].verdict
    assert check is not None and check.passed and check.timing is None  # check: no timing
    assert bench is not None and bench.timing_status == "measured" and bench.timing is not None
    assert bench.speedup_eager is not None and bench.speedup_eager > 0
    assert "speedup vs eager" in results["benchmark"].output
    assert end.best_speedup is not None and end.best_speedup > 0
    assert end.best_kernel_source == kernel("vector_add")


def test_session_call_on_gpu_records_the_gpu_in_the_verdict(tmp_path: Path) -> None:
    session = Session.start("relu", tmp_path / "s", agent_name="gpu-test", device="cuda")
    outcome = session.call("benchmark", {"source": kernel("relu")}, seeds=1)
    assert outcome.verdict is not None and outcome.verdict.passed, outcome.output
    assert outcome.verdict.device == "cuda" and outcome.verdict.gpu
    assert outcome.verdict.speedup_eager is not None
    end = session.end()
    assert end.outcome == "unsolved" and end.best_speedup == outcome.verdict.speedup_eager
