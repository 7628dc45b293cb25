"""Arms that mean what they say: neutral baseline, wrapped placebo, excerpt with kernels."""

import json

from upskills.lift.arms import estimate_tokens, placebo_block, render_trace_text
from upskills.lift.prompting import system_prompt


def test_baseline_system_prompt_does_not_teach_masking():
    text = system_prompt("").lower()
    assert "mask" not in text and "multiple" not in text


def test_placebo_keeps_the_skill_wrapper_and_token_count():
    block = placebo_block(400, estimate_tokens, "1.2.3")
    assert block.startswith('<skill name="bread-history" version="1.2.3">')
    assert block.endswith("</skill>")
    assert abs(estimate_tokens(block) - 400) <= 0.05 * 400


def test_excerpt_renders_tool_call_events_with_their_kernels(tmp_path):
    kernel = "import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n"
    events = [
        {"event": "run_start", "task": "relu"},
        {"event": "tool_call", "gen_ai.tool.name": "check", "arguments": {"source": kernel}},
        {"event": "tool_result", "gen_ai.tool.name": "check", "output": "passed"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    text = render_trace_text(path)
    assert "@triton.jit" in text and "```python" in text and "tool result check: passed" in text
