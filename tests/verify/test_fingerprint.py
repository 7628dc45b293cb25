"""Fingerprints of timed calls' outputs (upskills/verify/fingerprint.py): an output within the
judge's element tolerance always matches its reference's fingerprint, and one that was not
computed for those inputs does not."""

from __future__ import annotations

import pytest
import torch

from upskills.verify.compare import compare_outputs
from upskills.verify.fingerprint import expected, fingerprints, weights


def _matches(out: list[torch.Tensor], ref: list[torch.Tensor], seed: int, **tol) -> bool:
    got = fingerprints(out, seed).tolist()
    want = expected(ref, seed, tol.get("atol"), tol.get("rtol"), False)
    return all(w is None or abs(g - w[0]) <= w[1] for g, w in zip(got, want, strict=True))


def test_weights_are_a_fixed_hash_of_position_in_zero_one():
    w = weights(0, 100_000, 12345, "cpu")
    assert w.dtype == torch.float64 and float(w.min()) >= 0.0 and float(w.max()) < 1.0
    assert 0.45 < float(w.mean()) < 0.55
    assert torch.equal(w[500:600], weights(500, 600, 12345, "cpu"))  # by position, not by call
    assert not torch.equal(w, weights(0, 100_000, 54321, "cpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_an_output_the_element_test_passes_always_matches(dtype):
    """Near the worst an honest kernel may do: every element off by most of its tolerance,
    all one way or at random."""
    gen = torch.Generator().manual_seed(0)
    ref = [torch.randn(3000, generator=gen).to(dtype), torch.rand(7, 11, generator=gen).to(dtype)]
    for trial in range(20):
        worst = []
        for r in ref:
            rf = r.double()
            rms = float(rf.square().mean().sqrt())
            atol = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}[dtype] * rms
            rtol = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}[dtype]
            sign = torch.where(torch.rand(r.shape, generator=gen) < 0.5 + 0.5 * (trial % 2), 1, -1)
            off = rf + 0.6 * sign * (atol + rtol * rf.abs())  # rounding to dtype adds a bit
            worst.append(off.to(dtype))
        assert compare_outputs(ref, worst).passed  # the judge's element test passes them ...
        assert _matches(worst, ref, seed=trial)  # ... and so does the fingerprint


def test_integer_outputs_match_exactly():
    ref = [torch.arange(1000, dtype=torch.int64) % 17]
    assert _matches([ref[0].clone()], ref, seed=3)
    bumped = ref[0].clone()
    bumped[999] += 1
    assert not _matches([bumped], ref, seed=3)


def test_outputs_not_computed_for_these_inputs_do_not_match():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1 << 16, generator=gen)
    ref = [x * 2.0]
    stale = [(x * 0.9) * 2.0]  # the same set under another call's perturbation
    partial = ref[0].clone()
    partial[1024:] = 0.0  # one block computed, the rest left as garbage
    for out in (stale, [partial], [torch.zeros_like(ref[0])], [torch.full_like(ref[0], torch.nan)]):
        assert not _matches(out, ref, seed=7)


def test_a_reference_with_nonfinite_elements_is_not_judged():
    ref = [torch.tensor([1.0, float("inf"), 2.0])]
    assert expected(ref, 1, None, None, False) == [None]
