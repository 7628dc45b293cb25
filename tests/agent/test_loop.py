"""The agent loop end to end on CPU: a scripted teacher, the real verifier, strict traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskills.agent import AgentConfig, run_agent, teach
from upskills.llm.base import GenParams, ModelResponse, Usage
from upskills.llm.mock import MockProvider
from upskills.trace import read_trace
from upskills.trace.events import ModelCall, Note, RunEnd, RunStart, ToolCall, ToolResult

from .helpers import calls, kernel, solve_script

CPU = AgentConfig(device="cpu", check_seeds=1, max_turns=10, params=GenParams(max_tokens=512))


def events(path: Path, kind: type) -> list:
    return [e for e in read_trace(path, strict=True).events if isinstance(e, kind)]


def test_scripted_teacher_solves_three_tasks_through_the_real_loop(
    tmp_path: Path, cpu_verifier: object
) -> None:
    provider = MockProvider(solve_script(), model="scripted-teacher")
    done: list[tuple[str, str]] = []
    paths = teach(
        ["vector_add", "row_sum", "relu"],
        "mock/scripted-teacher",
        tmp_path,
        CPU,
        provider=provider,
        verifier=cpu_verifier,
        progress=False,
        on_task=lambda name, path, outcome: done.append((name, outcome)),
    )
    assert [p.name for p in paths] == ["vector_add.jsonl", "row_sum.jsonl", "relu.jsonl"]
    assert done == [("vector_add", "solved"), ("row_sum", "solved"), ("relu", "solved")]
    for path, n_turns in zip(paths, (3, 3, 2), strict=True):
        trace = read_trace(path, strict=True)
        start, end = trace.events[0], trace.events[-1]
        assert isinstance(start, RunStart) and isinstance(end, RunEnd)
        assert start.agent_role == "teacher" and start.provider == "mock"
        assert start.model == "scripted-teacher"
        assert set(start.prompt_hashes) == {"teacher_system", "teacher_task"}
        env = start.environment
        assert env["device"] == "cpu" and env["python"] and env["torch"] and env["upskills"]
        assert start.parameters["params"]["max_tokens"] == 512
        assert end.outcome == "solved" and end.best_kernel_source is not None
        assert end.totals.turns == n_turns == len(events(path, ModelCall))
        assert end.totals.tool_calls == len(events(path, ToolResult)) == len(events(path, ToolCall))
        assert end.totals.input_tokens == 10 * n_turns
        assert end.best_speedup is None  # CPU: no timing

    # row_sum: the first check failed on the ragged variant, the fix passed, and it was submitted
    results = events(paths[1], ToolResult)
    verdicts = [r.verdict for r in results if r.verdict is not None]
    assert [v.passed for v in verdicts] == [False, True, True]
    assert verdicts[0].error_class == "mismatch"
    assert any(not r.passed for r in verdicts[0].variants if r.variant == "ragged")
    assert results[1].kernel_source == kernel("row_sum_bad")
    end = events(paths[1], RunEnd)[0]
    assert end.best_kernel_source == kernel("row_sum") == results[-1].kernel_source
    assert end.best_kernel_hash == verdicts[-1].candidate_hash or end.best_kernel_hash
    # the model saw the failure: the second request carries the concise verdict as a tool message
    tool_msgs = [m for m in provider.calls[4][0] if m.role == "tool"]
    assert tool_msgs[-1].content.startswith("FAILED (mismatch")
    assert "variant ragged: FAIL" in tool_msgs[-1].content
    # vector_add's benchmark on CPU says timing is unavailable
    bench = [r for r in events(paths[0], ToolResult) if r.tool_name == "benchmark"][0]
    assert bench.verdict is not None and bench.verdict.passed
    assert bench.verdict.timing_status == "unavailable" and "timing: unavailable" in bench.output
    # every tool_result hangs off its tool_call, every tool_call off a model_call
    for path in paths:
        spans = {e.span_id: e for e in read_trace(path, strict=True).events}
        for r in events(path, ToolResult):
            assert isinstance(spans[r.parent_span_id], ToolCall)
        for c in events(path, ToolCall):
            assert isinstance(spans[c.parent_span_id], ModelCall)

    # re-running skips finished tasks without calling the model
    again = MockProvider([])
    teach(
        ["vector_add", "row_sum", "relu"], "mock/x", tmp_path, CPU, provider=again, progress=False
    )
    assert again.calls == []


def test_turn_budget_ends_with_outcome_budget(tmp_path: Path) -> None:
    provider = MockProvider(fn=lambda m, t: calls(("read_task", {})))
    config = CPU.model_copy(update={"max_turns": 3})
    end = run_agent("relu", provider, config, tmp_path / "t.jsonl")
    assert end.outcome == "budget" and "turn budget" in end.message
    assert end.totals.turns == 3 == len(provider.calls)
    last_turns = [call[0][-1].content for call in provider.calls]
    assert "[budget" not in last_turns[0]
    assert "[budget: 2 model calls left" in last_turns[1]
    assert "[budget: 1 model call left" in last_turns[2]
    assert read_trace(tmp_path / "t.jsonl", strict=True).end == end


def test_wall_time_budget(tmp_path: Path) -> None:
    import time

    def slow(messages, tools):
        time.sleep(0.3)
        return calls(("read_task", {}))

    config = CPU.model_copy(update={"max_wall_s": 0.5})
    end = run_agent("relu", MockProvider(fn=slow), config, tmp_path / "t.jsonl")
    assert end.outcome == "budget" and "time budget" in end.message
    assert end.totals.turns == 2 and end.totals.duration_s >= 0.5


def test_token_budget_counts_input_and_output(tmp_path: Path) -> None:
    provider = MockProvider(fn=lambda m, t: calls(("read_task", {}), usage=30))
    config = CPU.model_copy(update={"max_tokens": 100})
    end = run_agent("relu", provider, config, tmp_path / "t.jsonl")
    assert end.outcome == "budget" and "token budget" in end.message
    assert end.totals.turns == 2  # 60 tokens after one call, 120 after two
    assert (end.totals.input_tokens, end.totals.output_tokens) == (60, 60)


def test_code_block_fallback_checks_the_block_and_a_silent_model_submits(
    tmp_path: Path, cpu_verifier: object
) -> None:
    reply = f"Here is my kernel:\n```python\n{kernel('relu')}```\n"
    provider = MockProvider([reply, "I am done.", "Done."])
    end = run_agent("relu", provider, CPU, tmp_path / "t.jsonl", verifier=cpu_verifier)
    path = tmp_path / "t.jsonl"
    assert end.outcome == "solved"
    tools = [
        (r.tool_name, r.verdict.passed if r.verdict else None) for r in events(path, ToolResult)
    ]
    assert tools == [("check", True), ("submit", True)]
    assert [c.call_id for c in events(path, ToolCall)] == ["fallback-1", "fallback-submit"]
    assert [n.kind for n in events(path, Note)] == ["fallback", "fallback"]
    # the check result came back as a user turn; the first plain reply got a reminder
    second, third = provider.calls[1][0], provider.calls[2][0]
    assert second[-1].role == "user" and "PASSED on cpu" in second[-1].content
    assert third[-1].role == "user" and "no tool call" in third[-1].content


def test_provider_error_is_recorded_and_ends_the_run(tmp_path: Path) -> None:
    provider = MockProvider([calls(("read_task", {}))])  # exhausted on the second call
    end = run_agent("relu", provider, CPU, tmp_path / "t.jsonl")
    assert end.outcome == "error" and "script exhausted" in end.message
    mc = events(tmp_path / "t.jsonl", ModelCall)
    assert mc[-1].error is not None and "ProviderError" in mc[-1].error


def test_bad_tool_arguments_go_back_to_the_model(tmp_path: Path) -> None:
    provider = MockProvider([calls(("check", {})), calls(("write_kernel", {"src": "x"}))])
    end = run_agent("relu", provider, CPU, tmp_path / "t.jsonl")
    assert end.outcome == "error"  # script exhausted after the two bad calls
    results = events(tmp_path / "t.jsonl", ToolResult)
    assert "no kernel yet" in results[0].error and "unexpected argument(s) src" in results[1].error
    assert provider.calls[1][0][-1].content.startswith("error: no kernel yet")


def test_new_messages_per_model_call_and_no_rewrite_of_existing_traces(tmp_path: Path) -> None:
    provider = MockProvider(
        [calls(("read_task", {})), ModelResponse(text="", usage=Usage(input_tokens=1))]
    )
    run_agent("relu", provider, CPU.model_copy(update={"max_turns": 2}), tmp_path / "t.jsonl")
    first, second = events(tmp_path / "t.jsonl", ModelCall)
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert [m["role"] for m in second.messages] == ["tool"]
    with pytest.raises(FileExistsError, match="already has events"):
        run_agent("relu", provider, CPU, tmp_path / "t.jsonl")


def _pack(root: Path) -> object:
    from upskills.skills.pack import load_pack

    folder = root / "row-reduction"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: row-reduction\ndescription: Reduce rows with a loop over column blocks.\n"
        'metadata:\n  version: "1.2.0"\n---\nLOOP-OVER-COLUMNS: accumulate in fp32.\n'
    )
    (folder / "references" / "masks.md").write_text("MASK-THE-TAIL")
    return load_pack(folder)


def test_skills_on_demand_are_listed_and_read_through_the_tool(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    provider = MockProvider(
        [
            calls(("read_skill", {"name": "row-reduction"})),
            calls(("read_skill", {"name": "row-reduction", "path": "references/masks.md"})),
            calls(("read_skill", {"name": "nope"})),
        ]
    )
    config = CPU.model_copy(update={"skills_mode": "on_demand", "max_turns": 3})
    end = run_agent("row_sum", provider, config, tmp_path / "t.jsonl", skills=[pack])
    assert end.outcome == "budget"
    system = provider.calls[0][0][0].content
    assert "`row-reduction`: Reduce rows" in system and "LOOP-OVER-COLUMNS" not in system
    assert "read_skill" in [t.name for t in provider.calls[0][1]]
    outs = [r.output for r in events(tmp_path / "t.jsonl", ToolResult)]
    assert "LOOP-OVER-COLUMNS" in outs[0] and outs[1] == "MASK-THE-TAIL"
    assert outs[2].startswith("error: read_skill: no skill named 'nope'")
    start = events(tmp_path / "t.jsonl", RunStart)[0]
    assert start.skills == ["row-reduction@1.2.0"]
    assert start.parameters["skills_mode"] == "on_demand"


def test_skills_inline_go_whole_into_the_system_prompt(tmp_path: Path) -> None:
    provider = MockProvider([calls(("read_task", {}))])
    config = CPU.model_copy(update={"skills_mode": "inline", "max_turns": 1})
    run_agent("row_sum", provider, config, tmp_path / "t.jsonl", skills=[_pack(tmp_path)])
    assert "LOOP-OVER-COLUMNS" in provider.calls[0][0][0].content
    assert "read_skill" not in [t.name for t in provider.calls[0][1]]


def test_teach_records_an_api_error_and_goes_on_then_retries_errors(tmp_path: Path) -> None:
    from upskills.llm.base import ProviderError

    def api_down(messages, tools):
        raise ProviderError("anthropic: HTTP 529 overloaded, still failing after 4 retries")

    provider = MockProvider([api_down, calls(("read_task", {}))])
    config = CPU.model_copy(update={"max_turns": 1})
    seen: list[tuple[str, str]] = []
    teach(
        ["relu", "row_sum"],
        "mock/x",
        tmp_path,
        config,
        provider=provider,
        progress=False,
        on_task=lambda name, path, outcome: seen.append((name, outcome)),
    )
    assert seen == [("relu", "error"), ("row_sum", "budget")]
    end = read_trace(tmp_path / "relu.jsonl", strict=True).end
    assert end is not None and "HTTP 529" in end.message
    # a plain re-run skips both; --retry-errors runs the errored one again
    again = MockProvider([calls(("read_task", {}))])
    teach(["relu", "row_sum"], "mock/x", tmp_path, config, provider=again, progress=False)
    assert again.calls == []
    teach(
        ["relu", "row_sum"],
        "mock/x",
        tmp_path,
        config,
        provider=again,
        progress=False,
        retry_errors=True,
    )
    assert len(again.calls) == 1
    assert read_trace(tmp_path / "relu.jsonl", strict=True).end.outcome == "budget"
    assert read_trace(tmp_path / "relu.jsonl.partial", strict=True).end.outcome == "error"
