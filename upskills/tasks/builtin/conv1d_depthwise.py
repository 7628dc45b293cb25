"""Depthwise 1-D convolution (one filter per channel, zero padding K // 2), float32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = conv1d(x, weight, groups=C, padding=K // 2), x [B, C, L], weight [C, 1, K]."""

    def __init__(self, c: int, k: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c, 1, k) / k**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.weight.shape[-1]
        return F.conv1d(x, self.weight, groups=x.shape[1], padding=k // 2)


B = 8
C = 1024
L = 8192
K = 3


def get_inputs():
    return [torch.randn(B, C, L)]


def get_init_inputs():
    return [C, K]
