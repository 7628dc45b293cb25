"""upskills.tasks.runtime: references run with the variant's globals, on the target device."""

from __future__ import annotations

import pytest

from tests.verify.conftest import ROW_SUM_REF, make_task
from upskills.tasks.model import ShapeVariant
from upskills.tasks.runtime import ReferenceRunError, build, input_seed, load_reference

torch = pytest.importorskip("torch")

LINEAR_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.lin = nn.Linear(k, n)

    def forward(self, x):
        return self.lin(x)


M, K, N = 4, 8, 3


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
"""


def test_variant_globals_are_rebound():
    task = make_task("rs", ROW_SUM_REF, [ShapeVariant(name="v", globals={"M": 3, "N": 5})])
    model, inputs, init = build(task, "v", "cpu", 0)
    assert init == [] and inputs[0].shape == (3, 5)
    assert torch.equal(model(*inputs), inputs[0].sum(-1))


def test_inputs_are_created_on_the_target_device():
    # the meta device holds no data: an input built on the CPU and copied would be on cpu
    task = make_task("lin", LINEAR_REF, [])
    model, inputs, _ = build(task, None, "meta", 0)
    assert inputs[0].device.type == "meta"
    assert model.lin.weight.device.type == "meta"


def test_same_seed_same_parameters_and_inputs_distinct_streams():
    task = make_task("lin", LINEAR_REF, [])
    m1, x1, _ = build(task, None, "cpu", 3)
    m2, x2, _ = build(task, None, "cpu", 3)
    m3, x3, _ = build(task, None, "cpu", 4)
    assert torch.equal(m1.lin.weight, m2.lin.weight) and torch.equal(x1[0], x2[0])
    assert not torch.equal(x1[0], x3[0])
    assert input_seed(3) != 3


def test_broken_reference_names_the_task():
    task = make_task("broken", "import torch\nraise ValueError('nope')\n", [])
    with pytest.raises(ReferenceRunError, match="'broken'.*ValueError: nope"):
        load_reference(task)
    task = make_task("partial", "class Model:\n    pass\n", [])
    with pytest.raises(ReferenceRunError, match="does not define get_inputs, get_init_inputs"):
        load_reference(task)


def test_unknown_variant():
    task = make_task("rs", ROW_SUM_REF, [ShapeVariant(name="v")])
    with pytest.raises(KeyError, match="no variant 'w'"):
        load_reference(task, "w")
