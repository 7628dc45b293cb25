"""Conversion of a 2-D float32 tensor to bfloat16 (round to nearest even)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = x.to(torch.bfloat16)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.bfloat16)


M = 8192
N = 8192


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
