"""2-D convolution with a 3x3 kernel, stride 1, zero padding 1, few channels, float32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = conv2d(x, weight, padding=1), x [B, C_in, H, W], weight [C_out, C_in, 3, 3]."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c_out, c_in, 3, 3) / (9 * c_in) ** 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.weight, padding=1)


B = 16
C_in = 16
C_out = 32
H = 256
W = 256


def get_inputs():
    return [torch.randn(B, C_in, H, W)]


def get_init_inputs():
    return [C_in, C_out]
