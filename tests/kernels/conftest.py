"""Known-kernel tests: the ``kernel_report`` fixture and the GPU speedup table in the summary."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from tests.kernels.kernel_report import REPORT_ENV, ROWS, append_row, format_table


@pytest.fixture
def kernel_report() -> Callable[[dict[str, Any]], Any]:
    """A function recording one GPU timing row (printed at the end, appended to the report)."""
    return append_row


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the GPU speedup table of the good kernels, if any were timed."""
    if not ROWS:
        return
    terminalreporter.write_sep("=", "known-good kernels on GPU")
    terminalreporter.write_line(format_table(ROWS))
    target = os.environ.get(REPORT_ENV)
    if target:
        terminalreporter.write_line(f"rows appended to {target}")
