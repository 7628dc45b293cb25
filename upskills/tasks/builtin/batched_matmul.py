"""Batched matrix multiplication of float16 matrices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = bmm(a, b), a [B, M, K], b [B, K, N] -> out [B, M, N]."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


B = 16
M = 2048
N = 2048
K = 2048


def get_inputs():
    return [
        torch.randn(B, M, K, dtype=torch.float16),
        torch.randn(B, K, N, dtype=torch.float16),
    ]


def get_init_inputs():
    return []
