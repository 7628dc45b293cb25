"""BAD: the weight's strides are passed in the wrong order (column-major addressing).

Row ids * 1 + d * D instead of ids * D + d: every gathered row is wrong, yet all reads stay
inside the table (max offset (V - 1) + (D - 1) * D < V * D), so it fails as a mismatch.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "mismatch"


@triton.jit
def _embedding_kernel(
    ids_ptr,
    w_ptr,
    out_ptr,
    n_tokens,
    dim,
    stride_w,
    stride_d,
    BLOCK_T: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    t_ok = rt < n_tokens
    ids = tl.load(ids_ptr + rt, mask=t_ok, other=0).to(tl.int64)
    mask = t_ok[:, None] & (rd[None, :] < dim)
    rows = tl.load(w_ptr + ids[:, None] * stride_w + rd[None, :] * stride_d, mask=mask, other=0.0)
    tl.store(out_ptr + rt[:, None].to(tl.int64) * dim + rd[None, :], rows, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab, dim).to(torch.float16))

    def forward(self, ids):
        flat = ids.reshape(-1).contiguous()
        w = self.weight.contiguous()
        dim = w.shape[1]
        out = torch.empty((flat.numel(), dim), dtype=w.dtype, device=w.device)
        block_d = min(triton.next_power_of_2(dim), 512)
        block_t = max(1, 4096 // block_d)
        grid = (triton.cdiv(flat.numel(), block_t), triton.cdiv(dim, block_d))
        _embedding_kernel[grid](
            flat,
            w,
            out,
            flat.numel(),
            dim,
            w.stride(1),
            w.stride(0),
            BLOCK_T=block_t,
            BLOCK_D=block_d,
            num_warps=4,
        )
        return out.reshape(*ids.shape, dim)
