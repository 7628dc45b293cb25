"""BAD: the [N, K] weight is read as if it were already [K, N] (row-major K x N).

The strides passed are (1, K) instead of (K, 1): every product pairs the wrong weights.
All reads stay inside the weight tensor, so the failure is a clean mismatch.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "mismatch"


@triton.jit
def _gemm_bias_relu_kernel(
    x_ptr,
    w_ptr,
    bias_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    first_m = group_id * GROUP_M
    group_size = min(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % group_size
    pid_n = (pid % width) // group_size

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None].to(tl.int64) * stride_xm + rk[None, :] * stride_xk
    # w is [N, K]; the [BLOCK_K, BLOCK_N] tile of w.T is w[rn, rk] read through w's strides.
    w_ptrs = w_ptr + rk[:, None] * stride_wk + rn[None, :].to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0.0)
        w = tl.load(w_ptrs, mask=(rk[:, None] < K - k) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    y = tl.maximum(acc + bias[None, :], 0.0)
    out_ptrs = out_ptr + rm[:, None].to(tl.int64) * stride_om + rn[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter((torch.randn(n, k) / k**0.5).to(torch.float16))
        self.bias = nn.Parameter((0.5 * torch.randn(n)).to(torch.float16))

    def forward(self, x):
        m, k = x.shape
        w = self.weight
        n = w.shape[0]
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        if x.is_cuda:
            bm, bn, bk, warps, stages = 128, 128, 64, 8, 3
        else:
            bm, bn, bk, warps, stages = 64, 64, 32, 4, 1
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        _gemm_bias_relu_kernel[grid](
            x,
            w,
            self.bias,
            out,
            m,
            n,
            k,
            x.stride(0),
            x.stride(1),
            1,
            n,
            out.stride(0),
            out.stride(1),
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=8,
            num_warps=warps,
            num_stages=stages,
        )
        return out
