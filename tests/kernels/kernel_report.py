"""The GPU speedup table of the known-good kernels: rows kept in memory and appended as JSONL.

Rows are appended to ``$UPSKILLS_KERNEL_REPORT`` (one JSON object a line) as they are produced,
so a run killed half way keeps what it measured.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

REPORT_ENV = "UPSKILLS_KERNEL_REPORT"
"""Environment variable naming the JSONL file GPU rows are appended to."""

ROWS: list[dict[str, Any]] = []
"""Rows recorded in this pytest session (printed in the terminal summary)."""

COLUMNS = (
    ("kernel", "{}"),
    ("median_ms", "{:.4f}"),
    ("eager_ms", "{:.4f}"),
    ("compile_ms", "{:.4f}"),
    ("speedup_eager", "{:.2f}"),
    ("speedup_compile", "{:.2f}"),
    ("spread", "{:.3f}"),
)
"""Table columns and their number formats."""


def append_row(row: dict[str, Any], rows: list[dict[str, Any]] | None = None) -> Path | None:
    """Keep ``row`` for the table and append it to ``$UPSKILLS_KERNEL_REPORT`` when that is set.

    Returns:
        The report file written to, or None when no report file is configured.
    """
    (ROWS if rows is None else rows).append(row)
    path = os.environ.get(REPORT_ENV)
    if not path:
        return None
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, sort_keys=True) + "\n")
    return target


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a fixed-width text table (missing numbers shown as ``-``)."""
    cells = [[name for name, _ in COLUMNS]]
    for row in rows:
        cells.append(
            ["-" if row.get(name) is None else fmt.format(row[name]) for name, fmt in COLUMNS]
        )
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )
