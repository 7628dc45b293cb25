"""``upskills lift``: run a lift experiment; ``upskills lift eval RUN`` evaluates elsewhere."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from upskills._cli.executor_options import executor_config, executor_options


def _split(values: object) -> list[str]:
    """Comma-separated values of a repeatable option, flattened."""
    items = values if isinstance(values, tuple | list) else (values,)
    return [v.strip() for value in items for v in str(value).split(",") if v.strip()]


def command_line(name: str, params: dict[str, object]) -> str:
    """The command as a shell line, every option spelled out (recorded in each run folder)."""
    parts = ["upskills", name]
    for key, value in params.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False or value == ():
            continue
        if value is True:
            parts.append(flag)
        elif isinstance(value, tuple | list):
            for v in value:
                parts += [flag, str(v)]
        else:
            parts += [flag, str(value)]
    return shlex.join(parts)


def _fail(exc: Exception) -> None:
    raise click.ClickException(str(exc))


@click.group(invoke_without_command=True)
@click.option("--students", "students", multiple=True, help="Student names or YAML paths.")
@click.option("--skills", "skills", multiple=True, help="Skill packs: folders or name[@version].")
@click.option("--cases", "cases", multiple=True, help="Test case folders or YAML files.")
@click.option("--samples", default=3, show_default=True, help="Samples per arm x case.")
@click.option(
    "--arms",
    default="baseline,inline,on_demand,placebo,excerpt",
    show_default=True,
    help="Arm kinds, comma-separated.",
)
@click.option("--out", type=click.Path(path_type=Path), help="Run folder (resumed if it exists).")
@click.option(
    "--mode",
    type=click.Choice(["one_shot", "agent"]),
    default="one_shot",
    show_default=True,
    help="One answer per sample, or turns with verifier feedback.",
)
@click.option("--agent-turns", default=3, show_default=True, help="Turns in agent mode.")
@click.option("--seed", default=0, show_default=True, help="Run seed.")
@click.option("--allow-train", is_flag=True, help="Allow cases whose task fed a skill.")
@click.option("--traces", "traces", multiple=True, help="Trace files/folders (excerpt arm).")
@click.option("--compact", is_flag=True, help="Inline the compact skill variant.")
@click.option(
    "--rungs",
    default="choose,fill,repair,write",
    show_default=True,
    help="Ladder rungs to run (comma-separated).",
)
@click.option(
    "--off-topic", "off_topic", multiple=True, help="Pack(s) on another topic (off_topic arm)."
)
@click.option("--max-new-tokens", type=int, help="Override the students' max_new_tokens.")
@click.option("--max-cases", type=int, help="Use only the first N cases.")
@click.option("--student-device", help="Run local students on this device (cpu, cuda).")
@click.option("--device", default="auto", show_default=True, help="Evaluation device.")
@click.option("--no-eval", is_flag=True, help="Generate only; evaluate later with `lift eval`.")
@click.option("--check-seeds", default=1, show_default=True, help="Input seeds per variant.")
@click.option("--no-report", is_flag=True, help="Do not write the report at the end.")
@executor_options
@click.option(
    "--ablate-modules",
    is_flag=True,
    help="Leave-one-section-out arms of the (one) skill: which SKILL.md sections help or hurt.",
)
@click.pass_context
def cli(ctx: click.Context, **kw: object) -> None:
    """Measure the lift of skills on students (students x arms x cases x samples)."""
    if ctx.invoked_subcommand is not None:
        return
    from pydantic import ValidationError

    from upskills.lift.config import LiftConfig
    from upskills.lift.runner import LiftError, run_lift

    if not kw["students"] or not kw["cases"] or not kw["out"]:
        raise click.UsageError("--students, --cases and --out are required")
    executor = executor_config(str(kw["executor"]), kw["ray_address"])  # type: ignore[arg-type]
    on_executor = not kw["no_eval"] and executor.name != "local"
    # Click hands over plain values; the model validates and types them.
    flags = dict(
        out=str(kw["out"]),
        students=_split(kw["students"]),
        skills=_split(kw["skills"]),
        cases=_split(kw["cases"]),
        samples=kw["samples"],
        arms=_split(kw["arms"]),
        mode=kw["mode"],
        agent_turns=kw["agent_turns"],
        seed=kw["seed"],
        allow_train=bool(kw["allow_train"]),
        traces=_split(kw["traces"]),
        off_topic=_split(kw["off_topic"]),
        rungs=_split(kw["rungs"]),
        compact=bool(kw["compact"]),
        max_new_tokens=kw["max_new_tokens"],
        max_cases=kw["max_cases"],
        student_device=kw["student_device"],
        device=str(kw["device"]),
        evaluate=not kw["no_eval"] and not on_executor,
        check_seeds=kw["check_seeds"],
    )
    try:
        config = LiftConfig.model_validate(flags)
    except ValidationError as exc:
        raise click.UsageError(str(exc)) from None
    if kw["ablate_modules"]:
        out = Path(config.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "command.txt").write_text(command_line("lift", dict(kw)) + "\n", "utf-8")
        from upskills.lift.ablate_modules import ablate_modules, render_report

        try:
            click.echo(render_report(ablate_modules(config)))
        except (LiftError, ValueError, FileNotFoundError) as exc:
            _fail(exc)
        return
    from upskills.lift.runner import InfrastructureError

    try:  # command.txt is written by run_lift once every input validated
        run_dir = run_lift(config, command=command_line("lift", dict(kw)))
        if on_executor:  # generation here, evaluation on the cluster
            from upskills.executor import ExecutorError
            from upskills.lift.evaluate import evaluate_run

            try:
                evaluate_run(run_dir, config.device, config.progress, executor=executor)
            except ExecutorError as exc:
                _fail(exc)
    except (LiftError, FileNotFoundError) as exc:
        _fail(exc)
        return
    except InfrastructureError as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(3)
    click.echo(f"run folder: {run_dir}")
    if (config.evaluate or on_executor) and not kw["no_report"]:
        from upskills.report import write_report
        from upskills.report.render import print_table

        print_table(write_report(run_dir))


@cli.command("eval")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--device", default="auto", show_default=True, help="cpu, cuda or auto.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Verifier workers (local) or actors (ray); default one per GPU (local on CPU: 1).",
)
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@executor_options
def eval_cmd(
    run_dir: Path,
    device: str,
    workers: int | None,
    no_progress: bool,
    executor: str,
    ray_address: str | None,
) -> None:
    """Evaluate a run's generations (writes evaluations.<device>.jsonl as verdicts arrive).

    Resumable: rerunning skips the samples already judged on this device kind.
    """
    from upskills.executor import ExecutorError
    from upskills.lift.evaluate import evaluate_run

    config = executor_config(executor, ray_address, workers)
    try:
        path = evaluate_run(run_dir, device, progress=not no_progress, executor=config)
    except (FileNotFoundError, ValueError, ExecutorError) as exc:
        _fail(exc)
        return
    click.echo(f"wrote {path}")
