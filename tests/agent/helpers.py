"""Scripted teachers for the agent tests: real Triton kernels, played back by MockProvider."""

from __future__ import annotations

import itertools
from pathlib import Path

from upskills.llm.base import ModelResponse, ToolCallRequest, Usage

KERNELS = Path(__file__).parent / "kernels"
_ids = itertools.count(1)


def kernel(name: str) -> str:
    """Source of a test kernel in tests/agent/kernels/."""
    return (KERNELS / f"{name}.py").read_text()


def calls(*tools: tuple[str, dict], text: str = "", usage: int = 10) -> ModelResponse:
    """A model response asking for the given tool calls."""
    reqs = [ToolCallRequest(id=f"tc{next(_ids)}", name=n, arguments=a) for n, a in tools]
    return ModelResponse(
        text=text,
        tool_calls=reqs,
        stop_reason="tool_use",
        usage=Usage(input_tokens=usage, output_tokens=usage),
    )


def solve_script() -> list[ModelResponse]:
    """A teacher solving vector_add, row_sum (a failing first attempt, then a fix) and relu."""
    return [
        # vector_add: read, write + benchmark (timing unavailable on CPU), submit
        calls(("read_task", {})),
        calls(("write_kernel", {"source": kernel("vector_add")}), ("benchmark", {})),
        calls(("submit", {})),
        # row_sum: the first attempt drops the tail of long rows; the check says so; fix it
        calls(("write_kernel", {"source": kernel("row_sum_bad")}), ("check", {})),
        calls(("check", {"source": kernel("row_sum")}), text="Loop over the columns."),
        calls(("submit", {})),
        # relu: check with source, then submit
        calls(("check", {"source": kernel("relu")})),
        calls(("submit", {})),
    ]
