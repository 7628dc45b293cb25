"""Matrix multiplication of float16 matrices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = a @ b, a [M, K], b [K, N] -> out [M, N]."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


M = 4096
N = 4096
K = 4096


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)]


def get_init_inputs():
    return []
