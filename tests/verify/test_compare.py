"""Output comparison: tolerances scale with magnitude; zeros, NaNs, ints, shapes are caught."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from upskills.verify.compare import compare_outputs, compare_tensors, is_matmul_class  # noqa: E402
from upskills.verify.verdict import ErrorClass  # noqa: E402


def test_identical_outputs_pass_with_zero_error():
    x = torch.randn(10, 20)
    res = compare_outputs(x, x.clone())
    assert res.passed and res.max_abs_err == 0.0 and res.max_rel_err == 0.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scale", [1e-4, 1e-2, 1.0, 1e3])
def test_all_zeros_output_fails_any_nonzero_reference(dtype, scale):
    ref = (torch.softmax(torch.randn(67, 1003), dim=-1) * scale).to(dtype)
    res = compare_outputs(ref, torch.zeros_like(ref))
    assert not res.passed
    assert res.error_class == ErrorClass.MISMATCH


def test_rounding_noise_passes_and_real_error_fails():
    ref = torch.randn(256, 256) * 100
    noisy = ref * (1 + 1e-5 * torch.randn_like(ref))
    assert compare_outputs(ref, noisy).passed
    wrong = ref.clone()
    wrong[3, 7] += 5.0
    res = compare_outputs(ref, wrong)
    assert not res.passed and "[3, 7]" in res.message
    assert res.max_abs_err == pytest.approx(5.0, rel=1e-3)


def test_fp16_tolerance_is_looser_than_fp32():
    ref = torch.randn(1000)
    off = ref + 5e-3
    assert not compare_outputs(ref, off).passed
    assert compare_outputs(ref.half(), off.half()).passed


def test_integer_outputs_must_match_exactly():
    ref = torch.arange(100)
    out = ref.clone()
    out[42] += 1
    res = compare_outputs(ref, out)
    assert not res.passed and res.error_class == ErrorClass.MISMATCH
    assert "[42]" in res.message and "exact" in res.message


def test_nan_positions_must_match():
    ref = torch.tensor([1.0, float("nan"), 3.0])
    assert compare_outputs(ref, ref.clone()).passed
    res = compare_outputs(ref, torch.tensor([1.0, 2.0, 3.0]))
    assert not res.passed and res.error_class == ErrorClass.NAN
    res = compare_outputs(torch.tensor([1.0, 2.0]), torch.tensor([1.0, float("nan")]))
    assert res.error_class == ErrorClass.NAN


def test_inf_sign_must_match():
    ref = torch.tensor([float("inf"), 1.0])
    assert compare_outputs(ref, ref.clone()).passed
    res = compare_outputs(ref, torch.tensor([float("-inf"), 1.0]))
    assert res.error_class == ErrorClass.NAN


def test_shape_dtype_and_structure_errors():
    ref = torch.randn(4, 5)
    assert compare_outputs(ref, torch.randn(5, 4)).error_class == ErrorClass.SHAPE
    assert compare_outputs(ref, ref.double()).error_class == ErrorClass.DTYPE
    assert compare_outputs(ref, [ref]).error_class == ErrorClass.SHAPE
    assert compare_outputs((ref, ref), (ref,)).error_class == ErrorClass.SHAPE
    bad_second = compare_outputs((ref, ref), (ref, ref + 1))
    assert not bad_second.passed and "output[1]" in bad_second.message


def test_strides_do_not_matter():
    ref = torch.randn(30, 40)
    out = ref.t().contiguous().t()  # same values, column-major
    assert out.stride() != ref.stride()
    assert compare_outputs(ref, out).passed


def test_task_tolerance_override_is_used():
    ref = torch.randn(100)
    off = ref + 0.05
    assert not compare_outputs(ref, off).passed
    assert compare_outputs(ref, off, atol=0.1, rtol=0.0).passed


def test_python_number_outputs():
    assert compare_outputs(2.0, torch.tensor(2.0)).passed
    assert not compare_outputs(2.0, 2.5).passed


def test_fp32_small_outputs_are_judged_relative_to_their_scale():
    # softmax-like output: values ~1e-3; a 1% error must fail, float32 rounding must pass
    torch.manual_seed(0)
    ref = torch.softmax(torch.randn(64, 1000), dim=-1)
    assert compare_tensors(ref, ref * (1 + 1e-6)).passed
    off = ref.clone()
    off[:, :10] *= 1.05
    res = compare_tensors(ref, off)
    assert not res.passed and res.error_class == ErrorClass.MISMATCH


def test_tf32_level_error_is_allowed_only_for_matmul_class_tasks():
    torch.manual_seed(0)
    a, b = torch.randn(64, 256), torch.randn(256, 64)
    ref = a @ b

    # emulate TF32 products: operands rounded to a 10-bit mantissa
    def tf32(x):
        return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)

    approx = tf32(a) @ tf32(b)
    assert not compare_tensors(ref, approx).passed
    assert compare_tensors(ref, approx, matmul=True).passed
    assert is_matmul_class(["gemm"]) and is_matmul_class([]) and not is_matmul_class(["softmax"])


def test_a_comparison_in_slices_finds_what_the_whole_one_does(monkeypatch):
    """GiB-scale outputs are compared slice by slice; the verdict and its numbers don't change."""
    import torch

    from upskills.verify import compare

    g = torch.Generator().manual_seed(3)
    ref = torch.randn(37, 53, generator=g)
    near = ref + 1e-7 * torch.randn(37, 53, generator=g)
    off = near.clone()
    off[20, 7] += 0.5
    off[30, 1] += 0.25
    holed = near.clone()
    holed[11, 40] = float("nan")
    whole = [compare.compare_tensors(ref, x) for x in (near, off, holed)]
    monkeypatch.setattr(compare, "CHUNK", 100)
    sliced = [compare.compare_tensors(ref, x) for x in (near, off, holed)]
    assert [w.passed for w in whole] == [s.passed for s in sliced] == [True, False, False]
    assert sliced[1].message == whole[1].message and "[20, 7]" in sliced[1].message
    assert "2 of 1961 elements" in sliced[1].message
    assert sliced[2].error_class == whole[2].error_class and "[11, 40]" in sliced[2].message
    assert abs((sliced[0].max_abs_err or 0) - (whole[0].max_abs_err or 0)) == 0
