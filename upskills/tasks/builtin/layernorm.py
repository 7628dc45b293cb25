"""Layer normalization over the last dimension with weight and bias, float32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = layer_norm(x, (N,), weight, bias, eps=1e-5), x [M, N]."""

    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(n))
        self.bias = nn.Parameter(0.1 * torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, 1e-5)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [N]
