"""``upskills tasks list|show``: browse the built-in suite or a KernelBench-format folder."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.syntax import Syntax
from rich.table import Table

from upskills.core.console import make_console
from upskills.tasks import CATEGORIES, Task, TaskError, builtin_tasks, load_folder, load_task
from upskills.tasks.source import NOT_LITERAL, inspect_source


def _variant_summary(task: Task) -> str:
    """``main*, small, ragged~``: * marks the timed variant, ~ ragged, ! GPU-only."""
    marks = []
    for v in task.all_variants():
        mark = v.name + ("*" if v.main else "") + ("~" if v.ragged else "")
        marks.append(mark + ("" if v.cpu else "!"))
    return ", ".join(marks)


def _task_json(task: Task, with_source: bool) -> dict:
    data = task.model_dump(exclude=set() if with_source else {"source"})
    data["hash"] = task.hash
    data["variants"] = [v.model_dump() for v in task.all_variants()]
    return data


@click.group("tasks")
def cli() -> None:
    """List and show kernel tasks (built-in, or from a KernelBench-format folder)."""


@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
@click.option(
    "--from",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="Load tasks from this folder of problem files instead of the built-in suite.",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    help=f"Keep tasks with this tag (repeatable; any matches). Tags: {', '.join(CATEGORIES)}.",
)
def list_cmd(as_json: bool, folder: Path | None, tags: tuple[str, ...]) -> None:
    """List tasks: name, tags, dtypes, variants and statement."""
    unknown = [t for t in tags if t not in CATEGORIES]
    if unknown:
        raise click.BadParameter(
            f"unknown tag {unknown[0]!r}; known tags: {', '.join(CATEGORIES)}", param_hint="--tag"
        )
    try:
        tasks = load_folder(folder) if folder is not None else builtin_tasks()
    except TaskError as exc:
        raise click.ClickException(str(exc)) from exc
    if tags:
        tasks = [t for t in tasks if set(t.tags) & set(tags)]
    if as_json:
        click.echo(json.dumps([_task_json(t, with_source=False) for t in tasks], indent=2))
        return
    table = Table("name", "tags", "dtypes", "variants", "statement", title=f"{len(tasks)} tasks")
    table.columns[0].no_wrap = True
    for t in tasks:
        table.add_row(
            t.name, ", ".join(t.tags), ", ".join(t.dtypes), _variant_summary(t), t.statement
        )
    console = make_console()
    console.print(table)
    console.print("variants: * timed on GPU (main), ~ ragged sizes, ! GPU only", style="dim")


@cli.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the task as JSON (with source).")
def show_cmd(name: str, as_json: bool) -> None:
    """Show a task's metadata, shape variants and reference source.

    NAME is a built-in task name or a path to a KernelBench-format .py file.
    """
    try:
        task = load_task(name)
        info = inspect_source(task.source, task.origin)
    except TaskError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(_task_json(task, with_source=True), indent=2))
        return
    console = make_console()
    console.print(f"[bold]{task.name}[/]  {task.statement}")
    console.print(f"tags: {', '.join(task.tags) or '-'}   dtypes: {', '.join(task.dtypes)}")
    console.print(f"origin: {task.origin}   hash: {task.hash}")
    if task.atol is not None or task.rtol is not None:
        console.print(f"tolerance: atol={task.atol} rtol={task.rtol}")
    defaults = {k: v for k, v in info.globals.items() if v is not NOT_LITERAL}
    table = Table("variant", "main", "cpu", "ragged", "globals")
    for v in task.all_variants():
        values = v.globals or defaults
        table.add_row(
            v.name,
            "yes" if v.main else "",
            "yes" if v.cpu else "no",
            "yes" if v.ragged else "",
            ", ".join(f"{k}={val!r}" for k, val in values.items()),
        )
    console.print(table)
    if console.is_terminal:
        console.print(Syntax(task.source, "python", line_numbers=True))
    else:
        click.echo(task.source, nl=False)
