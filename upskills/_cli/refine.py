"""``upskills refine SKILL --from RUN``: a new pack version that addresses student failures."""

from __future__ import annotations

import click


@click.command()
@click.argument("skill")
@click.option(
    "--from",
    "run",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="A lift run folder that used the skill (its train-case failures are read).",
)
@click.option("--skills-dir", default="skills", show_default=True, type=click.Path())
@click.option(
    "--rerun", is_flag=True, help="Run the lift of old vs new on the run's held-out cases."
)
def cli(skill: str, run: str, skills_dir: str, rerun: bool) -> None:
    """Refine SKILL from the failures of its students on train cases of RUN."""
    from upskills.lift.refine import refine

    try:
        result = refine(skill, run, skills_dir)
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not result.new_version:
        click.echo(f"{result.train_samples} train samples read; no failure to address.")
        return
    for f in result.failures:
        click.echo(f"  {f.error_class}: {f.count} failed samples ({', '.join(f.cases[:4])})")
    click.echo(f"{result.skill} -> {result.new_version} ({result.train_samples} train samples)")
    if result.rerun_command:
        click.echo(f"measure it on held-out cases: {result.rerun_command}")
    if rerun and result.rerun_config:
        from upskills.lift.config import LiftConfig
        from upskills.lift.runner import LiftError, run_lift

        try:
            run_dir = run_lift(LiftConfig(**result.rerun_config))
        except LiftError as exc:
            raise click.ClickException(str(exc)) from exc
        from upskills.report import write_report
        from upskills.report.render import print_table

        print_table(write_report(run_dir))
