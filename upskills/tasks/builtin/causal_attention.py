"""Causal scaled dot-product attention on float16 [B, H, S, D] tensors, head dim 64."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = softmax(q @ k^T / sqrt(D) + causal mask) @ v."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


B = 4
H = 16
S = 4096
D = 64


def get_inputs():
    return [torch.randn(B, H, S, D, dtype=torch.float16) for _ in range(3)]


def get_init_inputs():
    return []
