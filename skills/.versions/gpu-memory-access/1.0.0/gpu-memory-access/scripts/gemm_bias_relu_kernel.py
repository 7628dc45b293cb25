# Verified kernel for task `gemm_bias_relu` (task hash 6b871ef6f2675799), from trace 73204668080a462a90dcb3c98c5f8cc4.
# Check it: upskills check gemm_bias_relu scripts/gemm_bias_relu_kernel.py
"""Linear + ReLU in fp16: grouped tile order, 128x128 / 128x256 tiles, 3-4 stages, autotuned on
the GPU (one fixed config in the interpreter); bias + ReLU fused into the fp32 epilogue.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_relu_grouped(
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
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_xm = tl.where(offs_m < M, offs_m, 0)
    offs_wn = tl.where(offs_n < N, offs_n, 0)
    offs_xm = tl.max_contiguous(tl.multiple_of(offs_xm, BLOCK_M), BLOCK_M)
    offs_wn = tl.max_contiguous(tl.multiple_of(offs_wn, BLOCK_N), BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_xm[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_wn[:, None] * stride_wn + offs_k[None, :] * stride_wk
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kt in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kt * BLOCK_K
        x = tl.load(x_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        w = tl.load(w_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        acc = tl.dot(x, tl.trans(w), acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    y = tl.maximum(acc + bias[None, :], 0.0)
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


_CONFIGS = [
    triton.Config(
        {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8
    ),
    triton.Config(
        {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8
    ),
    triton.Config(
        {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8
    ),
    triton.Config(
        {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4
    ),
    triton.Config(
        {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4
    ),
    triton.Config(
        {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4
    ),
]
_linear_relu_tuned = triton.autotune(configs=_CONFIGS, key=["M", "N", "K"])(_linear_relu_grouped)


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter((torch.randn(n, k) / k**0.5).to(torch.float16))
        self.bias = nn.Parameter((0.5 * torch.randn(n)).to(torch.float16))

    def forward(self, x):
        m, k = x.shape
        n = self.weight.shape[0]
        w = self.weight
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        args = (
            x,
            w,
            self.bias,
            out,
            m,
            n,
            k,
            x.stride(0),
            x.stride(1),
            w.stride(0),
            w.stride(1),
            out.stride(0),
            out.stride(1),
        )
        if x.is_cuda:

            def grid(meta):
                return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

            _linear_relu_tuned[grid](*args)
        else:
            grid = (triton.cdiv(m, 128) * triton.cdiv(n, 128),)
            _linear_relu_grouped[grid](*args, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8)
        return out
