"""Element-wise sum of two 1-D float32 vectors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = x + y."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


N = 67108864


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
