"""Bias add fused with GELU (erf form) on float16."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = gelu(x + bias), x [M, N], bias [N], exact (erf) GELU."""

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.gelu(x + bias)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N, dtype=torch.float16), torch.randn(N, dtype=torch.float16)]


def get_init_inputs():
    return []
