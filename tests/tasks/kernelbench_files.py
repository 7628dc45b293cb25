"""Problem files in the style of KernelBench level 1, written for the loader tests."""

from __future__ import annotations

from pathlib import Path

SQUARE_MATMUL = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single square matrix multiplication (C = A * B)
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)

N = 2048

def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed
'''

STANDARD_MATMUL = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """Simple model that performs a single matrix multiplication (C = A * B)"""
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)

M = 1024
K = 4096
N = 2048

def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]

def get_init_inputs():
    return []
'''

TENSOR_MATMUL = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """Performs 3D tensor-matrix multiplication."""
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)

N = 16
M = 1024
K = 2048
L = 768

def get_inputs():
    A = torch.randn(N, M, K)
    B = torch.randn(K, L)
    return [A, B]

def get_init_inputs():
    return []
'''

SOFTMAX = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Softmax activation.
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)

batch_size = 4096
dim = 393216

def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed
'''

SUM_REDUCTION = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs sum reduction over a specified dimension.
    """
    def __init__(self, dim: int):
        """
        Initializes the model with the dimension to reduce over.
        """
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)

batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1

def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [reduce_dim]
'''

LEVEL1 = {
    "47_Sum_reduction_over_a_dimension.py": SUM_REDUCTION,
    "10_3D_tensor_matrix_multiplication.py": TENSOR_MATMUL,
    "23_Softmax.py": SOFTMAX,
    "2_Standard_matrix_multiplication_.py": STANDARD_MATMUL,
    "1_Square_matrix_multiplication_.py": SQUARE_MATMUL,
}
"""File name -> source, deliberately not in numeric order."""


def write_level1(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in LEVEL1.items():
        (folder / name).write_text(source)
    return folder
