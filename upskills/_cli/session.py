"""``upskills session start|call|note|end``: trace an external agent, one shell command a step."""

from __future__ import annotations

import json
from pathlib import Path

import click

from upskills.trace.events import RunOutcome

DIR = click.Path(file_okay=False, path_type=Path)


@click.group(context_settings={"auto_envvar_prefix": "UPSKILLS"})
def cli() -> None:
    """Drive a traced session as an external teacher (a person or a coding agent)."""


@cli.command()
@click.argument("task")
@click.option("--dir", "folder", type=DIR, required=True, help="Session folder to create.")
@click.option("--agent-name", default="external", show_default=True, help="Who is working.")
@click.option("--provider", default=None, help="The agent's model provider, if known.")
@click.option("--model", default=None, help="The agent's model, if known.")
@click.option("--device", default="auto", show_default=True, help="auto|cpu|cuda.")
def start(
    task: str, folder: Path, agent_name: str, provider: str | None, model: str | None, device: str
) -> None:
    """Start a session on TASK (a built-in name or a KernelBench .py) in a new folder."""
    from upskills.agent.session import Session, SessionError
    from upskills.agent.toolbox import describe_task
    from upskills.tasks import TaskError

    try:
        session = Session.start(
            task, folder, agent_name=agent_name, provider=provider, model=model, device=device
        )
    except (SessionError, TaskError, FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"session started in {folder} (trace {session.trace_path.name})", err=True)
    click.echo(describe_task(session.state.task, _hardware(device), device))


def _hardware(device: str) -> dict:
    from upskills.agent.environment import hardware

    return hardware(device)


@cli.command()
@click.argument("folder", type=DIR)
@click.argument("tool")
@click.option(
    "--file",
    "kernel_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Kernel source file, passed as `source`.",
)
@click.option("--arg", "args", multiple=True, help="Tool argument k=v (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print output, error, verdict as JSON.")
@click.option("--device", default="auto", show_default=True, help="auto|cpu|cuda.")
@click.option("--seeds", type=int, default=None, help="Seeds per variant (default: verifier's).")
@click.option(
    "--ceilings",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    envvar="UPSKILLS_CEILINGS",
    default=None,
    help="Ceilings JSON for profile (env UPSKILLS_CEILINGS; default: measured on CUDA).",
)
def call(
    folder: Path,
    tool: str,
    kernel_file: Path | None,
    args: tuple[str, ...],
    as_json: bool,
    device: str,
    seeds: int | None,
    ceilings: Path | None,
) -> None:
    """Run TOOL (read_task, write_kernel, check, benchmark, profile, submit) in the session.

    The verifier runs on this machine; the verdict records this machine's GPU and versions.
    Exits 1 when the tool itself fails (no kernel yet, bad argument), not on a failing verdict.
    """
    from upskills.agent.session import Session, SessionError

    arguments: dict[str, str] = {}
    for item in args:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not k=v", param_hint="--arg")
        arguments[key] = value
    if kernel_file is not None:
        arguments["source"] = kernel_file.read_text(encoding="utf-8")
    try:
        session = Session.open(folder, device=device)
        outcome = session.call(tool, arguments, seeds=seeds, ceilings=ceilings)
    except SessionError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        payload = {
            "output": outcome.output,
            "error": outcome.error,
            "kernel_hash": outcome.kernel_hash,
            "verdict": outcome.verdict.model_dump(mode="json") if outcome.verdict else None,
            "profile": outcome.profile.model_dump(mode="json") if outcome.profile else None,
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        click.echo(outcome.output)
    if outcome.error is not None:
        raise SystemExit(1)


@cli.command()
@click.argument("folder", type=DIR)
@click.argument("text")
@click.option("--kind", default="note", show_default=True, help="note, plan, warning, ...")
def note(folder: Path, text: str, kind: str) -> None:
    """Add a note to the session's trace."""
    from upskills.agent.session import Session, SessionError

    try:
        Session.open(folder).note(text, kind=kind)
    except SessionError as exc:
        raise click.ClickException(str(exc)) from exc


@cli.command()
@click.argument("folder", type=DIR)
@click.option(
    "--outcome",
    type=click.Choice([o.value for o in RunOutcome]),
    default=None,
    help="Default: solved if the last submit passed, else unsolved.",
)
@click.option("--message", default="", help="Why the session ended.")
def end(folder: Path, outcome: str | None, message: str) -> None:
    """End the session: run_end with totals and the best passing kernel."""
    from upskills.agent.session import Session, SessionError

    try:
        event = Session.open(folder).end(outcome, message)
    except SessionError as exc:
        raise click.ClickException(str(exc)) from exc
    best = event.best_kernel_hash or "none"
    click.echo(f"{event.outcome}: {event.totals.tool_calls} tool calls, best passing kernel {best}")
