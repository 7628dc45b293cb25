"""Markdown is read the way a renderer reads it: front matter, sections and code blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskills.core.markdown import extract_kernel, fenced_blocks, sections, split_front_matter
from upskills.skills.diff import diff_packs
from upskills.skills.pack import PackError, load_pack, split_frontmatter
from upskills.skills.tokens import section_tokens

SKILL = """---
name: demo-skill
description: "A skill whose body has --- rules and fences"
metadata:
  version: "1.0.0"
---

# Demo

Intro text.

---

## Masking

```python
# ## not a heading
x = 1
---
```

## Tiling

- step one:

  ```python
  class ModelNew: pass
  ```
"""


def test_front_matter_ends_at_its_closing_line_not_at_the_next_dashes():
    front, body = split_frontmatter(SKILL)
    assert front["name"] == "demo-skill" and "---" in front["description"]
    assert body.startswith("# Demo\n") and body.count("---") == 2
    assert split_front_matter("no front matter\n---\n") == (None, "no front matter\n---\n")
    with pytest.raises(PackError, match="not closed"):
        split_frontmatter("---\nname: x\n")


def test_sections_ignore_headings_inside_code():
    _, body = split_frontmatter(SKILL)
    found = [(s.title, s.level) for s in sections(body)]
    assert found == [("Demo", 1), ("Masking", 2), ("Tiling", 2)]
    tokens = dict(section_tokens(body))
    assert set(tokens) == {"Demo", "Masking", "Tiling"} and all(n > 0 for n in tokens.values())


def test_fences_inside_list_items_are_found():
    blocks = fenced_blocks(SKILL)
    assert [b.lang for b in blocks] == ["python", "python"]
    assert blocks[1].body == "class ModelNew: pass\n"


def test_one_kernel_extraction_rule():
    reply = (
        "Plan:\n```python\nimport torch\n```\n```py\nclass ModelNew: v = 1\n```\n```bash\nls\n```"
    )
    assert extract_kernel(reply) == "class ModelNew: v = 1\n"
    assert extract_kernel("~~~python\nclass ModelNew: v = 3\n~~~") == "class ModelNew: v = 3\n"
    assert extract_kernel("```python\nclass ModelNew:\n    pass") == "class ModelNew:\n    pass\n"
    assert extract_kernel("```cuda\n__global__ void k() {}\n```") is None


def _pack(folder: Path, version: str, body: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f'---\nname: demo-skill\ndescription: d\nmetadata:\n  version: "{version}"\n---\n{body}'
    )
    return folder


def test_skills_diff_reports_sections(tmp_path: Path):
    old = _pack(tmp_path / "a" / "demo-skill", "1.0.0", "# D\n\n## Masking\nmask\n\n## Old\nx\n")
    new = _pack(
        tmp_path / "b" / "demo-skill", "1.1.0", "# D\n\n## Masking\nmask more\n\n## New\ny\n"
    )
    diff = diff_packs(load_pack(old), load_pack(new))
    assert (diff.sections_added, diff.sections_removed, diff.sections_changed) == (
        ["New"], ["Old"], ["Masking"],
    )  # fmt: skip
    assert "sections changed:\n  ~ Masking" in diff.render()
