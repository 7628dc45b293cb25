"""Per-call perturbation of timing inputs (upskills/verify/perturb.py): every float element
moves by a factor in [0.75, 1] made from its value and the call's seed, equal values stay
equal, the same seed gives the same inputs, other types stay."""

from __future__ import annotations

import pytest
import torch

from upskills.verify import perturb
from upskills.verify.perturb import SPAN, perturb_inputs


def _inputs() -> list:
    gen = torch.Generator().manual_seed(0)
    return [
        torch.randn(64, 33, generator=gen),
        [torch.randn(5, generator=gen).half(), torch.arange(10)],
        torch.randn(8, 6, generator=gen).t(),  # not contiguous
        torch.ones(3, dtype=torch.bool),
        2.5,
    ]


def _flat(values: list) -> list[torch.Tensor]:
    return [values[0], values[1][0], values[1][1], values[2], values[3]]


def test_every_float_element_moves_by_a_bounded_factor():
    before = _inputs()
    after = _inputs()
    perturb_inputs(after, seed=123)
    floats = [0, 1, 3]
    for b, a in zip(
        [_flat(before)[i] for i in floats], [_flat(after)[i] for i in floats], strict=True
    ):
        ratio = (a.float() / b.float()).reshape(-1)
        assert bool(((ratio > 1 - SPAN - 1e-2) & (ratio <= 1 + 1e-3)).all())
        assert int((a != b).sum()) >= 0.9 * b.numel()  # fp16 rounding may keep a few
        assert ratio.unique().numel() > 1  # not one factor for the whole tensor
    assert torch.equal(_flat(after)[2], torch.arange(10))
    assert torch.equal(_flat(after)[4], torch.ones(3, dtype=torch.bool))
    assert after[4] == 2.5


def test_the_same_seed_gives_the_same_inputs_and_another_seed_others():
    one, two, other = _inputs(), _inputs(), _inputs()
    perturb_inputs(one, seed=7)
    perturb_inputs(two, seed=7)
    perturb_inputs(other, seed=8)
    for a, b, c in zip(_flat(one), _flat(two), _flat(other), strict=True):
        assert torch.equal(a, b)
        if a.is_floating_point():
            assert not torch.equal(a, c)


def test_a_key_of_a_few_elements_or_their_ratio_hits_no_earlier_call(monkeypatch):
    """What a value-keyed cache would look up: the set's own key never, another call's rarely."""
    monkeypatch.setattr(perturb, "CHUNK", 100)  # the chunked draw, several chunks per tensor
    base = torch.randn(1000, generator=torch.Generator().manual_seed(1))
    pairs, ratios = set(), set()
    for call in range(200):
        x = base.clone()
        perturb_inputs([x], seed=call)
        assert (float(x[7]), float(x[500])) != (float(base[7]), float(base[500]))
        assert float(x[7] / x[500]) != float(base[7] / base[500])
        pairs.add((float(x[7]), float(x[500])))
        ratios.add(float(x[7] / x[500]))
    assert len(pairs) == 200 and len(ratios) >= 196  # float32 ratios may meet by rounding


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_signs_and_zeros_are_kept(dtype):
    x = torch.tensor([-3.0, -1e-3, 0.0, 1e-3, 3.0, 1e4], dtype=dtype)
    y = x.clone()
    perturb_inputs([y], seed=5)
    assert torch.equal(torch.sign(y), torch.sign(x))


def test_the_judge_rebuilds_what_the_candidates_loader_timed():
    """The candidate's loader copies a set into its work tensors and perturbs them; the judge
    builds the set again from its seed and perturbs it with the same call seed: the same
    inputs, so the kept output is compared against the reference of what was really timed."""
    from types import SimpleNamespace

    from upskills.tasks import load_task
    from upskills.tasks.runtime import build_inputs, load_reference
    from upskills.verify.judge_outputs import trial_seed
    from upskills.verify.judge_timing import perturbed_reference
    from upskills.verify.transport import clone_tree, copy_into

    task = load_task("cross_entropy")  # float logits and int64 targets
    module = load_reference(task, "small")
    model = module.Model()
    judge = SimpleNamespace(
        device="cpu",
        job=SimpleNamespace(seed=11),
        reference=lambda prepared, inputs: (prepared.model(*clone_tree(inputs)), set()),
    )
    prepared = SimpleNamespace(module=module, model=model)
    sets = [build_inputs(module, "cpu", trial_seed(11, "timing", i)) for i in range(3)]
    work = clone_tree(sets[0])
    copy_into(work, sets[2])  # the loader: set 2 for this call ...
    perturb_inputs(work, 987654321)  # ... perturbed with this call's seed
    timed = model(*work)
    assert torch.equal(perturbed_reference(judge, prepared, 2, 987654321)[0], timed)
    assert not torch.equal(model(*sets[2]), timed)  # the perturbation changed what was timed
    assert not torch.equal(perturbed_reference(judge, prepared, 1, 987654321)[0], timed)


def test_equal_values_stay_equal_so_a_tasks_structure_is_kept():
    """A symmetric input stays symmetric, a triangular one keeps its zeros, +-1 keeps its
    pattern: a kernel entitled to that structure by its task is timed on inputs that have it."""
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(64, 64, generator=gen)
    sym = (a + a.t()).contiguous()
    tri = torch.triu(torch.randn(64, 64, generator=gen))
    signs = torch.randint(0, 2, (1000,), generator=gen).float() * 2 - 1
    perturb_inputs([sym, tri, signs], seed=99)
    assert torch.equal(sym, sym.t())
    assert bool((torch.tril(tri, -1) == 0).all())
    assert signs.unique().numel() == 2 and bool((signs.abs() < 1).all())


def test_float64_inputs_move_by_a_bounded_factor_too():
    """The int64 view of a float64 tensor is the tensor itself: the hash must work on a copy
    (it once overwrote the inputs with their hash)."""
    x = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    y = x.clone()
    perturb_inputs([y], seed=11)
    ratio = y / x
    assert bool(((ratio >= 1 - SPAN) & (ratio <= 1)).all()), ratio[:4]
    assert ratio.unique().numel() > 900


FUSED_VS_TORCH = """
import torch
from upskills.verify import perturb
for dtype in (torch.float32, torch.float16, torch.float64):
    for n in (1, 1000, 3 * perturb.FUSED_BLOCK + 17):
        x = (torch.randn(n, dtype=torch.float64) * 10).to(dtype)
        x[: min(n, 5)] = torch.tensor([0.0, -0.0, float("inf"), float("nan"), 1e-40][: min(n, 5)],
                                      dtype=torch.float64).to(dtype)
        salt = perturb._salt(12345, 1)
        fused, plain = x.clone(), x.clone()
        perturb.fused_perturb(fused, salt)
        plain.mul_(perturb._factors(plain, salt))
        ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
        assert torch.equal(fused.view(ints), plain.view(ints)), (dtype, n)
print("same bits")
"""


def test_the_fused_kernel_gives_the_same_bits_as_the_pytorch_ops():
    """The GPU path (one Triton kernel) against the PyTorch ops, bit for bit, run here in
    Triton's interpreter: float32, float16, float64, with zeros, infinities, NaN and
    denormals. (bfloat16 is checked on the GPU: the interpreter truncates fp32 to bf16
    where the GPU rounds to nearest.)"""
    import os
    import subprocess
    import sys

    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, "-c", FUSED_VS_TORCH], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0 and "same bits" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_on_the_gpu_the_fused_kernel_gives_the_pytorch_ops_bits_faster(dtype):
    """On the GPU, bf16 included: the same bits, in less time (printed with ``-s``)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    n = (1 << 26) + 17  # 256 MiB of float32: a built-in task's input
    x = torch.randn(n, device="cuda").to(dtype)
    salt = perturb._salt(99, 0)
    fused, plain = x.clone(), x.clone()
    perturb.fused_perturb(fused, salt)
    flat = plain.view(-1)
    for start in range(0, n, perturb.CHUNK):
        part = flat[start : start + perturb.CHUNK]
        part.mul_(perturb._factors(part, salt))
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    assert torch.equal(fused.view(ints), plain.view(ints))

    def per_call_ms(fn) -> float:  # noqa: ANN001
        y = x.clone()
        fn(y)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn(y)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 5

    def torch_ops(y) -> None:  # noqa: ANN001
        f = y.view(-1)
        for start in range(0, n, perturb.CHUNK):
            f[start : start + perturb.CHUNK].mul_(
                perturb._factors(f[start : start + perturb.CHUNK], salt)
            )

    fused_ms = per_call_ms(lambda y: perturb.fused_perturb(y, salt))
    torch_ms = per_call_ms(torch_ops)
    print(f"perturbation of {n} {dtype}: fused {fused_ms:.3f} ms, PyTorch ops {torch_ms:.3f} ms")
    assert fused_ms < torch_ms


def test_a_fused_kernel_that_cannot_run_leaves_the_pytorch_path(monkeypatch, capsys):
    """A process where Triton cannot build the kernel perturbs with the PyTorch ops (the same
    bits), says so once, and does not try the kernel again."""
    calls: list[int] = []

    def broken(tensor, salt):  # noqa: ANN001, ANN202
        calls.append(salt)
        raise RuntimeError("no compiler")

    monkeypatch.setattr(perturb, "fused_perturb", broken)
    monkeypatch.setattr(perturb, "_fused_failed", [])
    x = torch.ones(8)
    assert perturb._try_fused(x, 1) is False and torch.equal(x, torch.ones(8))
    assert perturb._try_fused(x, 2) is False and calls == [1]
    assert capsys.readouterr().err.count("perturbing with PyTorch ops instead") == 1
