"""The ceilings the corpus report divides by, and the copy's rate at a kernel's own size.

The copy ceiling is one large copy (4.3 GB, about 2 ms on an H200). A kernel that moves 268 MB
is timed after the same L2 flush, with the same launch and the same tail, but over a tenth of
the time, so a copy of its own bytes reaches less of that ceiling (on an H100, 0.69 of it at
32 MiB and 0.98 at 512 MiB: ``benchmarks/results/ceilings_h100_session39.json``). A ceilings
file from ``benchmarks/device/ceilings.py`` holds that copy at ten sizes (``copy_by_size``);
with it the report also says how a memory-bound kernel compares with a copy of its own bytes.
That is a second reading, beside the bar's: issue 10's bar stays the large copy's.

The size reading is a ratio inside one run: the copy at the kernel's size over that run's own
large copy. So it can come from a later ceilings file than the ceiling itself, but only from
the same GPU.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

COPY_BANDWIDTH_GBS = 4300.0
"""H200 device-to-device copy, read + write bytes, measured on this workplace's GPU."""
PEAK_TFLOPS = 790.0
"""H200 dense bf16/fp16 torch.matmul peak, measured on this workplace's GPU."""


class CopyAtSize(BaseModel):
    """One copy of ``copy_by_size``: the bytes it moved (read + write) and its rate."""

    model_config = ConfigDict(extra="ignore")

    bytes: int = Field(gt=0)
    gb_per_s: float = Field(gt=0)


class CopyBySize(BaseModel):
    """A ceilings file's copies at several sizes, and that file's own large copy."""

    model_config = ConfigDict(extra="forbid")

    file: str
    """The ceilings file they were read from."""
    gpu: str | None = None
    """The GPU they were measured on."""
    ceiling_gbs: float
    """That file's large copy (``copy_gb_per_s``), GB/s: the size shares divide by it."""
    sizes: list[CopyAtSize]
    """The copies, smallest first."""

    def share_at(self, nbytes: int) -> float | None:
        """The share of the large copy's rate that a copy of ``nbytes`` reaches.

        Interpolated linearly in log(bytes) between the two nearest sizes; above the largest
        size, the largest's share. None below the smallest: too small to say.
        """
        sizes = self.sizes
        if not sizes or nbytes < sizes[0].bytes:
            return None
        if nbytes >= sizes[-1].bytes:
            return sizes[-1].gb_per_s / self.ceiling_gbs
        for lo, hi in zip(sizes, sizes[1:], strict=False):
            if lo.bytes <= nbytes <= hi.bytes:
                t = math.log(nbytes / lo.bytes) / math.log(hi.bytes / lo.bytes)
                return (lo.gb_per_s + t * (hi.gb_per_s - lo.gb_per_s)) / self.ceiling_gbs
        return None  # not reached: the sizes are sorted and nbytes lies within them


class CorpusCeilings(BaseModel):
    """The two ceilings the report divides by, and where they came from."""

    model_config = ConfigDict(extra="forbid")

    copy_bandwidth_gbs: float = COPY_BANDWIDTH_GBS
    """Copy ceiling, GB/s (read + write bytes)."""
    peak_tflops: float = PEAK_TFLOPS
    """Dense fp16 matmul peak, TFLOP/s."""
    file: str | None = None
    """Ceilings file they were read from; None for the built-in values."""
    gpu: str | None = None
    """GPU the ceilings file was measured on."""
    overridden: list[str] = Field(default_factory=list)
    """Ceilings given on the command line instead (``copy``, ``peak``)."""
    copy_by_size: CopyBySize | None = None
    """The copy at several sizes (the ceilings file's, or ``--copy-by-size``'s), if any."""


def read_copy_by_size(path: str | Path) -> CopyBySize | None:
    """A ceilings file's ``copy_by_size``; None when it has none.

    Raises:
        ValueError: the file cannot be read, or its ``copy_by_size`` is malformed.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a ceilings file ({exc})") from exc
    if not isinstance(data, dict) or data.get("copy_by_size") is None:
        return None
    try:
        sizes = sorted(
            (CopyAtSize.model_validate(row) for row in data["copy_by_size"]),
            key=lambda c: c.bytes,
        )
        return CopyBySize(
            file=str(path),
            gpu=data.get("gpu") or None,
            ceiling_gbs=float(data["copy_gb_per_s"]),
            sizes=sizes,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed copy_by_size ({exc})") from exc


def corpus_ceilings(
    file: str | Path | None = None,
    copy_bandwidth_gbs: float | None = None,
    peak_tflops: float | None = None,
    copy_by_size_file: str | Path | None = None,
) -> CorpusCeilings:
    """The ceilings to use: a ceilings file's, else the built-in ones, then any override.

    Args:
        file: a ceilings JSON (``copy_gb_per_s``, ``matmul_float16_tflops``, ``gpu``), or None.
        copy_bandwidth_gbs: copy ceiling that overrides the file's, GB/s.
        peak_tflops: fp16 matmul peak that overrides the file's, TFLOP/s.
        copy_by_size_file: a ceilings JSON whose ``copy_by_size`` to use (default: ``file``'s,
            if it has one).

    Raises:
        ValueError: a file cannot be read, ``file`` has no fp16 matmul rate and none is given,
            or the copy by size was measured on another GPU than the ceilings.
    """
    from upskills.verify.profile import load_ceilings

    got = CorpusCeilings()
    if file is not None:
        measured = load_ceilings(file)
        if measured.matmul_float16_tflops is None and peak_tflops is None:
            raise ValueError(f"{file}: no matmul_float16_tflops; pass --peak-tflops")
        got = CorpusCeilings(
            copy_bandwidth_gbs=measured.copy_gb_per_s,
            peak_tflops=measured.matmul_float16_tflops or PEAK_TFLOPS,
            file=str(file),
            gpu=measured.gpu or None,
        )
    if copy_bandwidth_gbs is not None:
        got.copy_bandwidth_gbs = copy_bandwidth_gbs
        got.overridden.append("copy")
    if peak_tflops is not None:
        got.peak_tflops = peak_tflops
        got.overridden.append("peak")
    source = copy_by_size_file if copy_by_size_file is not None else file
    if source is not None:
        got.copy_by_size = read_copy_by_size(source)
        if copy_by_size_file is not None and got.copy_by_size is None:
            raise ValueError(f"{copy_by_size_file}: no copy_by_size in it")
        by_size = got.copy_by_size
        if by_size is not None and by_size.gpu and got.gpu and by_size.gpu != got.gpu:
            raise ValueError(
                f"{by_size.file}: its copies ran on {by_size.gpu}, the ceilings on {got.gpu}: "
                "a size's share of the copy holds on one GPU only"
            )
    return got
