"""A CPU check says where the candidate's host code picks by device: what it does for GPU
tensors never runs on CPU (a forward passing ``SIGN=-1`` to its kernel on a GPU passed every
CPU trial of the vector add, 2026-12-07)."""

from __future__ import annotations

import ast

import pytest

from tests.verify.conftest import GOOD_ADD
from upskills.verify.static_device import device_notes

LAUNCH = "add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)"
BY_DEVICE = (
    GOOD_ADD.replace("x + y, mask", "x + y * SIGN, mask")
    .replace("BLOCK: tl.constexpr):", "BLOCK: tl.constexpr, SIGN: tl.constexpr):")
    .replace(LAUNCH, LAUNCH.replace("BLOCK=1024)", "BLOCK=1024, SIGN=1 if x.is_cpu else -1)"))
)
"""Adds on CPU; on a GPU it would subtract."""


def _lines(source: str) -> list[int]:
    return [int(n.split(":")[1]) for n in device_notes(ast.parse(source), "c.py")]


def test_a_forward_that_picks_by_device_passes_on_cpu_and_says_so(cpu_verifier, add_task):
    assert BY_DEVICE.count("x.is_cpu") == 1
    verdict = cpu_verifier.check(add_task, BY_DEVICE)
    assert verdict.passed, verdict.message  # a CPU trial cannot run the GPU branch
    said = [n for n in verdict.notes if n.startswith("device check:")]
    line = BY_DEVICE.splitlines().index(next(s for s in BY_DEVICE.splitlines() if "x.is_cpu" in s))
    assert len(said) == 1 and f":{line + 1}:" in said[0] and "x.is_cpu" in said[0], said
    assert any("only what the code does for CPU tensors runs" in n for n in verdict.notes)


def test_an_add_that_asks_nothing_gets_no_device_note(cpu_verifier, add_task):
    verdict = cpu_verifier.check(add_task, GOOD_ADD)
    assert verdict.passed, verdict.message
    assert not [n for n in verdict.notes if n.startswith("device check:")]


ASKING = {
    "compared": ("if x.device.type == 'cuda':\n    pass\n", [1]),
    "as_text": ("s = str(x.device)\n", [1]),
    "a_bound_name_compared": ("dev = x.device\nif dev.type == 'cpu':\n    pass\n", [2]),
    "is_cuda_as_a_key": ("k = {True: 1, False: -1}[x.is_cuda]\n", [1]),
    "get_device": ("i = x.get_device()\n", [1]),
    "by_getattr": ("k = getattr(x, 'is_cuda')\n", [1]),
    "cuda_is_available": ("import torch\nok = torch.cuda.is_available()\n", [2]),
    "capability": ("import torch\nmajor, _ = torch.cuda.get_device_capability()\n", [2]),
}
HANDED_ON = {
    "keyword": "import torch\nout = torch.empty(3, device=x.device)\n",
    "to": "y = x.to(x.device)\n",
    "a_bound_name_handed_on": "import torch\ndev = x.device\nout = torch.zeros(3, device=dev)\n",
    "kernel_body": ("import triton\n\n\n@triton.jit\ndef k(p):\n    if p.is_cuda:\n        pass\n"),
}


@pytest.mark.parametrize("case", sorted(ASKING))
def test_each_way_of_asking_is_named_at_its_line(case):
    source, lines = ASKING[case]
    assert _lines(source) == lines


@pytest.mark.parametrize("case", sorted(HANDED_ON))
def test_a_device_handed_on_is_not_asking(case):
    assert _lines(HANDED_ON[case]) == []
