from __future__ import annotations

import pytest

from upskills.distill.changes import change_key, fix_patterns, launch_signature

GEMM_K = '''"""GEMM: K loop."""
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for kt in range(0, K // BK):
        rk = kt * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rk[None, :] < K, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=rk[:, None] < K, other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
'''

SCAN = """import triton
import triton.language as tl


@triton.jit
def scan(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, tl.cumsum(x, axis=0) + carry, mask=cols < n_cols)
        carry = tl.sum(x, axis=0)
"""

ARGMAX = """import triton
import triton.language as tl


@triton.jit
def amax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    best = -float("inf")
    best_idx = 0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        idx = tl.argmax(x, axis=0)
        take = tl.max(x, axis=0) > best
        best_idx = tl.where(take, idx, best_idx)
        best = tl.where(take, tl.max(x, axis=0), best)
    tl.store(out_ptr + row, best_idx)
"""

NORM = """import triton
import triton.language as tl


@triton.jit
def norm(x_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(x, axis=0) / BLOCK_N
    tl.store(out_ptr + row * n_cols + cols, x - mean, mask=cols < n_cols)
"""

CASES = [
    ("loop_bound_cdiv", GEMM_K, GEMM_K.replace("range(0, K // BK)", "range(0, tl.cdiv(K, BK))")),
    ("carry_accumulation", SCAN, SCAN.replace("carry = tl.sum", "carry += tl.sum")),
    (
        "chunk_offset_index",
        ARGMAX,
        ARGMAX.replace("idx = tl.argmax(x, axis=0)", "idx = tl.argmax(x, axis=0) + start"),
    ),
    ("true_length_divisor", NORM, NORM.replace("/ BLOCK_N", "/ n_cols")),
]


@pytest.mark.parametrize(("pattern", "before", "after"), CASES, ids=[c[0] for c in CASES])
def test_each_repair_is_recognised_and_only_that_one(pattern, before, after):
    assert after != before
    assert fix_patterns(before, after) == [pattern]
    assert fix_patterns(after, before) == []  # the reverse change is not the repair


def test_look_alike_changes_are_not_repairs():
    # the added term is not the loop variable: not a chunk offset
    other = ARGMAX.replace("idx = tl.argmax(x, axis=0)", "idx = tl.argmax(x, axis=0) + row")
    assert fix_patterns(ARGMAX, other) == []
    # += of a different value than the overwritten one: not the carry repair
    other = SCAN.replace("carry = tl.sum(x, axis=0)", "carry += tl.max(x, axis=0)")
    assert fix_patterns(SCAN, other) == []
    # dividing by another constexpr is no fix either
    two = NORM.replace("BLOCK_N: tl.constexpr", "BLOCK_N: tl.constexpr, HALF: tl.constexpr")
    assert fix_patterns(two, two.replace("/ BLOCK_N", "/ HALF")) == []
    # a docstring edit, or a module that does not parse, gives nothing
    assert fix_patterns(GEMM_K, GEMM_K.replace("K loop.", "the K loop.")) == []
    assert fix_patterns(GEMM_K, "def broken(:\n") == []


def test_change_key_ignores_docstrings_and_comments_but_not_code():
    fixed = SCAN.replace("carry = tl.sum", "carry += tl.sum")
    documented = '"""Scan with a carry."""\n' + fixed.replace(
        "carry += tl.sum", "# accumulate\n        carry += tl.sum"
    )
    assert change_key(SCAN, fixed) == change_key('"""Old doc."""\n' + SCAN, documented)
    other = SCAN.replace("carry = tl.sum(x, axis=0)", "carry = tl.sum(x, axis=0) * 1.0")
    assert change_key(SCAN, fixed) != change_key(SCAN, other)
    assert len(change_key(SCAN, fixed)) == 12


def test_launch_signature_sees_launch_settings_outside_jit_functions_only():
    launcher = GEMM_K + (
        "\n\ndef run(a, b, c, M, N, K):\n"
        "    mm[(triton.cdiv(M, 64), triton.cdiv(N, 64))](a, b, c, M, N, K, 64, 64, 32, "
        "num_warps=4)\n"
    )
    sig = launch_signature(launcher)
    assert "num_warps=4" in sig and "triton.cdiv(M, 64)" in sig
    assert launch_signature(launcher.replace("num_warps=4", "num_warps=8")) != sig
    inside = launcher.replace("range(0, K // BK)", "range(0, tl.cdiv(K, BK))")
    assert launch_signature(inside) == sig  # a cdiv inside the kernel is not a launch setting
