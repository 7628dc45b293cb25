"""``upskills check TASK CANDIDATE.py|FOLDER``: verify candidate kernels against one task.

A folder is a batch: every ``*.py`` in it is judged on an executor (``--executor local|ray``),
results are printed as they arrive and, with ``--out``, appended to a JSONL file that a rerun
resumes from. ``--batch LIST.jsonl`` judges pairs of (task, candidate) of different tasks one
after another through one verifier (its worker processes start once), the way a re-check of a
whole corpus on one GPU wants them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from upskills._cli.executor_options import executor_config, executor_options, start_executor

if TYPE_CHECKING:
    from upskills.verify import CheckOptions, Verifier
    from upskills.verify.verdict import BatchResult


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
        if t.watched_busy_ms:  # the watched-speed rule (verify/watched_speed.py)
            lines.append(
                f"  watched kernels: {t.watched_busy_ms:.4f} ms of GPU time in the trial after "
                f"the timed calls (the timed median is {t.median_ms / t.watched_busy_ms:.2f}x it)"
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
@click.argument("task", required=False)
@click.argument("candidate", required=False, type=click.Path(path_type=Path))
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
    "--flush",
    type=click.Choice(["write", "read"]),
    default="write",
    show_default=True,
    help="How L2 is flushed before each timed call, the baselines' too: write a 256 MiB buffer "
    "(its dirty lines' write-back lands in the timed call) or read one (L2 left clean).",
)
@click.option(
    "--audit-timed-calls/--no-audit-timed-calls",
    "audit",
    default=True,
    show_default=True,
    help="Fingerprint every timed call's outputs and verify calls drawn after the run, so a "
    "forward that reads which calls are kept cannot compute those alone "
    "(docs/design/verifier.md). Off only to measure what the audit costs.",
)
@click.option(
    "--audit-clock-calls/--no-audit-clock-calls",
    "audit_clock",
    default=True,
    show_default=True,
    help="The judge's clock check with every back-to-back call on perturbed inputs and "
    "fingerprinted (none a forward could compute alone; docs/design/verifier.md). Off only "
    "to measure what it costs.",
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
@click.option(
    "--batch",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="JSON lines of {key, task, candidate[, fresh_baselines, timing]}: judged one at a time "
    "through one verifier, each result printed (and appended to --out) as it comes; instead "
    "of TASK and CANDIDATE.",
)
@executor_options
def cli(
    task: str | None,
    candidate: Path | None,
    device: str,
    as_json: bool,
    seeds: int,
    no_timing: bool,
    fresh_baselines: bool,
    flush: str,
    audit: bool,
    audit_clock: bool,
    timeout: float,
    variants: tuple[str, ...],
    seed: int | None,
    out: Path | None,
    workers: int | None,
    executor: str,
    ray_address: str | None,
    batch: Path | None,
) -> None:
    """Verify CANDIDATE.py (a module defining ModelNew), or every .py in a folder, against TASK.

    TASK is a built-in task name (see `upskills tasks list`) or a path to a KernelBench-format
    file. Exits 0 when every candidate passes, 1 when one fails, 2 on bad input.
    """
    from upskills.tasks import TaskError, load_task
    from upskills.verify import CheckOptions, check

    config = executor_config(executor, ray_address, workers)
    options = CheckOptions(  # with --batch, an entry's own timing / fresh_baselines win
        seeds=seeds,
        timing=not no_timing,
        fresh_baselines=fresh_baselines,
        flush="read" if flush == "read" else "write",
        audit_timed_calls=audit,
        audit_clock_calls=audit_clock,
        timeout_s=timeout,
        variants=list(variants) or None,
        seed=seed,
    )
    if batch is not None:
        if task is not None or candidate is not None:
            raise CheckError("--batch replaces TASK and CANDIDATE: give one or the other")
        _check_batch(batch, options, device, as_json, out)
    if task is None or candidate is None:
        raise CheckError("give TASK and CANDIDATE (or --batch LIST.jsonl)")
    if not candidate.is_file() and not candidate.is_dir():
        raise click.BadParameter(f"no such file or folder: {candidate}", param_hint="CANDIDATE")
    try:
        task_obj = load_task(task)
    except TaskError as exc:
        raise CheckError(str(exc)) from exc
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


def _check_batch(
    batch: Path, options: CheckOptions, device: str, as_json: bool, out: Path | None
) -> None:
    """Judge each line of ``batch`` through one verifier; exits like a single check.

    A line that cannot be judged (unknown task, missing candidate) gets a result with
    ``error`` and the batch goes on. With ``out``, results are appended as they come and keys
    judged there already are skipped (an ``error`` is tried again), so a batch cut short
    resumes.
    """
    import json

    from upskills.core.jsonl import RecordWriter, RunStoreError, read_records
    from upskills.verify import Verifier
    from upskills.verify.verdict import BatchResult as Result

    entries: list[dict[str, object]] = []
    for number, line in enumerate(batch.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or not {"key", "task", "candidate"} <= entry.keys():
                raise ValueError("needs key, task and candidate")
        except ValueError as exc:
            raise CheckError(f"{batch}:{number}: not a batch entry ({exc})") from exc
        entries.append(entry)
    try:
        done = {r.key for r in read_records(out, Result) if r.verdict} if out else set()
    except RunStoreError as exc:
        raise CheckError(str(exc)) from exc
    failed = 0
    writer = RecordWriter(out, done) if out is not None else None
    try:
        with Verifier(device, options) as verifier:
            for entry in entries:
                if str(entry["key"]) in done:
                    continue
                result = _batch_one(verifier, entry, options)
                failed += result.verdict is None or not result.verdict.passed
                if writer is not None:
                    writer.keys.discard(result.key)  # an earlier error of this key
                    writer.write(result)
                if as_json:
                    click.echo(result.model_dump_json())
                elif result.verdict is not None:
                    click.echo(f"{result.key}: {_format_verdict(result.verdict)}")
                else:
                    click.echo(f"{result.key}: ERROR {result.error}")
    finally:
        if writer is not None:
            writer.close()
    raise SystemExit(0 if failed == 0 else 1)


def _batch_one(verifier: Verifier, entry: dict[str, object], options: CheckOptions) -> BatchResult:
    """One batch entry's result: its verdict, or the reason it could not be judged."""
    from upskills.tasks import TaskError, load_task
    from upskills.verify.verdict import BatchResult

    key = str(entry["key"])
    candidate = Path(str(entry["candidate"]))
    if not candidate.is_file():
        return BatchResult(key=key, error=f"no such candidate file: {candidate}")
    try:
        task = load_task(str(entry["task"]))
    except TaskError as exc:
        return BatchResult(key=key, error=str(exc))
    own = options.model_copy(
        update={
            "fresh_baselines": bool(entry.get("fresh_baselines", options.fresh_baselines)),
            "timing": bool(entry.get("timing", options.timing)),
        }
    )
    try:
        verdict = verifier.check(task, candidate, own)
    except (ValueError, RuntimeError) as exc:
        return BatchResult(key=key, error=str(exc))
    return BatchResult(key=key, verdict=verdict)
