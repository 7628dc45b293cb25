"""Mean cross-entropy loss of float32 logits against int64 class targets."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out = mean_i(logsumexp(logits[i]) - logits[i, target[i]]), a scalar."""

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, target)


M = 4096
C = 16384


def get_inputs():
    return [torch.randn(M, C), torch.randint(0, C, (M,))]


def get_init_inputs():
    return []
