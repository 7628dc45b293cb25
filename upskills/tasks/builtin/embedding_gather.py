"""Embedding lookup: gather float16 rows of a [V, D] table by int64 token ids."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out[i] = weight[ids[i]], ids [T] -> out [T, D]."""

    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab, dim).to(torch.float16))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.weight)


V = 32000
D = 4096
T = 32768


def get_inputs():
    return [torch.randint(0, V, (T,))]


def get_init_inputs():
    return [V, D]
