"""SwiGLU gate: SiLU of the first half of each row times the second half, float16."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = silu(x[:, :H]) * x[:, H:], x [M, 2H] -> out [M, H]."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.shape[-1] // 2
        return F.silu(x[..., :h]) * x[..., h:]


M = 8192
H = 8192


def get_inputs():
    return [torch.randn(M, 2 * H, dtype=torch.float16)]


def get_init_inputs():
    return []
