"""Embedding gather fp16: one program per token copies its weight row in 512-wide chunks."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _embedding(ids_ptr, w_ptr, out_ptr, D, stride_wv, BLOCK_D: tl.constexpr):
    tok = tl.program_id(0).to(tl.int64)
    row = tl.load(ids_ptr + tok).to(tl.int64)
    for start in range(0, D, BLOCK_D):
        cols = start + tl.arange(0, BLOCK_D)
        mask = cols < D
        vals = tl.load(w_ptr + row * stride_wv + cols, mask=mask)
        tl.store(out_ptr + tok * D + cols, vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab, dim).to(torch.float16))

    def forward(self, ids):
        dim = self.weight.shape[1]
        out = torch.empty((*ids.shape, dim), dtype=self.weight.dtype, device=ids.device)
        n_tok = ids.numel()
        _embedding[(n_tok,)](
            ids, self.weight, out, dim, self.weight.stride(0), BLOCK_D=512, num_warps=4
        )
        return out
