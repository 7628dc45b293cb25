"""``upskills traces list|show|stats|export|import``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from upskills.core.console import make_console
from upskills.trace import TraceFormatError, iter_trace_files, read_trace, trace_stats
from upskills.trace.events import ModelCall, Note, RunEnd, RunStart, ToolCall, ToolResult
from upskills.trace.stats import tasks_repaired_across_sessions


def _out() -> Console:
    return make_console()


def _err() -> Console:
    return make_console(stderr=True)


def _files(paths: tuple[str, ...]) -> list[Path]:
    try:
        files = list(iter_trace_files(paths or ("traces",)))
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from exc
    if not files:
        raise click.ClickException(
            f"no trace files (*.jsonl) under {', '.join(paths or ('traces',))}"
        )
    return files


def _read(path: Path, strict: bool):
    try:
        trace = read_trace(path, strict=strict)
    except TraceFormatError as exc:
        raise click.ClickException(str(exc)) from exc
    for err in trace.errors:
        _err().print(f"[yellow]skipped[/] {err}")
    return trace


@click.group("traces")
def cli() -> None:
    """List, show, summarise, export and import traces."""


@cli.command("list")
@click.argument("paths", nargs=-1)
@click.option("--strict", is_flag=True, help="Stop at the first malformed line.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per trace.")
def list_cmd(paths: tuple[str, ...], strict: bool, as_json: bool) -> None:
    """List trace files with task, agent, outcome and best speedup."""
    table = Table("trace", "task", "agent", "events", "outcome", "best speedup")
    for f in _files(paths):
        t = _read(f, strict)
        st = trace_stats(t)
        if as_json:
            row = {"path": str(f), "task": st.task, "agent": st.agent, "events": len(t.events),
                   "outcome": st.outcome, "best_speedup": st.best_speedup}  # fmt: skip
            click.echo(json.dumps(row))
            continue
        sp = f"{st.best_speedup:.2f}x" if st.best_speedup else "-"
        table.add_row(
            str(f),
            st.task or "?",
            st.agent or "?",
            str(len(t.events)),
            st.outcome or "[red]no run_end[/]",
            sp,
        )
    if not as_json:
        _out().print(table)


def _show_line(e) -> str:  # noqa: C901 - one branch per event kind
    if isinstance(e, RunStart):
        return (
            f"[bold]run_start[/] task={e.task} ({e.task_hash}) role={e.agent_role} "
            f"agent={e.agent_name} model={e.provider}/{e.model} env={e.environment}"
        )
    if isinstance(e, ModelCall):
        calls = ", ".join(c.name for c in e.tool_calls) or "-"
        text = e.response_text.strip().replace("\n", " ")
        return (
            f"[cyan]model_call[/] {e.model} in={e.usage.input_tokens} out={e.usage.output_tokens} "
            f"{e.latency_s:.1f}s stop={e.stop_reason} tools=[{calls}] {text[:160]}"
        )
    if isinstance(e, ToolCall):
        args = {
            k: (v if len(str(v)) < 60 else f"<{len(str(v))} chars>") for k, v in e.arguments.items()
        }
        return f"[magenta]tool_call[/] {e.tool_name} {args}"
    if isinstance(e, ToolResult):
        if e.verdict is not None:
            v = e.verdict
            sp = f" speedup={v.speedup_eager:.2f}x" if v.speedup_eager else ""
            status = "[green]PASS[/]" if v.passed else f"[red]FAIL {v.error_class}[/]"
            return f"[magenta]tool_result[/] {e.tool_name} {status}{sp} {v.message[:160]}"
        return f"[magenta]tool_result[/] {e.tool_name} {(e.error or e.output)[:160]!r}"
    if isinstance(e, Note):
        return f"[yellow]note[/] ({e.kind}) {e.text[:200]}"
    if isinstance(e, RunEnd):
        return (
            f"[bold]run_end[/] outcome={e.outcome} best_speedup={e.best_speedup} "
            f"turns={e.totals.turns} tool_calls={e.totals.tool_calls}"
        )
    return str(e)


@cli.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--strict", is_flag=True, help="Stop at the first malformed line.")
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON lines.")
def show_cmd(path: str, strict: bool, as_json: bool) -> None:
    """Show a trace, event by event."""
    trace = _read(Path(path), strict)
    if not trace.events:  # an empty file or one of malformed lines is no trace, not a run cut short
        raise click.ClickException(
            f"no trace event in {path}" + (" (every line was malformed)" if trace.errors else "")
        )
    out = _out()
    for e in trace.events:
        if as_json:
            click.echo(e.model_dump_json(by_alias=True))
        else:
            out.print(f"{e.ts[11:23]} {_show_line(e)}", highlight=False, markup=True)
    if trace.end is None and not as_json:
        _out().print("[red]no run_end: the run was interrupted (the prefix above is valid)[/]")


@cli.command("stats")
@click.argument("paths", nargs=-1)
@click.option("--strict", is_flag=True, help="Stop at the first malformed line.")
@click.option("--json", "as_json", is_flag=True, help="Print per-trace stats and totals as JSON.")
def stats_cmd(paths: tuple[str, ...], strict: bool, as_json: bool) -> None:
    """Turns, tool calls, tokens, verdicts and repairs per trace, with totals."""
    traces = [_read(f, strict) for f in _files(paths)]
    stats = [trace_stats(t) for t in traces]
    solved = [s for s in stats if s.solved]
    totals = {
        "traces": len(stats),
        "solved": len(solved),
        "solved_tasks": len({s.task for s in solved}),
        "with_repaired_failure": sum(1 for s in stats if s.repaired_failures > 0),
        "solved_with_repaired_failure": sum(1 for s in solved if s.repaired_failures > 0),
        # one agent's sessions on a task read as one run: a failure fixed in a later session
        "tasks_repaired_across_sessions": len(tasks_repaired_across_sessions(traces)),
        "solved_cuda_tasks": len({s.task for s in solved if s.language == "cuda"}),
        "solved_triton_tasks": len({s.task for s in solved if s.language == "triton"}),
        "solved_kernelbench_tasks": len({s.task for s in solved if s.origin == "kernelbench"}),
        "turns": sum(s.turns for s in stats),
        "tool_calls": sum(s.tool_calls for s in stats),
        "input_tokens": sum(s.input_tokens for s in stats),
        "output_tokens": sum(s.output_tokens for s in stats),
        "verdicts": sum(s.verdicts for s in stats),
        "passed_verdicts": sum(s.passed_verdicts for s in stats),
    }
    if as_json:
        click.echo(
            json.dumps({"traces": [s.model_dump() for s in stats], "totals": totals}, indent=2)
        )
        return
    table = Table(
        "task",
        "outcome",
        "turns",
        "tools",
        "tokens in/out",
        "verdicts pass/all",
        "repaired",
        "failures",
        "best speedup",
        "kernel",
        "origin",
        "gpu",
    )
    for s in stats:
        fails = ", ".join(f"{k}:{v}" for k, v in s.failure_classes.items()) or "-"
        sp = f"{s.best_speedup:.2f}x" if s.best_speedup else "-"
        table.add_row(
            s.task or "?",
            s.outcome or "no run_end",
            str(s.turns),
            str(s.tool_calls),
            f"{s.input_tokens}/{s.output_tokens}",
            f"{s.passed_verdicts}/{s.verdicts}",
            str(s.repaired_failures),
            fails,
            sp,
            s.language or "-",
            s.origin or "-",
            s.gpu or "-",
        )
    _out().print(table)
    _out().print(" ".join(f"{k}={v}" for k, v in totals.items()))


@cli.command("export")
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["otel"]), default="otel", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
def export_cmd(paths: tuple[str, ...], fmt: str, out: str | None) -> None:
    """Export traces as OTel GenAI spans (OTLP/JSON)."""
    from upskills.trace.otel import export_otel

    doc = export_otel([_read(f, False) for f in _files(paths)])
    text = json.dumps(doc, indent=1)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
        _err().print(f"wrote {out}")
    else:
        sys.stdout.write(text + "\n")


@cli.command("report")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="reports/teacher-corpus.md",
    show_default=True,
    help="Markdown file to write.",
)
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write JSON here.")
@click.option(
    "--ceilings",
    "ceilings_file",
    type=click.Path(dir_okay=False),
    envvar="UPSKILLS_CEILINGS",
    help="Ceilings JSON (copy_gb_per_s, matmul_float16_tflops, gpu) to divide by "
    "[default: 4300 GB/s and 790 TFLOP/s, measured on the H200].",
)
@click.option(
    "--copy-by-size",
    "copy_by_size_file",
    type=click.Path(dir_okay=False),
    help="Ceilings JSON whose copy_by_size (a copy at several sizes, same GPU) gives each "
    "memory-bound kernel's share of a copy of its own bytes, beside the bar's "
    "[default: --ceilings' own, if it has one].",
)
@click.option(
    "--copy-bandwidth-gbs",
    type=click.FloatRange(min=0, min_open=True),
    help="Copy ceiling, GB/s of read + write bytes; overrides --ceilings.",
)
@click.option(
    "--peak-tflops",
    type=click.FloatRange(min=0, min_open=True),
    help="Dense fp16 torch.matmul peak, TFLOP/s; overrides --ceilings.",
)
@click.option(
    "--recheck",
    "recheck_files",
    type=click.Path(dir_okay=False),
    multiple=True,
    help="Re-check rows (JSON lines with candidate_hash, median_ms, speedup, speedup_compile): "
    "a final kernel found there takes its times from it, e.g. from the GPU calls that measured "
    "the ceilings (repeatable; the last file's row wins).",
)
def report_cmd(
    paths: tuple[str, ...],
    out: str,
    json_out: str | None,
    ceilings_file: str | None,
    copy_by_size_file: str | None,
    copy_bandwidth_gbs: float | None,
    peak_tflops: float | None,
    recheck_files: tuple[str, ...],
) -> None:
    """Write a Markdown report of a teacher corpus: one row per task, geomeans, shortfalls.

    A task worked in several sessions is one row, its verdict history kept per session.
    """
    import shlex

    from upskills.report.corpus import write_corpus_report
    from upskills.report.corpus_ceilings import corpus_ceilings

    files = _files(paths)
    argv = ["upskills", "traces", "report", *paths]
    argv += ["--ceilings", ceilings_file] if ceilings_file else []
    argv += ["--copy-by-size", copy_by_size_file] if copy_by_size_file else []
    argv += [a for f in recheck_files for a in ("--recheck", f)]
    argv += ["--out", out] + (["--json", json_out] if json_out else [])
    try:
        ceilings = corpus_ceilings(
            ceilings_file, copy_bandwidth_gbs, peak_tflops, copy_by_size_file
        )
        if ceilings_file is None or copy_bandwidth_gbs is not None:
            argv += ["--copy-bandwidth-gbs", f"{ceilings.copy_bandwidth_gbs:g}"]
        if ceilings_file is None or peak_tflops is not None:
            argv += ["--peak-tflops", f"{ceilings.peak_tflops:g}"]
        rep = write_corpus_report(files, out, json_out, shlex.join(argv), ceilings, recheck_files)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    t = rep.totals
    plot = f", plot {Path(out).parent / rep.plot}" if rep.plot else ""
    _err().print(f"wrote {out}" + (f" and {json_out}" if json_out else "") + plot)
    _out().print(
        f"{t['solved']}/{t['tasks']} tasks solved ({t['sessions']} sessions), "
        f"{t['solved_at_least_eager']} at least as fast as eager, "
        f"{len(rep.shortfalls)} shortfalls",
        highlight=False,
    )


@cli.group("import")
def import_group() -> None:
    """Import other agents' logs as traces."""


@import_group.command("claude-code")
@click.argument("source", type=click.Path(exists=True))
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Trace file to write.")
@click.option("--task", default="unknown", show_default=True, help="Task the session worked on.")
def import_claude_code_cmd(source: str, out: str, task: str) -> None:
    """Import a Claude Code session: a SESSION.jsonl file or its session folder.

    Subagent transcripts (``SESSION/subagents/agent-*.jsonl``) become child spans; malformed
    rows are skipped with a warning naming their file and line.
    """
    from upskills.trace.importers.claude_code import import_claude_code

    task_hash = ""
    try:
        from upskills.tasks import load_task

        task_hash = load_task(task).hash
    except Exception:  # noqa: BLE001 - a label that is not a task is allowed
        task_hash = ""
    try:
        res = import_claude_code(source, out, task=task, task_hash=task_hash)
    except (FileExistsError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    for err in res.skipped:
        _err().print(f"[yellow]warning: skipped[/] {err}", highlight=False, soft_wrap=True)
    subs = f" ({res.subagents} subagents)" if res.subagents else ""
    _out().print(f"wrote {res.events} events to {res.path}{subs}", soft_wrap=True)
