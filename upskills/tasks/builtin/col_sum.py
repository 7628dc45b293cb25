"""Sum of each column of a 2-D float32 tensor (a strided reduction)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[j] = sum_i x[i, j], x [M, N] -> out [N]."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=0)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
