from upskills.lift.arms import estimate_tokens, excerpt_text, placebo_text
from upskills.lift.prompting import extract_kernel, system_prompt


def test_extract_last_block_with_modelnew():
    text = (
        "Here:\n```python\nimport torch\n```\nand\n```python\nclass ModelNew:\n    pass\n```\n"
        "```python\nclass ModelNew:\n    x = 2\n```"
    )
    assert extract_kernel(text) == "class ModelNew:\n    x = 2\n"


def test_extract_unterminated_block_and_none():
    assert extract_kernel("```python\nclass ModelNew:\n    pass") == "class ModelNew:\n    pass\n"
    assert extract_kernel("I cannot help with that.") is None
    assert extract_kernel("```bash\nls\n```") is None


def test_skill_block_is_the_only_difference():
    a, b = system_prompt(""), system_prompt("SKILL TEXT")
    assert "SKILL TEXT" in b and "{skill_block}" not in a
    assert a.replace("\n", "") == b.replace("SKILL TEXT", "").replace("\n", "")


def test_placebo_within_five_percent_of_any_size():
    for tokens in (40, 300, 1500, 5000):
        text = placebo_text(tokens, estimate_tokens)
        assert abs(estimate_tokens(text) - tokens) <= 0.05 * tokens
        assert "bread" in text.lower() or tokens < 100
        assert "kernel" not in text.lower() and "triton" not in text.lower()


def test_placebo_with_a_word_counter():
    def words(t):
        return len(t.split())

    text = placebo_text(700, words)
    assert abs(words(text) - 700) <= 35


def test_excerpt_is_first_4000_chars(tmp_path):
    import json

    lines = [
        {"event": "run_start", "task": "relu"},
        {"event": "model_call", "response_text": "x" * 3000, "tool_calls": []},
        {"event": "tool_result", "gen_ai.tool.name": "check", "output": "y" * 3000},
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    text = excerpt_text([p])
    assert len(text) == 4000
    assert text.startswith("# task relu\nassistant: xxx")
    assert text.endswith("y")
