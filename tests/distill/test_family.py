"""Family split: dtype, shape and layout siblings are one family; different ops are not."""

from __future__ import annotations

from upskills.distill.family import family_hash
from upskills.tasks import load_task


def _src(name: str) -> str:
    return load_task(name).source


def test_dtype_siblings_share_a_family_and_other_ops_do_not():
    assert family_hash(_src("softmax_rows")) == family_hash(_src("softmax_rows_fp16"))
    assert family_hash(_src("row_sum")) == family_hash(_src("row_sum_fp16"))
    assert family_hash(_src("gemm_fp16")) == family_hash(_src("gemm_bf16"))
    assert family_hash(_src("softmax_rows")) != family_hash(_src("log_softmax_rows"))
    assert family_hash(_src("row_sum")) != family_hash(_src("row_max"))
    # a layout op is its own operation: a transpose is not a plain copy
    assert family_hash(_src("transpose_2d")) != family_hash(_src("copy_contiguous"))


def test_near_duplicates_shape_and_layout_siblings_share_a_family():
    src = _src("softmax_rows")
    commented = "# a comment added\n" + src.replace("\n", "  # note\n", 3)
    assert family_hash(commented) == family_hash(src)
    reshaped = src.replace("4096", "2048") if "4096" in src else src + "\nEXTRA = 7\n"
    assert family_hash(reshaped) == family_hash(src)
    layout = src.replace("return torch.softmax(x", "return torch.softmax(x.contiguous()")
    assert family_hash(layout) == family_hash(src)


def test_distilled_cases_split_by_family(tmp_path):
    from tests.distill.tracegen import ROW_SUM_MASKED, verdict, write_trace
    from upskills.cases.model import load_cases
    from upskills.distill import distill

    h = load_task("row_sum").hash
    for i in range(2):
        write_trace(
            tmp_path / "traces" / f"t{i}.jsonl",
            [(ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, task_hash=h))],
            task_hash=h,
        )
    distill([tmp_path / "traces"], tmp_path / "skills", tmp_path / "cases")
    split = {c.id: c.split for c in load_cases(tmp_path / "cases")}
    assert split["row_sum"] == "train"
    assert split["row_sum_fp16"] == "train"  # the fp16 sibling does not leak into held-out
    assert split["row_max"] == "heldout"
