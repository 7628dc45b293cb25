"""ReLU of a 2-D float32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = max(x, 0)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
