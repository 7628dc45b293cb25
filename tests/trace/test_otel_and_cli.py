from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from upskills._cli.main import main
from upskills.trace import read_trace
from upskills.trace.otel import export_otel


def _attrs(span: dict) -> dict:
    out = {}
    for a in span["attributes"]:
        ((kind, val),) = a["value"].items()
        out[a["key"]] = val
    return out


def test_otel_spans_nest_and_carry_genai_attributes(sample_trace: Path) -> None:
    doc = export_otel([read_trace(sample_trace)])
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root, *children = spans
    assert root["name"].startswith("invoke_agent") and "parentSpanId" not in root
    assert all(c["parentSpanId"] == root["spanId"] for c in children)
    assert {len(s["traceId"]) for s in spans} == {32} and {len(s["spanId"]) for s in spans} == {16}
    chats = [s for s in children if s["name"].startswith("chat")]
    tools = [s for s in children if s["name"].startswith("execute_tool")]
    assert len(chats) == 2 and len(tools) == 2
    a = _attrs(chats[0])
    assert a["gen_ai.operation.name"] == "chat"
    # OTel input tokens include the cached ones (100 uncached + 5 read from cache).
    assert a["gen_ai.usage.input_tokens"] == "105"
    t = _attrs(tools[0])
    assert t["gen_ai.tool.name"] == "check" and t["upskills.verdict.passed"] is False
    assert int(chats[0]["endTimeUnixNano"]) - int(chats[0]["startTimeUnixNano"]) == 500_000_000
    assert _attrs(root)["upskills.outcome"] == "solved"


def test_cli_list_show_stats_export(sample_trace: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    folder = str(sample_trace.parent)
    res = runner.invoke(main, ["traces", "list", folder])
    assert res.exit_code == 0, res.output
    assert "row_sum" in res.output and "solved" in res.output
    res = runner.invoke(main, ["traces", "show", str(sample_trace)])
    assert res.exit_code == 0 and "FAIL mismatch" in res.output and "PASS" in res.output
    res = runner.invoke(main, ["traces", "stats", folder, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["totals"]["solved_tasks"] == 1 and data["totals"]["with_repaired_failure"] == 1
    assert data["traces"][0]["turns"] == 2
    out = tmp_path / "spans.json"
    res = runner.invoke(main, ["traces", "export", folder, "--format", "otel", "--out", str(out)])
    assert (
        res.exit_code == 0
        and len(json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]) == 5
    )


def test_cli_errors_are_clear(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["traces", "stats", str(tmp_path / "missing")])
    assert res.exit_code != 0 and "no trace file or folder" in res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = runner.invoke(main, ["traces", "list", str(empty)])
    assert res.exit_code != 0 and "no trace files" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    res = runner.invoke(main, ["traces", "show", str(bad), "--strict"])
    assert res.exit_code != 0 and "bad.jsonl:1" in res.output
    res = runner.invoke(main, ["traces", "show", str(bad)])  # no --strict: skipped, then refused
    assert res.exit_code != 0 and "no trace event in" in res.output and "malformed" in res.output


def test_show_says_when_a_run_was_interrupted(sample_trace: Path) -> None:
    lines = sample_trace.read_text().splitlines()[:-1]
    sample_trace.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["traces", "show", str(sample_trace)])
    assert res.exit_code == 0 and "no run_end" in res.output


def test_tables_keep_long_names_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    from tests.trace.conftest import write_sample_trace

    long_name = "fused_bias_gelu_fp16_ragged_rows_with_a_name_far_wider_than_eighty_columns"
    path = tmp_path / f"{long_name}.jsonl"
    write_sample_trace(path)
    path.write_text(path.read_text().replace('"task":"row_sum"', f'"task":"{long_name}"'))
    for cmd in (["traces", "stats", str(path)], ["traces", "list", str(path)]):
        res = CliRunner().invoke(main, cmd, env={"COLUMNS": None})
        assert res.exit_code == 0, res.output
        # Neither truncated ("...") nor folded over lines: the whole name is on one line.
        assert any(long_name in line for line in res.output.splitlines()), res.output


def test_list_has_json(sample_trace: Path) -> None:
    res = CliRunner().invoke(main, ["traces", "list", str(sample_trace), "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.output.splitlines()[0])
    assert row["task"] == "row_sum" and row["outcome"] == "solved" and row["events"] == 9
