"""A replay student for tests (a test double, never a result): known kernels by task and arm.

It answers from the messages alone, so a resumed run gets exactly the answers an uninterrupted
one got. An inline skill arm (its system prompt holds a ``<skill`` block that is not the
placebo's, whose wrapper is the same) and the on-demand arm
after it read the skill get the known-good kernel of the task; every other arm gets a broken
kernel (a real Triton kernel with a wrong result). On-demand arms first call ``read_skill``
(when it is among the tools offered); the answer is a code block, never another tool call.

For choose cases it scores lines by a fixed rule, not by knowing the answer: with the skill
inlined, a line that masks (``mask``) scores highest; otherwise the shortest line does.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence

from upskills.lift.arms import PLACEBO_NAME
from upskills.llm.base import Message, ModelResponse, ToolCallRequest, ToolSpec
from upskills.llm.mock import MockProvider

_HEAD = """import torch
import torch.nn as nn
import triton
import triton.language as tl

"""

GOOD = {
    "relu": _HEAD
    + """
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
""",
    "vector_add": _HEAD
    + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, a + b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
""",
}
"""Known-good kernels by task."""

BROKEN = {
    # the masked tail is dropped: whole blocks only, so ragged sizes come out wrong
    "relu": GOOD["relu"].replace("triton.cdiv(n, 1024)", "n // 1024"),
    # subtracts instead of adding
    "vector_add": GOOD["vector_add"].replace("a + b", "a - b"),
}
"""Kernels that run but give wrong results."""

SKILL_NAME = "gpu-test-skill"


def has_skill(system: str) -> bool:
    """The system prompt inlines a real skill (a ``<skill`` block other than the placebo)."""
    return re.search(rf'<skill name="(?!{PLACEBO_NAME}")', system) is not None


def answer(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse | str:
    """The replay policy (see module doc)."""
    delay = float(os.environ.get("UPSKILLS_TEST_REPLAY_DELAY", "0"))
    if delay:
        time.sleep(delay)
    system, user = messages[0].content, messages[1].content
    found = re.search(r"(?:TASK|# Task): (\w+)", user) or re.search(r"Task `(\w+)`", user)
    task = found.group(1) if found else ""
    read = any(m.role == "tool" and "Skill body" in m.content for m in messages)
    if any(t.name == "read_skill" for t in tools) and not read:
        call = ToolCallRequest(id="call-1", name="read_skill", arguments={"name": SKILL_NAME})
        return ModelResponse(tool_calls=[call], stop_reason="tool_use")
    good = has_skill(system) or read
    if task not in GOOD:
        return "I do not know this task."
    kernel = GOOD[task] if good else BROKEN[task]
    return f"Here is my kernel.\n\n```python\n{kernel}```\n"


def score(messages: Sequence[Message], prefix: str, lines: Sequence[str]) -> list[float]:
    """The replay's log-likelihoods of candidate lines (see module doc)."""
    skill = has_skill(messages[0].content)
    return [(10.0 if skill and "mask" in line else 0.0) - 0.01 * len(line) for line in lines]


def provider(model: str, **options: object) -> MockProvider:
    """Factory registered as provider ``replay``."""
    return MockProvider(fn=answer, model=f"replay-{model}", scorer=score)
