"""The teacher-corpus report's plot: final kernels' speedups and their share of the ceilings.

One PNG beside the Markdown (matplotlib, Agg), two panels over the same tasks:

- speedup of each solved task's final kernel vs eager and vs ``torch.compile`` (log scale, a
  line at 1x);
- achieved bandwidth as a share of the copy ceiling (memory-bound tasks) or TFLOP/s as a share
  of the matmul peak (compute-bound), with the 85%-of-copy bar drawn; a bar under its target
  is drawn in another colour.

Every number is the report's own (``TaskRow``): the plot computes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from upskills.report.corpus import CorpusReport, TaskRow


def plotted_rows(rep: CorpusReport) -> list[TaskRow]:
    """Solved tasks with a timed final kernel, fastest vs eager first."""
    rows = [r for r in rep.rows if r.outcome == "solved" and r.speedup_eager is not None]
    return sorted(rows, key=lambda r: -(r.speedup_eager or 0.0))


def plot_corpus(rep: CorpusReport, path: Path, bandwidth_target: float = 0.85) -> None:
    """Write the plot of ``rep`` to ``path`` (PNG), titled by the file's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = plotted_rows(rep)
    height = 0.28 * max(len(rows), 4) + 1.6
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, height), sharey=True)
    if not rows:
        left.text(0.5, 0.5, "no solved task with a timed kernel", ha="center", va="center")
        left.set_axis_off()
        right.set_axis_off()
    else:
        y = list(range(len(rows)))
        eager = [r.speedup_eager or 0.0 for r in rows]
        compiled = [(i, r.speedup_compile) for i, r in enumerate(rows) if r.speedup_compile]
        left.scatter(eager, y, marker="o", label="vs eager", zorder=3)
        left.scatter(
            [s for _, s in compiled], [i for i, _ in compiled], marker="s", label="vs torch.compile"
        )
        left.set_xscale("log")
        left.axvline(1.0, color="grey", lw=1)
        left.set_yticks(y, [f"{r.task} ({r.language or '?'})" for r in rows], fontsize=8)
        left.invert_yaxis()
        left.set_xlabel("speedup of the final kernel (log scale)")
        left.legend(loc="lower right", fontsize=8)
        left.grid(axis="x", which="both", alpha=0.3)
        _shares(right, rows, bandwidth_target)
    gpus = ", ".join(sorted({e.gpu for e in rep.environments if e.gpu})) or "n/a"
    rechecked = sum(r.times_from == "recheck" for r in rows)
    times = f"; {rechecked} of {len(rows)} timed by a re-check" if rechecked else ""
    fig.suptitle(f"{path.stem}: final kernels ({gpus}{times})")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _shares(ax: Axes, rows: list[TaskRow], target: float) -> None:
    """Bars of each row's share of its ceiling; the memory-bound target drawn as a line."""
    for i, r in enumerate(rows):
        if r.pct_copy is not None:
            miss = r.pct_copy < 100 * target
            ax.barh(i, r.pct_copy, color="tab:red" if miss else "tab:blue")
        elif r.pct_peak is not None:
            ax.barh(i, r.pct_peak, color="tab:green")
    ax.axvline(100 * target, color="black", lw=1, ls="--")
    ax.set_xlabel(
        f"% of copy bandwidth (blue; red under {100 * target:.0f}%) or of matmul peak (green)"
    )
    ax.grid(axis="x", alpha=0.3)
