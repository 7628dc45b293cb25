# Verified kernel for task `40_LayerNorm` (task hash 6c19ce957de04456), from trace 9b533ca77e1a4cf184ff3015accb3a0b.
# Measured: 37.86x eager, 1.57x torch.compile on NVIDIA H200.
# Check it: upskills check 40_LayerNorm scripts/40_LayerNorm_kernel.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


# Session 2 measured 0.318 ms (26.2x eager, 1.09x torch.compile) = 42% of the copy bandwidth
# counted on the minimal bytes (x in, y out: 512 MiB). Its normalize pass runs one program per
# (chunk, row): every one of the 16 rows streams the whole weight and bias again (2 x 16 MiB
# each time, 512 MiB in all, more than the 50 MiB L2 keeps between rows), so the kernel moves
# ~1.3 GB, not 0.8. This attempt keeps the two-stage statistics (chunk mean/M2, Chan merge) and
# changes the normalize pass: a program owns one BLOCK of columns, loads its w and b once and
# loops over the rows, so weight and bias cross DRAM once (32 MiB) and x is read twice in all.
@triton.jit
def chunk_stats_kernel(x_ptr, mean_ptr, m2_ptr, n, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    c = tl.program_id(0)
    offs = c * CHUNK + tl.arange(0, CHUNK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    cnt = tl.minimum(n - c * CHUNK, CHUNK).to(tl.float32)
    mean = tl.sum(x, axis=0) / cnt
    d = tl.where(mask, x - mean, 0.0)
    tl.store(mean_ptr + row * n_chunks + c, mean)
    tl.store(m2_ptr + row * n_chunks + c, tl.sum(d * d, axis=0))


@triton.jit
def merge_stats_kernel(mean_ptr, m2_ptr, stat_ptr, n, n_chunks, eps, CHUNK: tl.constexpr, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_C)
    mask = c < n_chunks
    means = tl.load(mean_ptr + row * n_chunks + c, mask=mask, other=0.0)
    m2s = tl.load(m2_ptr + row * n_chunks + c, mask=mask, other=0.0)
    cnt = tl.where(mask, tl.minimum(n - c * CHUNK, CHUNK), 0).to(tl.float32)
    mean = tl.sum(means * cnt, axis=0) / n
    dev = tl.where(mask, means - mean, 0.0)
    var = (tl.sum(m2s, axis=0) + tl.sum(cnt * dev * dev, axis=0)) / n
    tl.store(stat_ptr + row * 2, mean)
    tl.store(stat_ptr + row * 2 + 1, 1.0 / tl.sqrt(var + eps))


@triton.jit
def normalize_rows_kernel(x_ptr, w_ptr, b_ptr, stat_ptr, y_ptr, n, rows, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    for r in range(0, rows):
        row = r.to(tl.int64)
        mean = tl.load(stat_ptr + row * 2)
        rstd = tl.load(stat_ptr + row * 2 + 1)
        x = tl.load(x_ptr + row * n + offs, mask=mask)
        tl.store(y_ptr + row * n + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = self.ln.weight.numel()
        rows = x.numel() // n
        y = torch.empty_like(x)
        chunk = 4096
        n_chunks = triton.cdiv(n, chunk)
        means = torch.empty((rows, n_chunks), device=x.device, dtype=torch.float32)
        m2s = torch.empty_like(means)
        stats = torch.empty((rows, 2), device=x.device, dtype=torch.float32)
        chunk_stats_kernel[(n_chunks, rows)](x, means, m2s, n, n_chunks, CHUNK=chunk, num_warps=8)
        merge_stats_kernel[(rows,)](
            means, m2s, stats, n, n_chunks, self.ln.eps, CHUNK=chunk,
            BLOCK_C=triton.next_power_of_2(n_chunks), num_warps=8,
        )
        block = 2048
        normalize_rows_kernel[(triton.cdiv(n, block),)](
            x, self.ln.weight, self.ln.bias, stats, y, n, rows, BLOCK=block, num_warps=4
        )
        return y
