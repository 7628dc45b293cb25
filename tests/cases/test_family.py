"""family_hash: siblings share a family, other operations do not, and edits are caught."""

from upskills.cases.family import family_hash
from upskills.tasks import load_task

SRC = '''"""Row sum."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N, dtype=torch.float32)]


def get_init_inputs():
    return []
'''


def test_comments_whitespace_constants_and_dtypes_do_not_change_the_family():
    edited = (
        SRC.replace('"""Row sum."""', '"""Sum rows (fp16)."""  # a comment')
        .replace("M = 8192", "M = 67  # ragged")
        .replace("torch.float32", "torch.float16")
        .replace("return x.sum(dim=-1)", "return x.sum(dim=-1)   # reduce\n\n")
    )
    assert family_hash(edited) == family_hash(SRC)


def test_another_operation_is_another_family():
    assert family_hash(SRC.replace("x.sum(dim=-1)", "x.amax(dim=-1)")) != family_hash(SRC)


def test_suite_dtype_siblings_share_a_family():
    assert family_hash(load_task("gemm_fp16").source) == family_hash(load_task("gemm_bf16").source)
    assert family_hash(load_task("row_sum").source) != family_hash(load_task("row_max").source)
