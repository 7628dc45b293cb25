"""``upskills tasks list|show`` through click's CliRunner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tests.tasks.kernelbench_files import write_level1
from upskills._cli.main import main
from upskills.tasks import builtin_names, load_task


def _invoke(*args: str):
    return CliRunner().invoke(main, ["tasks", *args], env={"COLUMNS": "200"})


def test_list_table_shows_every_builtin():
    result = _invoke("list")
    assert result.exit_code == 0, result.output
    for name in builtin_names():
        assert name in result.output
    assert "33 tasks" in result.output
    assert "main*!, small, ragged~" in result.output


def test_list_json_is_parseable_and_filterable():
    result = _invoke("list", "--json")
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert [r["name"] for r in rows] == builtin_names()
    assert all("source" not in r and len(r["hash"]) == 16 for r in rows)
    softmax = json.loads(_invoke("list", "--json", "--tag", "softmax").output)
    assert [r["name"] for r in softmax] == ["softmax_rows", "softmax_rows_fp16", "log_softmax_rows"]
    both = json.loads(_invoke("list", "--json", "--tag", "scan", "--tag", "gather").output)
    assert [r["name"] for r in both] == ["cumsum_rows", "embedding_gather"]


def test_list_from_a_kernelbench_folder(tmp_path):
    folder = write_level1(tmp_path / "level1")
    rows = json.loads(_invoke("list", "--json", "--from", str(folder)).output)
    assert [r["name"].split("_")[0] for r in rows] == ["1", "2", "10", "23", "47"]
    assert rows[0]["variants"] == [
        {"name": "default", "globals": {}, "ragged": False, "cpu": True, "main": True}
    ]
    table = _invoke("list", "--from", str(folder), "--tag", "gemm")
    assert table.exit_code == 0
    assert "23_Softmax" not in table.output and "3 tasks" in table.output


def test_list_errors_are_clear(tmp_path):
    result = _invoke("list", "--tag", "magic")
    assert result.exit_code == 2 and "unknown tag 'magic'" in result.output
    (tmp_path / "1_bad.py").write_text("class Model(:\n")
    result = _invoke("list", "--from", str(tmp_path))
    assert result.exit_code == 1
    assert "1_bad.py:1: syntax error" in result.output


def test_show_text_has_metadata_variants_and_source():
    result = _invoke("show", "gemm_bias_relu")
    assert result.exit_code == 0, result.output
    task = load_task("gemm_bias_relu")
    assert task.statement in result.output
    assert task.hash in result.output
    assert "ragged_large" in result.output and "M=4093, N=4097, K=4091" in result.output
    assert task.source in result.output


def test_show_a_file_lists_its_own_globals_as_the_default_variant(tmp_path):
    folder = write_level1(tmp_path)
    result = _invoke("show", str(folder / "23_Softmax.py"))
    assert result.exit_code == 0, result.output
    assert "batch_size=4096, dim=393216" in result.output


def test_show_json_round_trips():
    data = json.loads(_invoke("show", "histogram", "--json").output)
    task = load_task("histogram")
    assert data["source"] == task.source
    assert data["hash"] == task.hash
    assert [v["name"] for v in data["variants"]] == ["main", "small", "ragged"]


def test_show_unknown_task_fails_with_a_hint():
    result = _invoke("show", "histogramm")
    assert result.exit_code == 1
    assert "unknown task 'histogramm'" in result.output and "histogram" in result.output
