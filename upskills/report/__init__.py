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
    run_dir: str | Path,
    baseline: str | Path | None = None,
    device: str | None = None,
    out_dir: str | Path | None = None,
) -> Report:
    """Compute a run's statistics and write ``report.md``, ``summary.json`` and plots.

    Without matplotlib (the ``plots`` extra) the plots are skipped and the report's notes say so.

    Args:
        run_dir: the lift run folder.
        baseline: another run folder to compare against (paired by student, arm and case).
        device: evaluation device to report (default: cuda when evaluated there, else cpu).
        out_dir: where to write the files (default: ``run_dir``), so the reports of one run's
            CPU and GPU evaluations can sit side by side.

    Returns:
        The Report (also written as ``summary.json``).
    """
    from upskills.report.render import (
        LIFT_PLOT,
        PLOTS_SKIPPED,
        SPEEDUP_PLOT,
        plot_lifts,
        plot_speedups,
        plots_available,
        render_markdown,
    )
    from upskills.report.summary import compute_report

    run_dir = Path(run_dir)
    report = compute_report(run_dir, Path(baseline) if baseline else None, device)
    out = Path(out_dir) if out_dir is not None else run_dir
    out.mkdir(parents=True, exist_ok=True)
    plots = plots_available()
    if not plots:
        report.notes.append(PLOTS_SKIPPED)
    (out / "summary.json").write_text(report.model_dump_json(indent=1) + "\n", "utf-8")
    (out / "report.md").write_text(render_markdown(report), "utf-8")
    if plots:
        plot_lifts(report, out / LIFT_PLOT)
        plot_speedups(report, out / SPEEDUP_PLOT)
    return report
