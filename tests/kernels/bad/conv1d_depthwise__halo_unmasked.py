"""BAD: the halo mask checks only the right edge (pos < L), not the left one (pos >= 0).

The first K // 2 outputs of each (batch, channel) row read the end of the previous row, and
the very first row reads K // 2 elements before the tensor.

CPU (observed): the verifier's interpreter bounds check stops the load before the tensor:
``runtime``. CUDA: those bytes usually belong to the caching allocator, and the wrong halo
values give a ``mismatch``; ``crash`` if the read falls outside any allocation.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED_ERROR = "runtime"
EXPECTED_ERROR_CUDA = ("mismatch", "crash")


@triton.jit
def _dwconv1d_kernel(
    x_ptr, w_ptr, out_ptr, C, L, L_out, PAD: tl.constexpr, KSIZE: tl.constexpr, BLOCK: tl.constexpr
):
    bc = tl.program_id(0).to(tl.int64)
    c = bc % C
    lo = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    out_ok = lo < L_out
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in tl.static_range(KSIZE):
        pos = lo + j - PAD
        ok = out_ok & (pos < L)
        xv = tl.load(x_ptr + bc * L + pos, mask=ok, other=0.0).to(tl.float32)
        wv = tl.load(w_ptr + c * KSIZE + j).to(tl.float32)
        acc += xv * wv
    tl.store(out_ptr + bc * L_out + lo, acc.to(out_ptr.dtype.element_ty), mask=out_ok)


class ModelNew(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c, 1, k) / k**0.5)

    def forward(self, x):
        x = x.contiguous()
        w = self.weight.contiguous()
        bsz, chans, length = x.shape
        ksize = w.shape[-1]
        pad = ksize // 2
        l_out = length + 2 * pad - ksize + 1
        out = torch.empty((bsz, chans, l_out), dtype=x.dtype, device=x.device)
        block = min(triton.next_power_of_2(l_out), 2048)
        grid = (bsz * chans, triton.cdiv(l_out, block))
        _dwconv1d_kernel[grid](
            x, w, out, chans, length, l_out, PAD=pad, KSIZE=ksize, BLOCK=block, num_warps=4
        )
        return out
