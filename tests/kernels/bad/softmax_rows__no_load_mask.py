"""BAD: the one-pass row load has no mask, so a ragged row reads into the next row.

For N=1003 with BLOCK=1024, each row's max and denominator include 21 values of the next
row, so every output is ~2% too small (relative L2 error ~0.021 against a 0.01 bound), and
the last row reads 84 bytes past the end of the tensor.

CPU (observed): the verifier's interpreter bounds check stops the out-of-bounds load of the
last row: ``runtime``. CUDA: the read lands in allocator slack, so the ~2% error gives a
``mismatch``; ``nan`` if that memory holds Inf/NaN, ``crash`` if it is unmapped.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "runtime"
EXPECTED_ERROR_CUDA = ("mismatch", "nan", "crash")


@triton.jit
def _softmax_kernel(
    x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_row
    o_row = out_ptr + row * stride_row
    cols = tl.arange(0, BLOCK)
    if ONE_PASS:
        mask = cols < n_cols
        x = tl.load(x_row + cols).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(o_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        # Online pass: per-lane running max and rescaled running sum.
        # A finite floor instead of -inf keeps (m - m_new) free of inf - inf.
        m = tl.full([BLOCK], -1e30, tl.float32)
        s = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            scale = tl.exp(m - m_new)
            s = s * scale + tl.where(mask, tl.exp(x - m_new), 0.0)
            m = m_new
        row_max = tl.max(m, axis=0)
        total = tl.sum(s * tl.exp(m - row_max), axis=0)
        inv = 1.0 / total
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
            y = tl.exp(x - row_max) * inv
            tl.store(o_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        out = torch.empty_like(x2)
        full = triton.next_power_of_2(n_cols)
        one_pass = full <= 8192
        block = full if one_pass else 4096
        warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
        _softmax_kernel[(x2.shape[0],)](
            x2, out, n_cols, x2.stride(0), BLOCK=block, ONE_PASS=one_pass, num_warps=warps
        )
        return out.reshape(x.shape)
