"""Sum of each row of a 2-D float16 tensor; the sum needs float32 accumulation."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[i] = sum_j x[i, j], x [M, N] float16 -> out [M] float16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1)


M = 16384
N = 8192


def get_inputs():
    # Mean 1, so row sums reach ~N where a float16 accumulator loses the small addends.
    return [torch.randn(M, N, dtype=torch.float16) + 1]


def get_init_inputs():
    return []
