"""Leaky ReLU (slope 0.01) followed by a constant scale, float32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = leaky_relu(x, 0.01) * scale."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, 0.01) * self.scale


M = 8192
N = 8192
scale = 2.5


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [scale]
