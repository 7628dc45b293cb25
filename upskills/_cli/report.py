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
def cli(run_dir: Path, baseline: Path | None, device: str | None) -> None:
    """Write the report of a lift run and print its table."""
    from upskills.report import write_report
    from upskills.report.render import print_table

    try:
        report = write_report(run_dir, baseline, device)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    print_table(report)
    click.echo(f"wrote {run_dir / 'report.md'}, {run_dir / 'summary.json'} and plots")
