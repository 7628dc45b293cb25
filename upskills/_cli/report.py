"""``upskills report RUN [--baseline OTHER_RUN]``: write report.md, summary.json and plots."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--baseline",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Another run to compare against (paired by student, arm and case).",
)
@click.option("--device", type=click.Choice(["cpu", "cuda"]), help="Evaluation to report.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the report files (default: the run folder).",
)
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead of the table.")
def cli(
    run_dir: Path, baseline: Path | None, device: str | None, out: Path | None, as_json: bool
) -> None:
    """Write the report of a lift run and print its table."""
    from upskills.report import write_report
    from upskills.report.render import PLOTS_SKIPPED, print_table

    try:
        report = write_report(run_dir, baseline, device, out)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(report.model_dump_json(indent=1))
        return
    print_table(report)
    where = out or run_dir
    plots = "" if PLOTS_SKIPPED in report.notes else " and plots"
    click.echo(f"wrote {where / 'report.md'} and {where / 'summary.json'}{plots}")
