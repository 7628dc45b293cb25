"""``upskills distill TRACES...``: traces in, skill packs and test cases out."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path())
@click.option(
    "--skills-dir",
    default="skills",
    show_default=True,
    type=click.Path(),
    help="Folder the packs are written to.",
)
@click.option(
    "--cases-dir",
    default="testcases",
    show_default=True,
    type=click.Path(),
    help="Folder the test cases are written to.",
)
@click.option("--no-cases", is_flag=True, help="Do not write test cases.")
@click.option("--suite", default="kernels", show_default=True, help="Test-case suite name.")
@click.option(
    "--group",
    type=click.Choice(["family", "domain"]),
    default="family",
    show_default=True,
    help="One pack per technique family or per task domain.",
)
@click.option("--name", default=None, help="Put every lesson in one pack with this name.")
@click.option(
    "--min-speedup",
    type=float,
    default=None,
    help="Select only traces whose best speedup vs eager reaches this.",
)
@click.option(
    "--min-prevalence",
    type=int,
    default=2,
    show_default=True,
    help="Lessons seen in fewer traces go to references/, not SKILL.md.",
)
@click.option(
    "--teacher",
    default=None,
    metavar="PROVIDER/MODEL",
    help="A model that rewrites the prose from the same evidence.",
)
@click.option(
    "--ablate",
    is_flag=True,
    help="Split multi-change perf diffs and judge each change alone (time them on --device cuda).",
)
@click.option(
    "--device",
    default="cpu",
    show_default=True,
    help="Device of the ablation verifier (cuda times; cpu checks correctness only).",
)
@click.option(
    "--ablation-cache",
    type=click.Path(),
    default=None,
    help="JSONL of ablation measurements, read and appended to (resumable) "
    "[default with --ablate: <skills-dir>/.ablations.jsonl].",
)
@click.option(
    "--ablation-read",
    type=click.Path(exists=True, dir_okay=False),
    multiple=True,
    help="Another ablation cache, only read (e.g. another GPU's); repeatable. An episode's "
    "kernels all come from one GPU's measurements.",
)
@click.option(
    "--plan",
    is_flag=True,
    help="With --ablate: judge nothing, write nothing; list the kernels the ablation still has "
    "to judge on each GPU (--gpu, else each GPU the caches name).",
)
@click.option(
    "--gpu",
    "gpus",
    multiple=True,
    metavar="NAME",
    help="With --plan: the GPU the ablation will run on (its name as torch reports it); "
    "repeatable.",
)
def cli(
    traces: tuple[str, ...],
    skills_dir: str,
    cases_dir: str,
    no_cases: bool,
    suite: str,
    group: str,
    name: str | None,
    min_speedup: float | None,
    min_prevalence: int,
    teacher: str | None,
    ablate: bool,
    device: str,
    ablation_cache: str | None,
    ablation_read: tuple[str, ...],
    plan: bool,
    gpus: tuple[str, ...],
) -> None:
    """Distill TRACES (files or folders of .jsonl) into skill packs and test cases."""
    from upskills.distill import DistillConfig, DistillError, distill

    if plan or gpus:
        if not (plan and ablate):
            raise click.UsageError("--plan goes with --ablate, and --gpu with --plan")
        own = ablation_cache or str(Path(skills_dir) / ".ablations.jsonl")
        _print_plan(traces, [own, *ablation_read], list(gpus))
        return
    config = DistillConfig(
        group=group,  # type: ignore[arg-type]
        name=name,
        min_speedup=min_speedup,
        min_prevalence=min_prevalence,
        teacher=teacher,
        suite=suite,
        ablate=ablate,
        device=device,
        ablation_cache=ablation_cache
        or (str(Path(skills_dir) / ".ablations.jsonl") if ablate else None),
        ablation_read=list(ablation_read),
    )
    try:
        result = distill(traces, skills_dir, None if no_cases else cases_dir, config)
    except DistillError as exc:
        raise click.ClickException(str(exc)) from exc
    for err in result.errors:
        click.echo(f"skipped malformed line: {err}", err=True)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(
        f"{result.traces_read} traces read, {result.traces_selected} selected, "
        f"{result.lessons} lessons, {result.seconds:.1f}s"
    )
    if result.ablations:
        counts = ", ".join(f"{n} {k}" for k, n in result.ablations.items())
        click.echo(f"multi-change perf episodes: {counts}")
    if result.cross_session:
        click.echo(
            f"{result.cross_session} sessions continued an earlier session's kernel "
            "(their first attempt compared with its final kernel, timed in another run)"
        )
    for pack in result.packs:
        click.echo(f"  {pack.name}@{pack.version} ({pack.change}) {pack.path}")
    if result.cases:
        click.echo(f"  {len(result.cases)} test cases in {result.cases[0].parent}")


def _print_plan(traces: tuple[str, ...], caches: list[str], gpus: list[str]) -> None:
    """A table a GPU: the kernels ``--ablate`` would still judge there, by task."""
    from collections import Counter

    from rich.table import Table

    from upskills.core.console import make_console
    from upskills.distill import DistillError
    from upskills.distill.plan import ablation_plan, cache_gpus

    console = make_console()
    try:
        targets: list[str | None] = [*gpus] or [*cache_gpus(caches)] or [None]
        for gpu in targets:
            unloadable: dict[str, str] = {}
            left = ablation_plan(traces, caches, gpu, unloadable)
            where = gpu or "any GPU (the caches name none)"
            console.print(f"[bold]left to judge on {where}[/]: {len(left)} kernels")
            for why in sorted(unloadable.values()):
                console.print(f"[yellow]not judgeable here[/] (its episodes are left out): {why}")
            table = Table("task", "kernels", "CUDA", "Triton")
            by_task = Counter((k.task_name, k.backend) for k in left)
            for task in sorted({k.task_name for k in left}):
                cuda, triton = by_task[(task, "cuda")], by_task[(task, "triton")]
                table.add_row(task, str(cuda + triton), str(cuda), str(triton))
            cuda = sum(1 for k in left if k.backend == "cuda")
            table.add_row("all", str(len(left)), str(cuda), str(len(left) - cuda), style="bold")
            console.print(table)
    except (DistillError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
