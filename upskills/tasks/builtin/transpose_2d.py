"""Transpose of a 2-D float32 tensor into a new contiguous tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = x.T (contiguous), x [M, N] -> out [N, M]."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
