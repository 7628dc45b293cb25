"""Scatter-add of float32 rows into an output indexed by int64 row ids (repeated ids accumulate)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = zeros(N_out, D); out[idx[i]] += src[i] for every row i of src [N_in, D]."""

    def __init__(self, n_out: int):
        super().__init__()
        self.n_out = n_out

    def forward(self, src: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        out = src.new_zeros(self.n_out, src.shape[1])
        return out.index_add_(0, idx, src)


N_in = 524288
D = 128
N_out = 65536


def get_inputs():
    return [torch.randn(N_in, D), torch.randint(0, N_out, (N_in,))]


def get_init_inputs():
    return [N_out]
