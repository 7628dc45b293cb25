# Verified kernel for task `causal_attention` (task hash 47d3a4d07fd78a91), from trace 73d34fcec9c540a2bee73fee5dea29aa.
# Check it: upskills check causal_attention scripts/causal_attention_kernel.py
"""Causal attention fp16, D=64: 128-query blocks, unmasked loop over the key blocks below the
diagonal and a masked pass over the diagonal only, exp2 with the scale folded in, heaviest
query blocks launched first; 8 warps, 3 stages.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _attn_block_range(
    acc,
    l_i,
    m_i,
    q,
    k_base,
    v_base,
    sks,
    skd,
    svs,
    svd,
    S,
    offs_m,
    lo,
    hi,
    qk_scale,
    BLOCK_N: tl.constexpr,
    HEAD_D: tl.constexpr,
    MASKED: tl.constexpr,
):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if MASKED:
            k = tl.load(
                k_base + cols[None, :] * sks + offs_d[:, None] * skd,
                mask=cols[None, :] < S,
                other=0.0,
            )
            v = tl.load(
                v_base + cols[:, None] * svs + offs_d[None, :] * svd,
                mask=cols[:, None] < S,
                other=0.0,
            )
        else:
            k = tl.load(k_base + cols[None, :] * sks + offs_d[:, None] * skd)
            v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd)
        s = tl.dot(q, k) * qk_scale
        if MASKED:
            s = tl.where(cols[None, :] <= offs_m[:, None], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _causal_attn(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    H,
    S,
    sqb,
    sqh,
    sqs,
    sqd,
    skb,
    skh,
    sks,
    skd,
    svb,
    svh,
    svs,
    svd,
    qk_scale,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_D: tl.constexpr,
):
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    q = tl.load(
        q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
        mask=offs_m[:, None] < S,
        other=0.0,
    )
    k_base = k_ptr + b * skb + h * skh
    v_base = v_ptr + b * svb + h * svh
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    lo = start_m * BLOCK_M
    # Key blocks entirely below the diagonal: every key is visible and in range, no masks.
    acc, l_i, m_i = _attn_block_range(
        acc,
        l_i,
        m_i,
        q,
        k_base,
        v_base,
        sks,
        skd,
        svs,
        svd,
        S,
        offs_m,
        0,
        lo,
        qk_scale,
        BLOCK_N,
        HEAD_D,
        False,
    )
    # The diagonal: causal mask and the ragged end of the sequence.
    acc, l_i, m_i = _attn_block_range(
        acc,
        l_i,
        m_i,
        q,
        k_base,
        v_base,
        sks,
        skd,
        svs,
        svd,
        S,
        offs_m,
        lo,
        lo + BLOCK_M,
        qk_scale,
        BLOCK_N,
        HEAD_D,
        True,
    )
    out = acc / l_i[:, None]
    o_base = o_ptr + bh.to(tl.int64) * S * HEAD_D
    tl.store(
        o_base + offs_m[:, None] * HEAD_D + offs_d[None, :],
        out.to(tl.float16),
        mask=offs_m[:, None] < S,
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        bsz, heads, seq, dim = q.shape
        out = torch.empty((bsz, heads, seq, dim), dtype=q.dtype, device=q.device)
        block_m, block_n = 128, 64
        grid = (triton.cdiv(seq, block_m), bsz * heads)
        _causal_attn[grid](
            q,
            k,
            v,
            out,
            heads,
            seq,
            *q.stride(),
            *k.stride(),
            *v.stride(),
            dim**-0.5 * 1.4426950408889634,
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            HEAD_D=dim,
            num_warps=8,
            num_stages=3,
        )
        return out
