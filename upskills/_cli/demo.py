"""``upskills demo``: the whole pipeline on the embedded default, offline, on CPU."""

from __future__ import annotations

from pathlib import Path

import click

from upskills._cli.lift import command_line


@click.command()
@click.option(
    "--out", type=click.Path(path_type=Path), default=Path("reports/demo"), show_default=True
)
@click.option(
    "--traces", type=click.Path(path_type=Path), default=Path("traces"), show_default=True
)
@click.option("--cases", default=2, show_default=True, help="Held-out write cases measured.")
@click.option(
    "--choose", default=10, show_default=True, help="Held-out choose cases measured (0: none)."
)
@click.option(
    "--ladder",
    type=click.Path(path_type=Path),
    default=Path("testcases/ladder-tiling"),
    show_default=True,
    help="Ladder cases the choose cases come from.",
)
@click.option("--samples", default=1, show_default=True, help="Samples per arm x case.")
@click.option("--max-new-tokens", default=160, show_default=True, help="Student answer length.")
@click.option("--student", default="smollm2-135m", show_default=True, help="Student name/YAML.")
@click.option("--skill", help="Pack to measure (default: most SKILL.md lessons, then most traces).")
@click.option("--device", default="cpu", show_default=True, help="Evaluation device.")
@click.option("--student-device", help="Run a local student on this device (e.g. cuda).")
@click.option("--seed", default=0, show_default=True, help="Run seed.")
def cli(
    out: Path,
    traces: Path,
    cases: int,
    choose: int,
    ladder: Path,
    samples: int,
    max_new_tokens: int,
    student: str,
    skill: str | None,
    device: str,
    student_device: str | None,
    seed: int,
) -> None:
    """Distill the shipped traces, measure the skill's lift on SmolLM2-135M, write the report.

    Two rungs of the case ladder: ``choose`` (rate next to its chance level, 1/k) and ``write``;
    each lift is printed with its 95% interval.
    """
    from upskills.demo import DemoOptions, run_demo
    from upskills.lift.runner import LiftError
    from upskills.report import write_report
    from upskills.report.render import print_table

    options = DemoOptions(
        out=out,
        traces=traces,
        cases=cases,
        choose=choose,
        ladder=ladder,
        samples=samples,
        max_new_tokens=max_new_tokens,
        student=student,
        skill=skill,
        device=device,
        student_device=student_device,
        seed=seed,
    )
    (out / "run").mkdir(parents=True, exist_ok=True)
    params = click.get_current_context().params
    (out / "run" / "command.txt").write_text(command_line("demo", params) + "\n", "utf-8")
    try:
        run_dir = run_demo(options)
    except (LiftError, ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None
    print_table(write_report(run_dir))
    click.echo(f"report: {run_dir / 'report.md'}")
