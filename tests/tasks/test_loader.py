"""Loading task files and folders: KernelBench format, sidecars, suites, and clear errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from tests.tasks.kernelbench_files import LEVEL1, SOFTMAX, write_level1
from tests.tasks.reference_run import run
from upskills.tasks import (
    ShapeVariant,
    TaskError,
    infer_tags,
    load_file,
    load_folder,
    load_task,
)


def test_kernelbench_folder_loads_in_numeric_order(tmp_path):
    folder = write_level1(tmp_path / "level1")
    tasks = load_folder(folder)
    assert [t.name for t in tasks] == [
        "1_Square_matrix_multiplication_",
        "2_Standard_matrix_multiplication_",
        "10_3D_tensor_matrix_multiplication",
        "23_Softmax",
        "47_Sum_reduction_over_a_dimension",
    ]
    by_name = {t.name: t for t in tasks}
    for task in tasks:
        assert [v.name for v in task.all_variants()] == ["default"]
        assert task.main_variant().globals == {}
        assert task.dtypes == ["float32"]
        assert task.source == LEVEL1[task.name + ".py"]  # loaded unchanged
        assert task.origin == str(folder / f"{task.name}.py")
    assert by_name["1_Square_matrix_multiplication_"].tags == ["gemm"]
    assert by_name["23_Softmax"].tags == ["softmax"]
    assert by_name["47_Sum_reduction_over_a_dimension"].tags == ["reduction"]
    assert by_name["23_Softmax"].statement == "Softmax (float32)"
    assert by_name["1_Square_matrix_multiplication_"].statement == (
        "Square matrix multiplication (float32)"
    )


def test_kernelbench_file_runs_with_rebound_globals(tmp_path):
    folder = write_level1(tmp_path)
    task = load_file(folder / "47_Sum_reduction_over_a_dimension.py")
    small = ShapeVariant(name="small", globals={"batch_size": 3, "dim1": 5, "dim2": 7})
    out, (x,), _ = run(task, small, seed=0)
    assert out.shape == (3, 1, 7)
    assert torch.allclose(out, x.sum(dim=1, keepdim=True))


@pytest.mark.parametrize(
    ("stem", "tags"),
    [
        ("4_Matrix_vector_multiplication_", ["gemm"]),
        ("5_Matrix_scalar_multiplication", ["elementwise"]),
        ("18_Matmul_with_transposed_both", ["gemm"]),
        ("19_ReLU", ["elementwise"]),
        ("24_LogSoftmax", ["softmax"]),
        ("36_RMSNorm_", ["norm"]),
        ("41_Max_Pooling_1D", []),
        ("49_Max_reduction_over_a_dimension", ["reduction"]),
        ("51_Argmax_over_a_dimension", ["reduction"]),
        ("63_conv_standard_2D__square_input__square_kernel", ["conv"]),
        ("89_cumsum", ["scan"]),
        ("95_CrossEntropyLoss", ["reduction", "loss"]),
    ],
)
def test_tags_inferred_from_file_names(stem, tags):
    assert infer_tags(stem) == tags


def test_statement_from_module_docstring_and_dtypes_from_source(tmp_path):
    path = tmp_path / "my_softmax.py"
    path.write_text('"""Row softmax of a half-precision matrix.\n\nMore text."""\n' + SOFTMAX)
    assert load_file(path).statement == "Row softmax of a half-precision matrix."
    half = SOFTMAX.replace(
        "torch.randn(batch_size, dim)", "torch.randn(batch_size, dim, dtype=torch.float16)"
    )
    path.write_text(half)
    assert load_file(path).dtypes == ["float16"]
    ints = SOFTMAX.replace("return [x]", "return [x, torch.randint(0, 9, (3,), dtype=torch.int64)]")
    path.write_text(ints)
    assert load_file(path).dtypes == ["float32", "int64"]


def test_sidecar_gives_metadata_and_variants(tmp_path):
    path = tmp_path / "23_Softmax.py"
    path.write_text(SOFTMAX)
    (tmp_path / "23_Softmax.yaml").write_text(
        textwrap.dedent(
            """\
            statement: Softmax over rows of a float32 matrix.
            tags: [softmax]
            atol: 1.0e-4
            variants:
              - {name: main, main: true, cpu: false}
              - {name: ragged, ragged: true, globals: {batch_size: 67, dim: 1003}}
            """
        )
    )
    task = load_task(str(path))
    assert task.statement == "Softmax over rows of a float32 matrix."
    assert task.atol == 1e-4
    assert [v.name for v in task.variants] == ["main", "ragged"]
    out, _, _ = run(task, task.variants[1], seed=0)
    assert out.shape == (67, 1003)
    assert torch.allclose(out.sum(dim=1), torch.ones(67))


@pytest.mark.parametrize(
    ("sidecar", "expected"),
    [
        ("statment: typo\n", "unknown key 'statment'"),
        ("tags: [softmax, magic]\n", "unknown tag 'magic'"),
        ("dtypes: [float17]\n", "unknown dtype 'float17'"),
        ("variants:\n  - {name: a}\n  - {name: b}\n", "no main variant"),
        ("variants:\n  - {name: a, main: true}\n  - {name: a}\n", "duplicate variant names: a"),
        ("variants:\n  - {name: a, main: true, globals: {dimm: 3}}\n", "re-binds dimm"),
        ("variants:\n  - {name: a, main: true, sizes: {dim: 3}}\n", "unknown key 'sizes'"),
        ("tags: [softmax\n", "invalid YAML"),
    ],
)
def test_bad_sidecar_names_file_and_problem(tmp_path, sidecar, expected):
    path = tmp_path / "23_Softmax.py"
    path.write_text(SOFTMAX)
    (tmp_path / "23_Softmax.yaml").write_text(sidecar)
    with pytest.raises(TaskError, match="23_Softmax") as info:
        load_file(path)
    assert expected in str(info.value)


def test_sidecar_error_gives_the_yaml_line(tmp_path):
    path = tmp_path / "t.py"
    path.write_text(SOFTMAX)
    (tmp_path / "t.yaml").write_text(
        "statement: ok\ntags: [softmax]\nvariants:\n  - {name: a, main: true, colour: red}\n"
    )
    with pytest.raises(TaskError) as info:
        load_file(path)
    assert info.value.line == 4
    assert str(info.value).startswith(f"{tmp_path / 't.yaml'}:4: field variants.0.colour")


MALFORMED = {
    "syntax": ("import torch\nclass Model(nn.Module:\n    pass\n", "syntax error", 2),
    "no_model": (SOFTMAX.replace("class Model(", "class Net("), "no top-level `class Model", None),
    "no_inputs": (SOFTMAX.replace("def get_inputs", "def make_inputs"), "get_inputs", None),
    "no_init": (SOFTMAX.replace("def get_init_inputs", "def init_inputs"), "get_init_inputs", None),
    "no_forward": (SOFTMAX.replace("def forward", "def run"), "no `forward`", 4),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_file_raises_task_error_naming_it(tmp_path, kind):
    source, expected, line = MALFORMED[kind]
    path = tmp_path / f"7_{kind}.py"
    path.write_text(source)
    with pytest.raises(TaskError) as info:
        load_task(path)
    assert info.value.path == str(path)
    assert str(info.value).startswith(str(path))
    assert expected in str(info.value)
    assert info.value.line == line


def test_loader_never_executes_the_file(tmp_path):
    marker = tmp_path / "executed"
    path = tmp_path / "1_Evil.py"
    path.write_text(f"open({str(marker)!r}, 'w').write('x')\n" + SOFTMAX)
    task = load_task(path)
    assert task.name == "1_Evil"
    assert not marker.exists()


def test_folder_lists_every_malformed_file(tmp_path):
    write_level1(tmp_path)
    (tmp_path / "3_bad.py").write_text("def oops(:\n")
    (tmp_path / "4_worse.py").write_text("x = 1\n")
    with pytest.raises(TaskError) as info:
        load_folder(tmp_path)
    message = str(info.value)
    assert "2 malformed task files" in message
    assert "3_bad.py:1: syntax error" in message
    assert "4_worse.py: no top-level `class Model" in message


def test_folder_errors(tmp_path):
    with pytest.raises(TaskError, match="not a folder"):
        load_folder(tmp_path / "missing")
    with pytest.raises(TaskError, match=r"no \*\.py task files"):
        load_folder(tmp_path)


def test_load_task_unknown_name_suggests_close_ones(tmp_path):
    with pytest.raises(TaskError, match="Did you mean: softmax_rows"):
        load_task("softmax_row")
    with pytest.raises(TaskError, match="no such task file"):
        load_task(tmp_path / "absent.py")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(TaskError, match=r"must be a Python \(\.py\) file"):
        load_task(tmp_path / "notes.txt")


def test_hash_follows_source_and_variants(tmp_path):
    path = tmp_path / "23_Softmax.py"
    path.write_text(SOFTMAX)
    plain = load_file(path)
    assert plain.hash == load_file(path).hash
    (tmp_path / "23_Softmax.yaml").write_text(
        "variants:\n  - {name: main, main: true, globals: {dim: 4096}}\n"
    )
    assert load_file(path).hash != plain.hash


def test_importing_tasks_does_not_import_torch():
    code = (
        "import sys, upskills.tasks as t; t.builtin_tasks(); "
        "print(sorted(m for m in ('torch', 'triton', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
