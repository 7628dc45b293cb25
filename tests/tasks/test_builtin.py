"""The built-in suite: names, metadata, variants, and the references run on CPU."""

from __future__ import annotations

import ast
import math

import pytest
import torch

from tests.tasks.reference_run import build, run
from upskills.tasks import CATEGORIES, builtin_names, builtin_tasks, load_task
from upskills.tasks.loader import BUILTIN_DIR
from upskills.tasks.source import inspect_source

INTERFACE_NAMES = [
    "vector_add", "relu", "bias_gelu_fp16", "silu_and_mul", "leaky_relu_scale", "row_sum",
    "row_sum_fp16", "row_max", "row_argmax", "col_sum", "softmax_rows", "softmax_rows_fp16",
    "log_softmax_rows", "layernorm", "rmsnorm_fp16", "l2_normalize_rows", "transpose_2d",
    "permute_0213", "copy_contiguous", "cast_fp32_to_bf16", "cast_fp32_to_fp16", "gemm_fp16",
    "gemm_bf16", "batched_matmul", "gemm_bias_relu", "causal_attention", "conv1d_depthwise",
    "conv2d_3x3", "cross_entropy", "cumsum_rows", "histogram", "scatter_add_rows",
    "embedding_gather",
]  # fmt: skip
"""The names fixed in docs/design/interfaces.md."""

TASKS = {t.name: t for t in builtin_tasks()}
CPU_CASES = [
    (name, v.name) for name, t in TASKS.items() for v in t.all_variants() if v.cpu
]  # fmt: skip
COMPUTE_BOUND = {"gemm", "attention", "conv"}
TORCH_DTYPE_NAMES = {
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
    torch.int64: "int64",
}  # fmt: skip


def _variant(task_name: str, variant_name: str):
    return next(v for v in TASKS[task_name].all_variants() if v.name == variant_name)


def test_names_match_the_interface_table():
    assert builtin_names() == INTERFACE_NAMES
    assert list(TASKS) == INTERFACE_NAMES


@pytest.mark.parametrize("name", INTERFACE_NAMES)
def test_metadata_and_variants(name):
    task = TASKS[name]
    assert task.origin == "builtin"
    assert task.tags and set(task.tags) <= set(CATEGORIES)
    assert "\n" not in task.statement
    assert any(d in task.statement for d in task.dtypes), "the statement must name a dtype"
    variants = task.all_variants()
    mains = [v for v in variants if v.main]
    assert len(mains) == 1 and not mains[0].cpu, "one main variant, too big for the interpreter"
    assert any(v.cpu and not v.ragged for v in variants)
    ragged = [v for v in variants if v.ragged and v.cpu]
    assert ragged
    for v in ragged:
        sizes = [x for x in v.globals.values() if isinstance(x, int) and x > 16]
        assert any(x % 16 for x in sizes), f"{v.name}: no size off a multiple of 16"
    for v in variants:
        if v.cpu and "gemm" in task.tags:
            assert max(x for x in v.globals.values() if isinstance(x, int)) <= 96


@pytest.mark.parametrize("name", INTERFACE_NAMES)
def test_main_variant_is_the_files_own_shape(name):
    task = TASKS[name]
    defaults = inspect_source(task.source, name).globals
    for key, value in task.main_variant().globals.items():
        assert defaults[key] == value, f"main re-binds {key} to {value}, file says {defaults[key]}"


@pytest.mark.parametrize("name", INTERFACE_NAMES)
def test_inputs_take_no_device_argument(name):
    tree = ast.parse(TASKS[name].source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            assert all(k.arg != "device" for k in node.keywords), "device= in a task file"
            func = node.func
            if isinstance(func, ast.Attribute):
                assert func.attr not in {"cuda", "cpu"}
                if func.attr == "to":  # a dtype cast is fine, a device move is not
                    assert not any(isinstance(a, ast.Constant) for a in node.args)


def test_load_task_by_name_and_by_builtin_path_agree():
    by_name = load_task("softmax_rows")
    by_path = load_task(BUILTIN_DIR / "softmax_rows.py")
    assert by_name.variants == by_path.variants
    assert by_name.source == by_path.source


def _nonzero_output(out: torch.Tensor) -> None:
    values = out.double()
    assert torch.isfinite(values).all()
    assert values.abs().max().item() > 1e-3, "output is ~0"
    assert (values != 0).double().mean().item() > 0.25, "output is mostly zeros"


@pytest.mark.parametrize(("name", "variant"), CPU_CASES)
def test_reference_runs_on_cpu(name, variant):
    task = TASKS[name]
    v = _variant(name, variant)
    out0, inputs, model = run(task, v, seed=0)
    snapshot = [x.clone() for x in inputs]
    out0_again, _, _ = run(task, v, seed=0)
    out1, _, _ = run(task, v, seed=1)
    _nonzero_output(out0)
    assert torch.equal(out0, out0_again), "the reference is not deterministic given the seed"
    assert not torch.equal(out0, out1), "two seeds give the same output"
    # Inputs stay small enough for the Triton interpreter, and forward does not mutate them.
    assert sum(x.numel() for x in inputs) <= 250_000
    model(*inputs)
    assert all(torch.equal(a, b) for a, b in zip(inputs, snapshot, strict=True))
    # The declared dtypes are the ones the kernel reads and writes.
    tensors = [*inputs, *model.parameters(), out0]
    seen = {TORCH_DTYPE_NAMES[t.dtype] for t in tensors}
    assert seen == set(task.dtypes)


@pytest.mark.parametrize("name", INTERFACE_NAMES)
def test_main_variant_moves_hundreds_of_megabytes(name):
    task = TASKS[name]
    model, inputs = build(task, task.main_variant(), seed=0, device="meta")
    nbytes = sum(x.numel() * x.element_size() for x in [*inputs, *model.parameters()])
    if name != "histogram":  # bincount's output size depends on the data: no meta kernel
        with torch.no_grad():
            out = model(*inputs)
        nbytes += out.numel() * out.element_size()
    if COMPUTE_BOUND & set(task.tags):
        assert nbytes >= 30e6
    else:
        assert nbytes >= 200e6, f"main moves only {nbytes / 1e6:.0f} MB"


@pytest.mark.parametrize("name", ["gemm_fp16", "gemm_bf16", "gemm_bias_relu", "batched_matmul"])
def test_gemm_main_shapes_are_large(name):
    sizes = TASKS[name].main_variant().globals
    assert min(sizes[k] for k in "MNK") >= 2048
    flops = 2 * math.prod(sizes[k] for k in "MNK") * sizes.get("B", 1)
    assert flops >= 1e11


def test_row_sum_fp16_needs_fp32_accumulation():
    task = TASKS["row_sum_fp16"]
    _, (x,), _ = run(task, _variant("row_sum_fp16", "small"), seed=0)
    exact = x.double().sum(dim=-1)
    naive = torch.zeros(x.shape[0], dtype=torch.float16)
    for j in range(x.shape[1]):
        naive += x[:, j]
    reference = x.sum(dim=-1).double()
    assert (reference - exact).abs().max() <= 0.5
    assert (naive.double() - exact).abs().max() > 2.0, "fp16 accumulation should visibly fail"


def test_attention_is_not_one_hot():
    task = TASKS["causal_attention"]
    _, (q, k, _), _ = run(task, _variant("causal_attention", "ragged"), seed=0)
    scores = (q.float() @ k.float().transpose(-1, -2)) / 8.0
    causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
    probs = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
    assert probs[..., 16:, :].max(dim=-1).values.mean() < 0.5


def test_cross_entropy_targets_and_histogram_values_in_range():
    _, (logits, target), _ = run(TASKS["cross_entropy"], _variant("cross_entropy", "ragged"), 0)
    assert 0 <= target.min() and target.max() < logits.shape[1]
    out, (x,), model = run(TASKS["histogram"], _variant("histogram", "ragged"), 0)
    assert 0 <= x.min() and x.max() < model.num_bins
    assert out.shape == (model.num_bins,) and out.sum() == x.numel()
    out, (src, idx), model = run(
        TASKS["scatter_add_rows"], _variant("scatter_add_rows", "ragged"), 0
    )
    assert 0 <= idx.min() and idx.max() < model.n_out
    assert torch.allclose(out.sum(dim=0), src.sum(dim=0), atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("name", INTERFACE_NAMES)
def test_gpu_variants_run_on_cuda(name):
    task = TASKS[name]
    for v in task.all_variants():
        if v.cpu:
            continue
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        out, inputs, _ = run(task, v, seed=0, device="cuda")
        assert all(x.device.type == "cuda" for x in inputs)
        assert out.device.type == "cuda"
        _nonzero_output(out)
        assert torch.cuda.max_memory_allocated() < 16 * 2**30
        del out, inputs


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "variant"), CPU_CASES)
def test_cpu_and_cuda_references_agree(name, variant, monkeypatch):
    # TF32 convolutions would make the CUDA reference itself ~1e-3 off; compare exact math.
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    model, inputs = build(TASKS[name], _variant(name, variant), seed=0, device="cpu")
    with torch.no_grad():
        expected = model(*inputs)
        got = model.to("cuda")(*[x.to("cuda") for x in inputs]).cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if not expected.is_floating_point():
        assert torch.equal(got, expected)
        return
    rtol = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}[expected.dtype]
    atol = rtol * max(1.0, expected.abs().max().item())
    torch.testing.assert_close(got, expected, atol=atol, rtol=rtol)


def test_verifier_runtime_builds_every_cpu_variant():
    from upskills.tasks import runtime

    for name, variant in CPU_CASES:
        outputs = []
        for seed in (0, 1):
            model, inputs, _ = runtime.build(TASKS[name], variant, "cpu", seed)
            with torch.no_grad():
                outputs.append(model(*inputs))
        _nonzero_output(outputs[0])
        assert not torch.equal(outputs[0], outputs[1]), name
