"""``upskills cases list|show|check``."""

from __future__ import annotations

import click

from upskills._cli.executor_options import executor_config, executor_options, start_executor

_DIR = click.argument("path", default="testcases", type=click.Path())


@click.group()
def cli() -> None:
    """List, show and check test cases."""


def _load(path: str):  # noqa: ANN202 - list of TestCase
    from upskills.cases.model import CaseError, load_cases

    try:
        return load_cases(path)
    except CaseError as exc:
        raise click.ClickException(str(exc)) from exc


@cli.command("list")
@_DIR
@click.option("--split", type=click.Choice(["train", "heldout"]), default=None)
def list_(path: str, split: str | None) -> None:
    """List the cases under PATH."""
    for case in _load(path):
        if split is None or case.split == split:
            click.echo(f"{case.id}\t{case.split}\t{case.task}\t{','.join(case.variants)}")


@cli.command()
@click.argument("case_id")
@_DIR
@click.option("--prompt", "prompt_only", is_flag=True, help="Print only the student's prompt.")
def show(case_id: str, path: str, prompt_only: bool) -> None:
    """Show case CASE_ID from PATH."""
    from upskills.cases.model import dump_case

    found = [c for c in _load(path) if c.id == case_id]
    if not found:
        raise click.ClickException(f"no case {case_id!r} under {path}")
    click.echo(found[0].prompt if prompt_only else dump_case(found[0]), nl=False)


@cli.command()
@_DIR
@click.option("--case", "case_ids", multiple=True, help="Only these case ids.")
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda.")
@click.option(
    "--kernel",
    default=None,
    type=click.Path(exists=True),
    help="A known-good kernel file to check (with a single --case).",
)
@click.option(
    "--kernels-dir",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="A folder of known-good kernels named <task>.py, used where present.",
)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Workers or actors.")
@executor_options
def check(
    path: str,
    case_ids: tuple[str, ...],
    device: str,
    kernel: str | None,
    kernels_dir: str | None,
    workers: int | None,
    executor: str,
    ray_address: str | None,
) -> None:
    """Prove each case under PATH solvable (known-good kernel, else the reference runs).

    Known-good kernels are judged on the executor (``--executor ray`` spreads them over a
    cluster); results print as they complete.
    """
    from pathlib import Path

    from upskills.cases.check import check_cases
    from upskills.core.device import resolve_device as device_kind

    config = executor_config(executor, ray_address, workers)
    cases = [c for c in _load(path) if not case_ids or c.id in case_ids]
    if kernel and len(cases) != 1:
        raise click.ClickException("--kernel needs exactly one case (use --case ID)")
    kernels: dict[str, str | Path] = {}
    for case in cases:
        own = Path(kernels_dir) / f"{case.task}.py" if kernels_dir else None
        chosen = kernel or (own if own is not None and own.is_file() else None)
        if chosen is not None:
            kernels[case.id] = chosen
    with start_executor(config, device_kind(device)) as ex:
        results = list(_echo_each(check_cases(cases, ex, kernels)))
    failed = sum(not r.passed for r in results)
    if failed:
        raise click.ClickException(f"{failed} of {len(cases)} case(s) failed")


def _echo_each(results):  # noqa: ANN001, ANN202 - CaseChecks, passed through
    for result in results:
        click.echo(
            f"{'ok' if result.passed else 'FAIL'}\t{result.case}\t{result.method}\t{result.message}"
        )
        yield result
