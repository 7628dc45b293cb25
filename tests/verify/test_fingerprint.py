"""Fingerprints of timed calls' outputs (upskills/verify/fingerprint.py): an output within the
judge's element tolerance passes the audit's statistic, and one that was not computed for the
call's inputs (stale, partly computed, zeros, NaN) fails it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from upskills.verify.compare import compare_outputs
from upskills.verify.fingerprint import (
    PROJECTIONS,
    expected,
    fingerprints,
    signs,
    squared_deviations,
    threshold,
)
from upskills.verify.perturb import perturb_inputs

TOL = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}


def _mean(outs: list[list[torch.Tensor]], refs: list[list[torch.Tensor]], seed: int) -> float:
    """The audit's statistic over these calls (call i's output against its reference)."""
    squares: list[float] = []
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        got = fingerprints(out, seed, i).tolist()
        for k, want in enumerate(expected(ref, seed, i, None, None, False)):
            assert want is not None
            squares += squared_deviations(got[k * PROJECTIONS : (k + 1) * PROJECTIONS], want)
    return sum(squares) / len(squares) / threshold(len(squares))  # > 1 fails the audit


def test_signs_are_a_balanced_hash_of_position_salt_and_call():
    s = signs(0, 50_000, 12345, "cpu")
    assert s.shape == (50_000, PROJECTIONS) and set(s.unique().tolist()) == {-1.0, 1.0}
    assert float(s.mean(0).abs().max()) < 0.02  # balanced in every projection
    assert float((s.T @ s / 50_000 - torch.eye(PROJECTIONS)).abs().max()) < 0.02  # independent
    assert torch.equal(s[500:600], signs(500, 600, 12345, "cpu"))  # by position, not by chunk
    assert not torch.equal(s, signs(0, 50_000, 54321, "cpu"))


def test_the_threshold_bounds_an_honest_outputs_false_alarm():
    """Honest deviations are at most ~N(0, 1) per projection: a mean of M squares of standard
    normals stays far under the threshold (checked by simulation, 2000 runs a size)."""
    gen = torch.Generator().manual_seed(0)
    for m in (8, 128, 1024):
        sims = torch.randn(2000, m, generator=gen, dtype=torch.float64).square().mean(1)
        assert float(sims.max()) < threshold(m)
    assert threshold(128) < 2.1 and threshold(8) < 12  # what the docs say


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_an_output_the_element_test_passes_always_passes(dtype):
    """Near the worst an honest kernel may do: every element off by most of its tolerance,
    all one way or at random, on 16 calls."""
    gen = torch.Generator().manual_seed(0)
    refs, outs = [], []
    for trial in range(16):
        ref = [
            torch.randn(3000, generator=gen).to(dtype),
            torch.rand(7, 11, generator=gen).to(dtype),
        ]
        worst = []
        for r in ref:
            rf = r.double()
            rms = float(rf.square().mean().sqrt())
            atol, rtol = TOL[dtype] * rms, TOL[dtype]
            sign = torch.where(torch.rand(r.shape, generator=gen) < 0.5 + 0.5 * (trial % 2), 1, -1)
            off = rf + 0.6 * sign * (atol + rtol * rf.abs())  # rounding to dtype adds a bit
            worst.append(off.to(dtype))
        assert compare_outputs(ref, worst).passed  # the judge's element test passes them ...
        refs.append(ref)
        outs.append(worst)
    assert _mean(outs, refs, seed=7) <= 1.0  # ... and so does the audit


def test_integer_outputs_match_exactly():
    ref = [torch.arange(1000, dtype=torch.int64) % 17]
    assert _mean([[ref[0].clone()]], [ref], seed=3) == 0.0
    bumped = ref[0].clone()
    bumped[999] += 1
    assert _mean([[bumped]], [ref], seed=3) == float("inf")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [1 << 12, 1 << 20])
def test_a_stale_output_fails_at_any_size(dtype, n):
    """The output of an earlier call on the same input set, under its own perturbation: what a
    forward that skips calls returns. The first design's single sum let it through at 1M
    float32 elements and at any float16 size; half of 16 calls stale fail now."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, generator=gen).to(dtype)
    refs, outs = [], []
    for call in range(16):
        now, before = x.clone(), x.clone()
        perturb_inputs([now], seed=100 + call)
        perturb_inputs([before], seed=200 + call)
        refs.append([now * 2])
        outs.append([before * 2] if call % 2 else [now * 2])
    assert _mean(outs, refs, seed=9) > 1.0


def test_partly_computed_zero_and_nan_outputs_fail():
    gen = torch.Generator().manual_seed(2)
    ref = [torch.randn(1 << 16, generator=gen)]
    partial = ref[0].clone()
    partial[1024:] = torch.randn(ref[0].numel() - 1024, generator=gen)  # garbage after one block
    quarter = ref[0].clone()
    quarter[: ref[0].numel() // 4] = 0.0
    for out in (partial, quarter, torch.zeros_like(ref[0]), torch.full_like(ref[0], torch.nan)):
        assert _mean([[out]] * 4, [ref] * 4, seed=5) > 1.0


def test_a_fingerprint_is_of_its_call():
    """Call i's signs are not call j's: a deviation in one call is independent of another's."""
    ref = [torch.randn(4096)]
    assert not torch.equal(fingerprints(ref, 1, 0), fingerprints(ref, 1, 1))


def test_a_reference_with_nonfinite_elements_is_not_judged():
    ref = [torch.tensor([1.0, float("inf"), 2.0])]
    assert expected(ref, 1, 0, None, None, False) == [None]


FUSED_VS_TORCH = """
import torch
from upskills.verify import fingerprint as fp
for dtype in (torch.float32, torch.float16, torch.float64, torch.int64, torch.int32):
    for n in (1, 1000, 3 * fp.FUSED_BLOCK + 17):
        x = (torch.randn(n, dtype=torch.float64) * 10).to(dtype)
        fused = fp._projections_fused(x, fp.salt(12345, 3, 1))
        plain = fp._projections_torch(x, fp.salt(12345, 3, 1))
        size = float(x.double().abs().sum())
        assert float((fused - plain).abs().max()) <= fp.ROUNDING * size + 1e-12, (dtype, n)
print("same sums")
"""


def test_the_fused_kernel_gives_the_pytorch_ops_sums():
    """The GPU path (one Triton kernel) against the PyTorch ops, in Triton's interpreter."""
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, "-c", FUSED_VS_TORCH], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0 and "same sums" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_on_the_gpu_the_fused_kernel_gives_the_pytorch_ops_sums_faster(dtype):
    """On the GPU, bf16 included: the same sums up to rounding, in less time (``-s`` prints
    both)."""
    from upskills.verify import fingerprint as fp

    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    x = torch.randn((1 << 26) + 17, device="cuda").to(dtype)  # 256 MiB of float32
    salt = fp.salt(99, 5, 0)
    fused, plain = fp._projections_fused(x, salt), fp._projections_torch(x, salt)
    size = float(x.double().abs().sum())
    assert float((fused - plain).abs().max()) <= fp.ROUNDING * size + 1e-12

    def per_call_ms(fn) -> float:  # noqa: ANN001
        fn(x)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn(x)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 5

    fused_ms = per_call_ms(lambda t: fp._projections_fused(t, salt))
    torch_ms = per_call_ms(lambda t: fp._projections_torch(t, salt))
    print(f"fingerprint of {x.numel()} {dtype}: fused {fused_ms:.3f} ms, PyTorch {torch_ms:.3f} ms")
    assert fused_ms < torch_ms


def _judge() -> object:
    from types import SimpleNamespace

    return SimpleNamespace(
        job=SimpleNamespace(display="candidate.py"),
        task=SimpleNamespace(atol=None, rtol=None),
        matmul=False,
    )


@pytest.mark.parametrize("skipped", [0, 1, 2])
def test_verify_drawn_passes_computed_calls_and_fails_skipped_ones(skipped):
    """The judge's side (judge_timing.verify_drawn): 32 calls, 8 drawn after the fact. Every
    call computed passes; every other call, or all but the first, left stale fails."""
    from upskills.verify.judge_timing import verify_drawn
    from upskills.verify.worker import StageFailure

    gen = torch.Generator().manual_seed(3)
    x = torch.randn(1 << 14, generator=gen)
    refs = []
    for call in range(32):
        now = x.clone()
        perturb_inputs([now], seed=call)
        refs.append([now * 2])
    prints = []
    for call, ref in enumerate(refs):
        stale = (skipped == 1 and call % 2 == 1) or (skipped == 2 and call > 0)
        out = refs[0][0] if stale else ref[0] + 1e-6 * torch.randn(ref[0].shape, generator=gen)
        prints.append(fingerprints([out], 11, call).tolist())
    run = lambda: verify_drawn(_judge(), prints, 32, 8, lambda i: refs[i], 11, "call")  # noqa: E731
    if not skipped:
        run()
        return
    with pytest.raises(StageFailure, match="drawn after the run") as info:
        run()
    assert info.value.guard == "timed_result"


def test_verify_drawn_fails_a_missing_or_short_fingerprint():
    from upskills.verify.judge_timing import verify_drawn
    from upskills.verify.worker import StageFailure

    ref = [torch.randn(100)]
    prints = [fingerprints(ref, 1, i).tolist() for i in range(4)]
    with pytest.raises(StageFailure, match="3 fingerprints came back for 4 calls"):
        verify_drawn(_judge(), prints[:3], 4, 4, lambda i: ref, 1, "call")
    prints[2] = prints[2][:3]
    with pytest.raises(StageFailure, match="returned 0 outputs' fingerprints"):
        verify_drawn(_judge(), prints, 4, 4, lambda i: ref, 1, "call")
