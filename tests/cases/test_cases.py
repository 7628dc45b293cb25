from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, verdict, write_trace
from upskills._cli.main import main
from upskills.cases.check import check_case
from upskills.cases.generate import build_cases, cases_for_task
from upskills.cases.model import (
    SCHEMA_HEADER,
    CaseError,
    TestCase,
    dump_case,
    load_cases,
    read_case,
)
from upskills.distill import distill
from upskills.schemas import SCHEMA_DIR
from upskills.tasks import builtin_tasks, load_task


@pytest.fixture(scope="module")
def row_sum():
    return load_task("row_sum")


def test_cases_for_task_cover_all_judged_variants_and_ragged_alone(row_sum):
    full, ragged = cases_for_task(row_sum, "train", origin=["trace:abc"], techniques=["masking"])
    assert (full.id, ragged.id) == ("row_sum", "row_sum-ragged")
    assert full.variants == ["main", "small", "ragged"] and ragged.variants == ["ragged"]
    assert ragged.ragged and "shape:ragged" in ragged.tags
    assert {"reduction", "dtype:float32", "technique:masking"} <= set(full.tags)
    assert full.to_task().hash == row_sum.hash == full.task_hash
    assert "Task `row_sum`" in ragged.prompt and "`ragged` (M=67, N=1003)" in ragged.prompt
    assert "class Model(nn.Module)" in ragged.prompt and "ModelNew" in ragged.prompt
    assert "skill" not in ragged.prompt.lower()
    assert len(full.prompt_sha256) == 16


def test_split_is_by_task_hash(row_sum):
    tasks = builtin_tasks()
    cases = build_cases(tasks, {row_sum.hash: ["t1"]})
    train = {c.id for c in cases if c.split == "train"}
    assert train == {"row_sum", "row_sum-ragged"}
    assert {c.task for c in cases if c.split == "heldout"} == {t.name for t in tasks} - {"row_sum"}
    assert next(c for c in cases if c.id == "row_sum").origin == ["trace:t1"]


def test_yaml_round_trip_with_schema_header_validates_against_committed_schema(row_sum, tmp_path):
    import jsonschema

    case = cases_for_task(row_sum, "heldout")[0]
    text = dump_case(case)
    assert text.splitlines()[0] == SCHEMA_HEADER
    assert (
        (Path("testcases/kernels") / SCHEMA_HEADER.split("=", 1)[1])
        .as_posix()
        .endswith("upskills/schemas/testcase.schema.json")
    )
    (tmp_path / "c.yaml").write_text(text)
    assert read_case(tmp_path / "c.yaml") == case
    schema = json.loads((SCHEMA_DIR / "testcase.schema.json").read_text())
    jsonschema.validate(yaml.safe_load(text), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**yaml.safe_load(text), "split": "test"}, schema)


def test_malformed_case_files_name_file_and_field(row_sum, tmp_path):
    good = yaml.safe_load(dump_case(cases_for_task(row_sum, "heldout")[0]))
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({**good, "split": "test"}))
    with pytest.raises(CaseError, match=r"a.yaml: field 'split'"):
        load_cases(tmp_path)
    (tmp_path / "a.yaml").write_text("id: [unclosed\n")
    with pytest.raises(CaseError, match=r"a.yaml:\d+: invalid YAML"):
        read_case(tmp_path / "a.yaml")
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({**good, "extra": 1}))
    with pytest.raises(CaseError, match="field 'extra'"):
        read_case(tmp_path / "a.yaml")
    with pytest.raises(CaseError, match="no test case file or folder"):
        load_cases(tmp_path / "missing")


def test_reference_fallback_proves_the_task_runs(row_sum):
    case = cases_for_task(row_sum, "heldout")[1]
    result = check_case(case, device="cpu")
    assert (result.passed, result.method) == (True, "reference")
    tampered = case.model_copy(update={"task_source": case.task_source.replace("dim=-1", "dim=0")})
    assert check_case(tampered, device="cpu").method == "task"  # hash no longer matches
    broken_src = case.task_source.replace("return x.sum(dim=-1)", "return x.sum(dim=-1) / 0.0")
    broken = TestCase.model_validate({**case.model_dump(), "task_source": broken_src})
    broken = broken.model_copy(update={"task_hash": broken.to_task().hash})
    result = check_case(broken, device="cpu")
    assert not result.passed and "not finite" in result.message


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # verifier pipe leak
def test_distilled_cases_and_cli_check_with_known_good_kernel(tmp_path, row_sum):
    write_trace(
        tmp_path / "traces" / "t.jsonl",
        [
            (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False, task_hash=row_sum.hash)),
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, task_hash=row_sum.hash)),
        ],
    )
    result = distill([tmp_path / "traces"], tmp_path / "skills", tmp_path / "testcases")
    suite = tmp_path / "testcases" / "kernels"
    assert len(result.cases) == 2 * len(builtin_tasks())
    split = (suite / "split.tsv").read_text().splitlines()
    assert "train\trow_sum-ragged\t" + row_sum.hash in split
    cases = load_cases(suite)
    trained = [c for c in cases if c.split == "train"]
    # the fp16 sibling is the same family (issue 11): train too, never held-out
    ids = ["row_sum", "row_sum-ragged", "row_sum_fp16", "row_sum_fp16-ragged"]
    assert [c.id for c in trained] == ids
    assert trained[1].known_good == ROW_SUM_MASKED and trained[3].known_good is None
    assert all(c.known_good is None for c in cases if c.split == "heldout")
    run = CliRunner().invoke
    out = run(main, ["cases", "list", str(suite), "--split", "train"])
    assert out.exit_code == 0 and out.output.splitlines() == [
        "row_sum\ttrain\trow_sum\tmain,small,ragged",
        "row_sum-ragged\ttrain\trow_sum\tragged",
        "row_sum_fp16\ttrain\trow_sum_fp16\tmain,small,ragged",
        "row_sum_fp16-ragged\ttrain\trow_sum_fp16\tragged",
    ]
    out = run(main, ["cases", "show", "row_sum-ragged", str(suite), "--prompt"])
    assert out.output.startswith("Write a GPU kernel for the task below.")
    out = run(main, ["cases", "check", str(suite), "--case", "row_sum-ragged", "--device", "cpu"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("ok\trow_sum-ragged\tkernel\t")
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "row_sum.py").write_text(ROW_SUM_TAIL_DROPPED)  # overrides the case's known-good
    check = ["cases", "check", str(suite), "--device", "cpu", "--kernels-dir", str(kernels)]
    out = run(main, [*check, "--case", "row_sum-ragged", "--case", "relu-ragged"])
    assert "ok\trelu-ragged\treference\t" in out.output  # no kernel for relu: reference runs
    assert out.exit_code == 1 and "FAIL\trow_sum-ragged\tkernel\t" in out.output
    assert "1 of 2 case(s) failed" in out.output
