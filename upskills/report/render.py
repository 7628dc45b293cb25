"""Render a Report: ``report.md``, PNG plots (matplotlib, Agg) and a terminal table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from upskills.report.model import ArmStats, LiftRow, Report

LIFT_PLOT = "lift_ci.png"
"""Lift vs baseline with 95% CIs, one row per student x arm."""
SPEEDUP_PLOT = "speedups.png"
"""Speedup distributions per arm (correct kernels)."""


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _lift_text(row: LiftRow) -> str:
    iv = row.lift
    if row.metric == "margin_nats":
        if iv.ci_low is None or iv.ci_high is None:
            return f"{iv.mean:+.2f} nats [no interval: one task]"
        return f"{iv.mean:+.2f} nats [{iv.ci_low:+.2f}, {iv.ci_high:+.2f}]"
    if iv.ci_low is None or iv.ci_high is None:
        return f"{100 * iv.mean:+.1f} pp [no interval: one task]"
    return f"{100 * iv.mean:+.1f} pp [{100 * iv.ci_low:+.1f}, {100 * iv.ci_high:+.1f}]"


def _rate_ci(a: ArmStats) -> str:
    if a.pass_ci is None:
        return ""
    return f" [{100 * a.pass_ci[0]:.0f}, {100 * a.pass_ci[1]:.0f}]"


def _speed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def arm_table(report: Report) -> list[list[str]]:
    """Rows of the per student x arm table (header first)."""
    ks = sorted({k for a in report.arms for k in a.pass_at_k}, key=int)
    header = ["student", "rung", "arm", "split", "cases", "samples"]
    margins = any(a.margin_nats is not None for a in report.arms)
    header += [f"pass@{k}" for k in ks] + ["chance"] + (["margin (nats)"] if margins else [])
    header += ["fast_1", "speedup (geo)", "lift vs baseline", "p (Holm)"]
    rows = [header]
    base = {
        (r.student, r.arm, "all" if r.subset == "all" else r.subset.removeprefix("tag:rung:")): r
        for r in report.lifts
        if r.reference == "baseline"
        and (r.subset == "all" or r.subset.startswith("tag:rung:"))
        and r.metric == "pass_1"
    }
    for a in sorted(report.arms, key=lambda a: (a.student, a.rung != "all", a.rung)):
        row = base.get((a.student, a.arm, a.rung))
        rows.append(
            [
                a.student,
                a.rung,
                a.arm,
                a.split,
                str(a.cases),
                f"{a.evaluated}/{a.samples}",
                *[_pct(a.pass_at_k.get(k)) + (_rate_ci(a) if k == "1" else "") for k in ks],
                _pct(a.chance) if a.chance is not None else "—",
                *([_nats(a.margin_nats)] if margins else []),
                _pct(a.fast_1),
                _speed(a.speedup_geomean),
                _lift_text(row) if row else "—",
                _p_text(row) if row else "—",
            ]
        )
    return rows


def _nats(x: float | None) -> str:
    return "—" if x is None else f"{x:+.2f}"


def _p_text(row: LiftRow) -> str:
    holm = row.lift.p_holm
    return f"{row.lift.p_value:.3f}" + (f" ({holm:.3f})" if holm is not None else "")


def _md_table(rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def _lift_rows(lifts: list[LiftRow]) -> list[list[str]]:
    rows = [
        [
            "student",
            "arm",
            "vs",
            "metric",
            "subset",
            "lift [95% CI]",
            "interval",
            "p (Holm)",
            "cases (tasks)",
            "better/worse",
            "repairs/regressions",
        ]
    ]
    for r in lifts:
        rows.append(
            [
                r.student,
                r.arm,
                r.reference,
                r.metric,
                r.subset,
                _lift_text(r),
                r.lift.method,
                _p_text(r),
                f"{r.lift.n_cases} ({r.lift.n_clusters})",
                f"{r.lift.better}/{r.lift.worse}",
                f"{r.repairs}/{r.regressions}",
            ]
        )
    return rows


def _extras(arms: list[ArmStats]) -> list[str]:
    lines = []
    for a in arms:
        fails = ", ".join(f"{k} {v}" for k, v in a.failures.items()) or "none"
        line = (
            f"- **{a.student} / {a.arm}** ({a.kind}, block {a.block_tokens} tokens): "
            f"failures: {fails}; tokens in/out {a.mean_input_tokens:.0f}/"
            f"{a.mean_output_tokens:.0f}; latency {a.mean_latency_s:.2f} s"
        )
        if a.activation_rate is not None:
            reads = ", ".join(f"{k} x{v}" for k, v in a.reads.items()) or "nothing"
            line += f"; activation rate {_pct(a.activation_rate)} (read: {reads})"
        lines.append(line)
    return lines


def render_markdown(report: Report) -> str:
    """The report as Markdown."""
    split_text = ", ".join(f"{k}: {v} cases" for k, v in sorted(report.splits.items()))
    where = report.device or "not evaluated"
    if report.gpu:
        where += f" ({report.gpu})"
    parts = [
        f"# Lift report: {report.run}",
        "",
        f"- Evaluation: `{report.evaluation}` on {where}; students generated and scored on "
        f"{report.generation_device or 'their endpoints'}",
        f"- Cases by split: {split_text}; {report.samples_per_case} samples per "
        "student x arm x case; all figures below are per split as labelled.",
        f"- Command: `{report.command}`",
        "",
    ]
    if report.notes:
        parts += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    parts += ["## Students x arms", "", _md_table(arm_table(report)), ""]
    parts += [
        "Lifts are paired per-case differences in percentage points with 95% intervals: "
        "Newcombe's paired Wilson interval for 0/1 outcomes (`newcombe`: one case a task; "
        "`newcombe-tasks`: several, on the cases' table scaled to Kish's effective sample "
        "size, the task count when no case differs), "
        "else a t interval over task clusters (flagged `t-few` under "
        "10 tasks); no interval for one task. p: two-sided sign-flip permutation test, "
        "Holm-adjusted across all rows in parentheses. `chance` is a uniform guess "
        "(choose: correct candidates / k). pass@1 brackets: Wilson 95% interval over cases, "
        "on Kish's effective sample size when a task has several cases.",
        "",
    ]
    main = [r for r in report.lifts if r.subset == "all"]
    if main:
        parts += ["## Lifts", "", _md_table(_lift_rows(main)), ""]
    sub = [r for r in report.lifts if r.subset != "all"]
    if sub:
        parts += ["## Lift by split and technique tag", "", _md_table(_lift_rows(sub)), ""]
    parts += ["## Failures, tokens, latency, skill reads", ""] + _extras(report.arms) + [""]
    if plots_available():
        parts += ["## Plots", "", f"![lift]({LIFT_PLOT})", "", f"![speedups]({SPEEDUP_PLOT})", ""]
    return "\n".join(parts)


PLOTS_SKIPPED = "plots skipped: matplotlib is not installed (pip install 'upskills[plots]')"
"""The note a report carries when it was written without the ``plots`` extra."""


def plots_available() -> bool:
    """Whether matplotlib (the ``plots`` extra) is installed."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def plot_lifts(report: Report, path: Path) -> None:
    """Lift vs baseline (pass@1 and fast_1) with 95% CIs per student x arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [
        r
        for r in report.lifts
        if r.reference == "baseline"
        and r.subset == "all"
        and r.metric != "margin_nats"  # nats, not points: another axis
        and r.lift.ci_low is not None
    ]  # a row without an interval (one task) is not plotted: a bare point would overclaim
    fig, ax = plt.subplots(figsize=(7, 0.5 * max(len(rows), 2) + 1.2))
    if rows:
        y = list(range(len(rows)))
        means = [100 * r.lift.mean for r in rows]
        err = [
            [100 * (r.lift.mean - (r.lift.ci_low or 0.0)) for r in rows],
            [100 * ((r.lift.ci_high or 0.0) - r.lift.mean) for r in rows],
        ]
        ax.errorbar(means, y, xerr=err, fmt="o", capsize=4)
        ax.set_yticks(y, [f"{r.student} / {r.arm} ({r.metric})" for r in rows])
        ax.invert_yaxis()
    else:
        ax.text(0.5, 0.5, "no paired arms evaluated yet", ha="center", transform=ax.transAxes)
    ax.axvline(0.0, color="grey", lw=1)
    ax.set_xlabel("lift vs baseline, percentage points (95% CI, clustered by task)")
    ax.set_title(f"{report.run}: lift ({report.device or 'n/a'})")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def plot_speedups(report: Report, path: Path) -> None:
    """Speedup vs eager of correct kernels, one box per student x arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [a for a in report.arms if a.speedups]
    fig, ax = plt.subplots(figsize=(7, 0.5 * max(len(report.arms), 2) + 1.2))
    if arms:
        major, minor = (int(x) for x in matplotlib.__version__.split(".")[:2])
        horizontal: dict[str, Any] = (
            {"orientation": "horizontal"} if (major, minor) >= (3, 10) else {"vert": False}
        )
        ax.boxplot([a.speedups for a in arms], **horizontal)
        ax.set_yticks(range(1, len(arms) + 1), [f"{a.student} / {a.arm}" for a in arms])
        ax.set_xscale("log")
        ax.axvline(1.0, color="grey", lw=1)
        ax.set_xlabel("speedup vs eager (correct kernels, log scale)")
    else:
        ax.text(
            0.5,
            0.5,
            "no speedups: no correct kernel was timed\n(CPU evaluation measures correctness only)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_axis_off()
    ax.set_title(f"{report.run}: speedup distributions")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def print_table(report: Report) -> None:
    """Print the students x arms table to the terminal (rich)."""
    from rich import box
    from rich.table import Table

    from upskills.core.console import make_console

    rows = arm_table(report)
    keep = [i for i, h in enumerate(rows[0]) if h not in ("split", "samples")]
    if len({r[0] for r in rows[1:]}) == 1:
        keep.remove(0)  # one student: named in the title
    splits = ", ".join(f"{k} {v}" for k, v in sorted(report.splits.items()))
    title = f"{report.run}: {report.evaluation or 'not evaluated'}; cases: {splits}"
    if len(keep) < len(rows[0]) - 2:
        title += f"; student {rows[1][0]}" if len(rows) > 1 else ""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for i in keep:
        table.add_column(rows[0][i], overflow="fold")
    for r in rows[1:]:
        table.add_row(*(r[i] for i in keep))
    console = make_console()
    console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
