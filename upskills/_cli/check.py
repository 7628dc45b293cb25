"""``upskills check TASK CANDIDATE.py|FOLDER``: verify candidate kernels against one task.

A folder is a batch: every ``*.py`` in it is judged on an executor (``--executor local|ray``),
results are printed as they arrive and, with ``--out``, appended to a JSONL file that a rerun
resumes from.
"""

from __future__ import annotations

from pathlib import Path

import click

from upskills._cli.executor_options import executor_config, executor_options, start_executor


def _format_verdict(verdict) -> str:  # noqa: ANN001 - a Verdict; imported lazily
    status = (
        "PASSED" if verdict.passed else f"FAILED ({verdict.error_class}, stage {verdict.stage})"
    )
    guard = f" guard {verdict.guard}" if verdict.guard else ""
    lines = [
        f"{status}: task {verdict.task} [{verdict.task_hash}] on {verdict.gpu or verdict.device}"
        f"{guard} (seed {verdict.seed}; replay with --seed {verdict.seed})",
        f"  {verdict.message}",
    ]
    for r in verdict.variants:
        mark = "ok " if r.passed else "BAD"
        err = f" max_abs_err={r.max_abs_err:.3g}" if r.max_abs_err is not None else ""
        rel = f" max_rel_err={r.max_rel_err:.3g}" if r.max_rel_err is not None else ""
        why = f"  {r.error_class}" if r.error_class else ""
        dom = f" inputs={r.domain}" if r.domain != "normal" else ""
        shape = " " + ",".join(f"{k}={v}" for k, v in r.shape.items()) if r.shape else ""
        lines.append(f"  {mark} variant={r.variant}{shape} seed={r.seed}{dom}{err}{rel}{why}")
    if verdict.timing is not None:
        t = verdict.timing
        lines.append(
            f"  timing: median {t.median_ms:.4f} ms (p10 {t.p10_ms:.4f}, p90 {t.p90_ms:.4f}, "
            f"spread {t.spread:.1%}, {t.reps} reps)"
        )
        for name, b in verdict.baselines.items():
            lines.append(f"  baseline {name}: median {b.median_ms:.4f} ms")
    else:
        lines.append(f"  timing: {verdict.timing_status}")
    lines.extend(f"  note: {note}" for note in verdict.notes)
    lines.append(f"  ({verdict.duration_s:.1f} s)")
    return "\n".join(lines)


class CheckError(click.ClickException):
    """A bad task file or option: exit status 2, distinct from a failed verdict (1)."""

    exit_code = 2


@click.command()
@click.argument("task")
@click.argument("candidate", type=click.Path(path_type=Path))
@click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="Where to run: cuda, or cpu (Triton interpreter, correctness only).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the Verdict as one JSON object.")
@click.option(
    "--seeds",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="Input seeds per shape variant.",
)
@click.option("--no-timing", is_flag=True, help="Skip timing (correctness only).")
@click.option(
    "--fresh-baselines",
    is_flag=True,
    help="Time eager and torch.compile again in this check (side by side with the candidate) "
    "instead of reading the baseline cache.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=120.0,
    show_default=True,
    help="Seconds the whole check may take before the worker is killed.",
)
@click.option("--variant", "variants", multiple=True, help="Check only this variant (repeatable).")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="The check's seed, to replay a verdict (default: a fresh one per check).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Folder batches: append results to this JSONL file and resume from it.",
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="Workers or actors (batches)."
)
@executor_options
def cli(
    task: str,
    candidate: Path,
    device: str,
    as_json: bool,
    seeds: int,
    no_timing: bool,
    fresh_baselines: bool,
    timeout: float,
    variants: tuple[str, ...],
    seed: int | None,
    out: Path | None,
    workers: int | None,
    executor: str,
    ray_address: str | None,
) -> None:
    """Verify CANDIDATE.py (a module defining ModelNew), or every .py in a folder, against TASK.

    TASK is a built-in task name (see `upskills tasks list`) or a path to a KernelBench-format
    file. Exits 0 when every candidate passes, 1 when one fails, 2 on bad input.
    """
    from upskills.tasks import TaskError, load_task
    from upskills.verify import CheckOptions, check

    config = executor_config(executor, ray_address, workers)
    if not candidate.is_file() and not candidate.is_dir():
        raise click.BadParameter(f"no such file or folder: {candidate}", param_hint="CANDIDATE")
    try:
        task_obj = load_task(task)
    except TaskError as exc:
        raise CheckError(str(exc)) from exc
    options = CheckOptions(
        seeds=seeds,
        timing=not no_timing,
        fresh_baselines=fresh_baselines,
        timeout_s=timeout,
        variants=list(variants) or None,
        seed=seed,
    )
    if candidate.is_dir():
        _check_folder(task_obj, candidate, options, device, as_json, out, config)
    try:
        verdict = check(task_obj, candidate, device=device, options=options)
    except (ValueError, RuntimeError) as exc:
        raise CheckError(str(exc)) from exc
    if as_json:
        click.echo(verdict.model_dump_json())
    else:
        click.echo(_format_verdict(verdict))
    raise SystemExit(0 if verdict.passed else 1)


def _check_folder(
    task: object,
    folder: Path,
    options: object,
    device: str,
    as_json: bool,
    out: Path | None,
    config: object,
) -> None:
    """Judge every ``*.py`` in ``folder`` on the executor; exits like a single check."""
    from upskills.core.device import resolve_device
    from upskills.executor import UnitResult, WorkUnit, run_units

    paths = sorted(folder.glob("*.py"))
    if not paths:
        raise CheckError(f"no *.py candidates in {folder}")
    from upskills.core.hashing import kernel_hash as source_hash

    sources = {p.name: p.read_text() for p in paths}
    units = [  # keyed by name and content, so an edited file is judged again on resume
        WorkUnit(key=f"{name}@{source_hash(src)}", task=task, candidate=src, options=options)  # type: ignore[arg-type]
        for name, src in sources.items()
    ]

    def show(result: UnitResult) -> None:
        v = result.verdict
        if as_json:
            click.echo(result.model_dump_json())
        else:
            status = "PASSED" if v.passed else f"FAILED ({v.error_class}, stage {v.stage})"
            click.echo(f"{status}\t{result.key}\t{v.message.splitlines()[0] if v.message else ''}")

    with start_executor(config, resolve_device(device)) as ex:
        try:
            results = run_units(units, ex, out, on_result=show)
        except (ValueError, RuntimeError) as exc:
            raise CheckError(str(exc)) from exc
    failed = sum(not r.verdict.passed for r in results)
    if not as_json:
        click.echo(f"{len(results) - failed} of {len(results)} passed ({ex.name} executor)")
    raise SystemExit(0 if failed == 0 else 1)
