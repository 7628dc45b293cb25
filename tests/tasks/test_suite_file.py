"""``suite.yaml`` validation: unknown keys, main variants, tags; errors give file and line."""

from __future__ import annotations

import textwrap

import pytest

from tests.tasks.kernelbench_files import SOFTMAX
from upskills.tasks import TaskError, load_folder, load_task

GOOD_ENTRY = """\
schema_version: 1
tasks:
  row_softmax:
    statement: Softmax over rows, float32.
    tags: [softmax]
    dtypes: [float32]
    variants:
      - {name: main, main: true, cpu: false}
      - {name: small, globals: {batch_size: 4, dim: 100}}
"""


def _suite(tmp_path, text: str):
    (tmp_path / "row_softmax.py").write_text(SOFTMAX)
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(text))
    return tmp_path


def test_folder_with_a_suite_uses_it(tmp_path):
    (task,) = load_folder(_suite(tmp_path, GOOD_ENTRY))
    assert task.statement == "Softmax over rows, float32."
    assert [v.name for v in task.variants] == ["main", "small"]
    # A file loaded alone picks up its folder's suite entry too.
    assert load_task(tmp_path / "row_softmax.py").variants == task.variants


@pytest.mark.parametrize(
    ("text", "expected", "line"),
    [
        (GOOD_ENTRY.replace("    tags:", "    tag: [x]\n    tags:"), "unknown key 'tag'", 5),
        (GOOD_ENTRY.replace("[softmax]", "[softmax, fancy]"), "unknown tag 'fancy'", 5),
        (GOOD_ENTRY.replace("main: true, ", ""), "no main variant", 7),
        (GOOD_ENTRY.replace("{name: small,", "{name: small, main: true,"), "more than one main", 7),
        (
            GOOD_ENTRY.replace("    statement: Softmax over rows, float32.\n", ""),
            "missing or empty statement",
            3,
        ),
        (GOOD_ENTRY.replace("schema_version: 1", "version: 1"), "unknown key 'version'", 1),
        (GOOD_ENTRY.replace("schema_version: 1", "schema_version: 2"), "schema_version", 1),
        (
            GOOD_ENTRY + GOOD_ENTRY.split("tasks:\n")[1].replace("row_softmax", "ghost"),
            "without a .py file: ghost",
            None,
        ),
    ],
)
def test_bad_suite_entries(tmp_path, text, expected, line):
    with pytest.raises(TaskError) as info:
        load_folder(_suite(tmp_path, text))
    assert expected in str(info.value)
    assert info.value.path == str(tmp_path / "suite.yaml")
    if line is not None:
        assert info.value.line == line


def test_metadata_given_twice_is_an_error(tmp_path):
    _suite(tmp_path, GOOD_ENTRY)
    (tmp_path / "row_softmax.yaml").write_text("tags: [softmax]\n")
    with pytest.raises(TaskError, match="metadata given twice"):
        load_folder(tmp_path)
