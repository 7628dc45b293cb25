"""Swap the sequence and head axes of a float16 [B, S, H, D] tensor into a contiguous [B, H, S, D]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = x.permute(0, 2, 1, 3) (contiguous)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(0, 2, 1, 3).contiguous()


B = 8
S = 4096
H = 32
D = 64


def get_inputs():
    return [torch.randn(B, S, H, D, dtype=torch.float16)]


def get_init_inputs():
    return []
