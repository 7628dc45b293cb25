"""Reports of lift runs: ``report.md``, ``summary.json``, PNG plots and a terminal table.

``write_report(run_dir, baseline=None) -> Report`` computes every statistic from the run's JSONL
files (see ``upskills.report.summary``) and writes the files into the run folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from upskills.report.model import Report

__all__ = ["write_report"]


def write_report(
    run_dir: str | Path, baseline: str | Path | None = None, device: str | None = None
) -> Report:
    """Compute a run's statistics and write ``report.md``, ``summary.json`` and plots.

    Args:
        run_dir: the lift run folder.
        baseline: another run folder to compare against (paired by student, arm and case).
        device: evaluation device to report (default: cuda when evaluated there, else cpu).

    Returns:
        The Report (also written as ``summary.json``).
    """
    from upskills.report.render import (
        LIFT_PLOT,
        SPEEDUP_PLOT,
        plot_lifts,
        plot_speedups,
        render_markdown,
    )
    from upskills.report.summary import compute_report

    run_dir = Path(run_dir)
    report = compute_report(run_dir, Path(baseline) if baseline else None, device)
    (run_dir / "summary.json").write_text(report.model_dump_json(indent=1) + "\n", "utf-8")
    (run_dir / "report.md").write_text(render_markdown(report), "utf-8")
    plot_lifts(report, run_dir / LIFT_PLOT)
    plot_speedups(report, run_dir / SPEEDUP_PLOT)
    return report
