"""The profile tool on CPU through the toolbox, the session CLI, and the trace it leaves."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from upskills._cli.main import main
from upskills.agent.toolbox import KERNEL_TOOLS, KernelToolbox
from upskills.tasks import load_task
from upskills.trace import read_trace
from upskills.trace.events import ToolCall, ToolResult

from .helpers import KERNELS, kernel

CEILINGS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "ceilings_h200.json"
N = 67108864  # vector_add's main variant


def test_profile_is_a_kernel_tool_with_a_spec() -> None:
    box = KernelToolbox(load_task("vector_add"), device="cpu", hardware={"name": "cpu"})
    assert "profile" in KERNEL_TOOLS and "profile" in box.tool_names()
    (spec,) = [s for s in box.specs() if s.name == "profile"]
    assert "source" in spec.parameters["properties"]
    assert (
        box.call("profile", {}).error == "no kernel yet: call write_kernel(source) or pass `source`"
    )


def test_toolbox_profile_on_cpu_gives_bytes_and_floors_and_says_it_needs_a_gpu(
    cpu_verifier: object,
) -> None:
    box = KernelToolbox(
        load_task("vector_add"),
        device="cpu",
        verifier=cpu_verifier,
        hardware={"name": "cpu"},
        ceilings=CEILINGS,
    )
    out = box.call("profile", {"source": kernel("vector_add")})
    assert out.error is None and out.verdict is not None and out.verdict.passed
    rep = out.profile
    assert rep is not None and rep.device == "cpu" and rep.bytes == 3 * N * 4
    assert rep.bound == "memory" and rep.copy_gbs == 4200.2
    assert rep.floor_ms is not None and abs(rep.floor_ms - 3 * N * 4 / 4200.2e9 * 1e3) < 1e-9
    assert rep.median_ms is None and rep.bandwidth_share is None and rep.ncu is None
    assert "profiling needs a GPU" in rep.notes[0]
    assert "profiling needs a GPU" in out.output and "memory-bound" in out.output


def test_toolbox_profile_of_a_failing_kernel_is_the_verdict(cpu_verifier: object) -> None:
    box = KernelToolbox(
        load_task("row_sum"), device="cpu", verifier=cpu_verifier, hardware={"name": "cpu"}
    )
    out = box.call("profile", {"source": kernel("row_sum_bad")})
    assert out.verdict is not None and not out.verdict.passed and out.profile is None
    assert out.output.startswith("profile: the kernel must pass first\nFAILED (mismatch")


def test_session_call_profile_records_the_report_in_the_trace(tmp_path: Path) -> None:
    folder = tmp_path / "sess"
    runner = CliRunner()
    start = ["session", "start", "vector_add", "--dir", str(folder), "--device", "cpu"]
    assert runner.invoke(main, start, catch_exceptions=False).exit_code == 0
    call = [
        "session", "call", str(folder), "profile", "--file", str(KERNELS / "vector_add.py"),
        "--device", "cpu", "--seeds", "1", "--ceilings", str(CEILINGS), "--json",
    ]  # fmt: skip
    result = runner.invoke(main, call, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["verdict"]["passed"] is True
    assert payload["profile"]["bytes"] == 3 * N * 4
    assert payload["profile"]["ceilings_source"] == str(CEILINGS)

    events = read_trace(folder / "trace.jsonl", strict=True).events
    (tc,) = [e for e in events if isinstance(e, ToolCall)]
    (tr,) = [e for e in events if isinstance(e, ToolResult)]
    assert tc.tool_name == tr.tool_name == "profile" and tr.call_id == tc.call_id
    assert tr.verdict is not None and tr.verdict.passed
    assert tr.profile is not None and tr.profile.bytes == 3 * N * 4
    assert tr.kernel_source == kernel("vector_add")
