"""Linear layer (x @ W^T + bias) fused with ReLU, float16."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = relu(x @ weight.T + bias), x [M, K], weight [N, K], bias [N]."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.weight = nn.Parameter((torch.randn(n, k) / k**0.5).to(torch.float16))
        self.bias = nn.Parameter((0.5 * torch.randn(n)).to(torch.float16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.weight.t() + self.bias)


M = 4096
N = 4096
K = 4096


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16)]


def get_init_inputs():
    return [K, N]
