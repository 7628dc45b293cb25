"""Copy of a 2-D float32 tensor into new memory."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = x.clone()."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
