"""Softmax over the last dimension of a 2-D float16 tensor, float16 in and out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = softmax(x, dim=-1) in float16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N, dtype=torch.float16)]


def get_init_inputs():
    return []
