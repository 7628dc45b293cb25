"""Markdown rendering of the teacher-corpus report (``upskills.report.corpus`` computes it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from upskills.report.corpus_recheck import RECHECK_TOLERANCE

if TYPE_CHECKING:
    from upskills.report.corpus import CorpusReport, Geomean, TaskRow

HISTORY_CELL_SEP = " \\| "
"""Between two sessions' histories in a table cell (a bare ``|`` would end the cell)."""


def history_text(row: TaskRow, sep: str = " | ") -> str:
    """A row's verdict history: attempts joined by ``->``, sessions by ``sep``."""
    return sep.join(" -> ".join(s) or "no attempts" for s in row.history) or "no attempts"


def _num(x: float | None, fmt: str, unit: str = "") -> str:
    return "-" if x is None else format(x, fmt) + unit


def _ceilings_line(rep: CorpusReport) -> str:
    c = rep.ceilings
    line = (
        f"- Ceilings: copy bandwidth {c.copy_bandwidth_gbs:g} GB/s (device-to-device copy, "
        f"read + write bytes), dense fp16 peak {c.peak_tflops:g} TFLOP/s (torch.matmul); "
    )
    if c.file:
        line += f"from `{c.file}`, measured on {c.gpu or 'an unnamed GPU'}"
    else:
        line += "built-in values measured on this workplace's H200"
    if c.overridden:
        line += f"; {' and '.join(c.overridden)} overridden on the command line"
    judged = {e.gpu for e in rep.environments}
    if c.gpu and judged and c.gpu not in judged:
        line += f" (not the GPU that judged: {', '.join(sorted(judged))})"
    if c.copy_by_size is not None:
        line += (
            f". A copy at {len(c.copy_by_size.sizes)} sizes from `{c.copy_by_size.file}` "
            "(each as a share of that file's own large copy) gives a memory-bound kernel's "
            "share of a copy of its own bytes, in the shortfalls and the totals"
        )
    return line + "."


def _times_lines(rep: CorpusReport) -> list[str]:
    if not rep.recheck_files:
        return []
    timed = [r for r in rep.rows if r.times_from is not None]
    again = sum(r.times_from == "recheck" for r in timed)
    files = ", ".join(f"`{f}`" for f in rep.recheck_files)
    return [
        f"- Kernel times: {again} of {len(timed)} final kernels from their re-check in {files} "
        "(marked `re-check` in the final column; speedups are the re-check's, against the "
        "verifier's baselines), the rest from their traces' verdicts."
    ]


def _geomean_lines(rep: CorpusReport) -> list[str]:
    def one(g: Geomean) -> str:
        eager, compiled = _num(g.vs_eager, ".2f", "x"), _num(g.vs_compile, ".2f", "x")
        text = f"{eager} vs eager, {compiled} vs torch.compile"
        extra = f", compile over {g.tasks_with_compile}" if g.tasks_with_compile != g.tasks else ""
        return f"{text} ({g.tasks} tasks{extra})"

    lines = []
    for g in rep.geomeans:
        if g.by == "all":
            lines.append(f"- Geomean speedup of solved tasks' final kernels: {one(g)}")
        else:
            lines.append(f"  - {g.by} {g.group}: {one(g)}")
    return lines


def render_corpus_markdown(rep: CorpusReport, plot_note: str | None = None) -> str:
    """The report as Markdown, showing ``rep.plot`` when there is one (else ``plot_note``)."""
    t = rep.totals
    envs = "; ".join(
        f"{e.gpu or '?'}, torch {e.torch or '?'}, triton {e.triton or '?'}, CUDA {e.cuda or '?'} "
        f"({e.verdicts} verdicts)"
        for e in rep.environments
    )
    lines = [
        "# Teacher corpus report",
        "",
        f"- Command: `{rep.command}`",
        f"- Judged on: {envs or 'no verdicts'} (the verdicts' environments)",
        f"- Produced by: {', '.join(rep.agents)} (run_start agent role/name)",
        _ceilings_line(rep),
        *_times_lines(rep),
        "- One row per task; a task worked in several sessions shows each session's verdict "
        "history, separated by `|`. Final kernel: the best passing submitted kernel over all "
        "sessions (`submit`), else the best passing one (`best`).",
        "- Bytes = every input and parameter read once + every output written once (main variant,"
        " meta-device build of the task embedded in the session's state.json, else the built-in"
        " task); above 100% means faster than the measured copy (the datasheet peak is higher)."
        " FLOPs: gemm 2*M*N*K (x batch); attention 4*B*H*S*Sk*D, /2 causal.",
        "",
        "| task | origin | language | tags | sessions | attempts | verdict history "
        "| repaired / unchanged | final | median ms | vs eager | vs compile | achieved "
        "| % ceiling |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rep.rows:
        achieved, pct = "-", "-"
        if r.gbs is not None:
            achieved, pct = f"{r.gbs:.0f} GB/s", f"{r.pct_copy:.0f}% copy"
        elif r.tflops is not None:
            achieved, pct = f"{r.tflops:.0f} TFLOP/s", f"{r.pct_peak:.0f}% peak"
        how = f"{r.final_from}, re-check" if r.times_from == "recheck" else r.final_from
        final = f"{r.final_kernel} ({how})" if r.final_kernel else "-"
        lines.append(
            f"| {r.task} | {r.origin or '-'} | {r.language or '-'} | {', '.join(r.tags)} "
            f"| {r.sessions} | {r.attempts} | {history_text(r, HISTORY_CELL_SEP)} "
            f"| {r.repaired_failures} / {r.unchanged_failures} | {final} "
            f"| {_num(r.median_ms, '.4f')} | {_num(r.speedup_eager, '.2f', 'x')} "
            f"| {_num(r.speedup_compile, '.2f', 'x')} | {achieved} | {pct} |"
        )
    lines += [
        "",
        "## Totals",
        "",
        f"- Tasks solved: {t['solved']}/{t['tasks']} ({t['sessions']} sessions)",
        f"- Tasks with a repaired failure: {t['with_repaired_failure']}/{t['tasks']}",
        f"- Tasks with a failure later passed by the same kernel: "
        f"{t['with_unchanged_failure']}/{t['tasks']}",
        f"- Solved and at least as fast as eager: {t['solved_at_least_eager']}/{t['solved']}; "
        f"as torch.compile: {t['solved_at_least_compile']}/{t['solved']}",
        *_geomean_lines(rep),
        f"- Memory-bound at >= 85% of copy bandwidth: "
        f"{t['memory_bound_at_85pct_copy']}/{t['memory_bound']}",
        *(
            [
                f"- Memory-bound at >= 85% of a copy of their own bytes (same timer): "
                f"{t['memory_bound_at_85pct_copy_at_size']}/{t['memory_bound_sized']} "
                "(a second reading; the bar is the line above)"
            ]
            if "memory_bound_sized" in t
            else []
        ),
        f"- GEMMs at >= 0.9x torch.matmul (eager): {t['gemm_at_0.9x_matmul']}/{t['gemm']}",
        *_recheck_lines(rep),
        *(
            ["", "## Plot", "", f"![final kernels: speedups and share of the ceilings]({rep.plot})"]
            if rep.plot
            else []
        ),
        *([f"- {plot_note}"] if plot_note and not rep.plot else []),
        "",
        "## Shortfalls",
        "",
        *([f"- {s}" for s in rep.shortfalls] or ["- none"]),
    ]
    notes = [f"- {r.task}: {n}" for r in rep.rows for n in r.notes]
    if notes:
        lines += ["", "## Notes", "", *notes]
    return "\n".join(lines) + "\n"


def _recheck_lines(rep: CorpusReport) -> list[str]:
    """How many re-checked finals reproduced their recorded speedup, naming the others."""
    t = rep.totals
    rechecked = [r for r in rep.rows if r.times_from == "recheck"]
    if not rechecked:
        return []
    tol = RECHECK_TOLERANCE
    outside = [
        f"{r.task} {r.recheck_ratio:.3f}"
        for r in rechecked
        if r.recheck_ratio is not None and abs(r.recheck_ratio - 1) > tol
    ]
    unknown = [r.task for r in rechecked if r.recheck_ratio is None]
    detail = [f"outside: {', '.join(outside)}"] if outside else []
    if unknown:
        detail.append(f"no recorded speedup to compare: {', '.join(unknown)}")
    extra = f" ({'; '.join(detail)})" if detail else ""
    return [
        f"- Re-checked within {tol:.0%} of the recorded speedup: "
        f"{t['recheck_within_tolerance']}/{t['recheck_with_ratio']} with a recorded speedup, "
        f"of {len(rechecked)} re-checked{extra}"
    ]
