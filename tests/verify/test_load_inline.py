"""load_inline kernels count as the candidate's own launches; ATen ops inside them do not hide.

Builds a small C++ extension (CPU) once; the second check reuses the build.
"""

from __future__ import annotations

import shutil

import pytest

from upskills.verify.verdict import ErrorClass

pytestmark = [
    pytest.mark.slow,  # compiling the extension takes ~30-70 s
    pytest.mark.skipif(
        shutil.which("c++") is None or shutil.which("ninja") is None,
        reason="needs a C++ compiler and ninja to build a load_inline extension",
    ),
]

CPP_CANDIDATE = """
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = '''
#include <torch/extension.h>

torch::Tensor add_loop(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] + b[i];
    return out;
}

torch::Tensor add_aten(torch::Tensor x, torch::Tensor y) { return x + y; }
'''

_ext = load_inline(
    name="upskills_test_add_ext",
    cpp_sources=_SRC,
    functions=["add_loop", "add_aten"],
    extra_cflags=["-O1"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return _ext.FUNC(x.contiguous(), y.contiguous())
"""


def test_load_inline_kernel_passes_and_aten_inside_it_is_caught(add_task, tmp_path, monkeypatch):
    from upskills.verify import CheckOptions, Verifier

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    with Verifier("cpu", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        v = verifier.check(add_task, CPP_CANDIDATE.replace("FUNC", "add_loop"))
        assert v.passed, v.message
        v = verifier.check(add_task, CPP_CANDIDATE.replace("FUNC", "add_aten"))
        assert v.error_class == ErrorClass.GUARD and "aten.add" in v.message
