"""``upskills teach TASKS... --teacher PROVIDER/MODEL``: run a teacher, one trace per task."""

from __future__ import annotations

import json
import re
import signal
import threading
from datetime import UTC, datetime
from pathlib import Path

import click

from upskills._cli.executor_options import executor_config, executor_options


def _default_out(teacher: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", teacher).strip("-") or "teacher"
    return Path("traces") / f"{slug}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


@click.command(context_settings={"auto_envvar_prefix": "UPSKILLS"})
@click.argument("tasks", nargs=-1, required=True)
@click.option("--teacher", required=True, envvar="UPSKILLS_TEACHER", help="PROVIDER/MODEL.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Trace folder (default traces/<teacher>-<time>); re-run with the same --out to resume.",
)
@click.option("--max-turns", type=int, default=30, show_default=True, help="Model calls per task.")
@click.option(
    "--max-tokens", type=int, default=2_000_000, show_default=True, help="Tokens per task."
)
@click.option(
    "--max-wall",
    "max_wall_s",
    type=float,
    default=3600.0,
    show_default=True,
    help="Seconds per task.",
)
@click.option("--device", default="auto", show_default=True, help="Verifier device: auto|cpu|cuda.")
@click.option("--base-url", default=None, help="Endpoint of an OpenAI-compatible server.")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option(
    "--max-output-tokens", type=int, default=8192, show_default=True, help="Tokens per model reply."
)
@click.option("--seeds", "check_seeds", type=int, default=None, help="Seeds per variant in checks.")
@click.option("--skill", "skill_refs", multiple=True, help="Skill pack (name[@version] or path).")
@click.option(
    "--skills-mode",
    type=click.Choice(["inline", "on_demand"]),
    default="inline",
    show_default=True,
    help="How --skill packs reach the teacher.",
)
@click.option("--retry-errors", is_flag=True, help="Run again tasks whose trace ended in error.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON lines.")
@executor_options
def cli(
    tasks: tuple[str, ...],
    teacher: str,
    out: Path | None,
    max_turns: int,
    max_tokens: int,
    max_wall_s: float,
    device: str,
    base_url: str | None,
    temperature: float,
    max_output_tokens: int,
    check_seeds: int | None,
    skill_refs: tuple[str, ...],
    skills_mode: str,
    retry_errors: bool,
    no_progress: bool,
    as_json: bool,
    executor: str,
    ray_address: str | None,
) -> None:
    """Run a teacher model on TASKS (built-in names or KernelBench .py files), writing traces."""
    from upskills.agent.config import AgentConfig
    from upskills.agent.teach import teach
    from upskills.executor import ExecutorError
    from upskills.llm.base import GenParams, ProviderError
    from upskills.tasks import TaskError

    on = executor_config(executor, ray_address)
    out = out or _default_out(teacher)
    packs = []
    if skill_refs:
        from upskills.skills.pack import resolve_pack

        packs = [resolve_pack(ref) for ref in skill_refs]
    config = AgentConfig(
        max_turns=max_turns,
        max_tokens=max_tokens,
        max_wall_s=max_wall_s,
        device=device,
        params=GenParams(temperature=temperature, max_tokens=max_output_tokens),
        skills_mode=skills_mode if packs else "none",  # type: ignore[arg-type]
        role="teacher",
        check_seeds=check_seeds,
    )
    options = {"base_url": base_url} if base_url else {}
    click.echo(f"traces: {out}", err=True)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None
    try:  # SIGTERM ends the current task's trace as "aborted", like Ctrl-C
        if on.name == "ray":  # tasks in parallel, one GPU each
            from upskills.executor.teach_ray import teach_on_ray

            paths = teach_on_ray(
                list(tasks),
                teacher,
                out,
                config,
                provider_options=options,
                skills=packs,
                retry_errors=retry_errors,
                address=on.ray_address,
            )
        else:
            paths = teach(
                list(tasks),
                teacher,
                out,
                config,
                provider_options=options,
                skills=packs,
                progress=not no_progress,
                retry_errors=retry_errors,
            )
    except (ProviderError, TaskError, FileNotFoundError, ValueError, ExecutorError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    _summary(paths, as_json)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _summary(paths: list[Path], as_json: bool = False) -> None:
    from rich.table import Table

    from upskills.core.console import make_console
    from upskills.trace import read_trace

    table = Table(title="teach")
    for col in ("task", "outcome", "turns", "tools", "tokens in/out", "best speedup", "trace"):
        table.add_column(col, overflow="fold")
    for path in paths:
        end = read_trace(path).end if path.exists() else None
        if as_json:
            row = {"task": path.stem, "trace": str(path), "outcome": end.outcome if end else None,
                   "totals": end.totals.model_dump() if end else None,
                   "best_speedup": end.best_speedup if end else None}  # fmt: skip
            click.echo(json.dumps(row))
            continue
        if end is None:
            table.add_row(path.stem, "missing", "", "", "", "", str(path))
            continue
        t = end.totals
        speed = f"{end.best_speedup:.2f}x" if end.best_speedup is not None else "-"
        table.add_row(
            path.stem,
            end.outcome,
            str(t.turns),
            str(t.tool_calls),
            f"{t.input_tokens}/{t.output_tokens}",
            speed,
            str(path),
        )
    if not as_json:
        make_console().print(table)
