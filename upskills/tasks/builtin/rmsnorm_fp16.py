"""RMS normalization over the last dimension of float16 input, computed in float32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = (x * rsqrt(mean(x^2, -1) + 1e-6) * weight), in float32, cast to float16."""

    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter((1 + 0.1 * torch.randn(n)).to(torch.float16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * self.weight.float()
        return y.to(x.dtype)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N, dtype=torch.float16)]


def get_init_inputs():
    return [N]
