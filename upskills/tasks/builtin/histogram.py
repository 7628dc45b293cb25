"""Count of each value in an int64 vector of bin indices (int64 counts)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[b] = number of i with x[i] == b, for b in [0, num_bins)."""

    def __init__(self, num_bins: int):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.bincount(x, minlength=self.num_bins)


N = 67108864
num_bins = 1024


def get_inputs():
    return [torch.randint(0, num_bins, (N,))]


def get_init_inputs():
    return [num_bins]
