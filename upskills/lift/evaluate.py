"""The evaluation phase: the verifier judges every generated kernel, one line per sample.

Runs anywhere the run folder is copied: it needs only ``run.json`` and ``generations.jsonl``.
Results go to ``evaluations.<device>.jsonl`` so CPU (Triton interpreter, correctness only) and
GPU evaluations of the same generations sit side by side. Identical kernels for the same case are
judged once per run (the verdict is a function of task and source). The verifier work runs on
an executor (``local`` workers on this host, or ``ray`` actors across a cluster); each verdict is
appended the moment it comes back, so a killed evaluation resumes without redoing or duplicating.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from upskills.core.device import resolve_device
from upskills.lift.config import CaseInfo, LiftConfig, load_manifest
from upskills.lift.store import (
    GENERATIONS,
    EvaluationRecord,
    GenerationRecord,
    RecordWriter,
    evaluations_name,
    read_records,
)

if TYPE_CHECKING:
    from upskills.executor import Executor, ExecutorConfig
    from upskills.verify.options import CheckOptions
    from upskills.verify.verdict import Verdict
    from upskills.verify.verifier import Verifier


SALT_FILE = "check_salt"
"""The run folder's secret for its check seeds (:func:`check_salt`)."""


def check_salt(run_dir: Path) -> str:
    """The run's secret salt for its check seeds: drawn by its first evaluation, then kept.

    Seeds from the run's seed and a unit's key alone could be worked out by a candidate that
    knows how its run was started (the seed's default is 0), and with the check's seed it
    knows every input the check will draw (``verifier.md``, "Foreseeing the check's inputs
    from its seed"). The salt is kept in the folder, so a resumed or copied run judges a
    unit as the first evaluation would have.
    """
    import os
    import secrets

    path = run_dir / SALT_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        salt = path.read_text(encoding="utf-8").strip()
        if len(salt) != 64 or any(c not in "0123456789abcdef" for c in salt):
            raise ValueError(
                f"{path} is not a check salt (64 hex digits); remove it to draw a new one "
                "(the kernels not yet judged then get other seeds)"
            ) from None
        return salt
    salt = secrets.token_hex(32)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(salt + "\n")
    return salt


def verdict_seed(salt: str, run_seed: int, key: str) -> int:
    """The check seed of one evaluation unit: the run's salt, the run's seed and the unit's key.

    Every check still draws its own inputs and random shape from it; the seed is in each
    Verdict, so ``upskills check --seed`` replays a verdict.
    """
    import hashlib

    from upskills.verify.verifier import SEED_BITS

    digest = hashlib.sha256(f"{salt}:{run_seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << SEED_BITS) - 1)


class CaseChecker:
    """One warm Verifier for the run; each case's variant subset goes in its CheckOptions."""

    def __init__(self, config: LiftConfig, device: str) -> None:
        """The verifier starts lazily, on the first kernel judged."""
        self.config = config
        self.device = device
        self._verifier: Verifier | None = None

    def options(self, case: CaseInfo) -> CheckOptions:
        """CheckOptions for ``case``."""
        from upskills.verify import CheckOptions

        return CheckOptions(
            seeds=self.config.check_seeds,
            timing=self.device != "cpu",
            timeout_s=self.config.check_timeout_s,
            variants=list(case.variants) if case.variants else None,
            baselines=self.device != "cpu",
        )

    def __call__(self, case: CaseInfo, source: str) -> Verdict:
        """The Verdict of ``source`` on ``case``'s task."""
        return self.verifier().check(case.task_def, source, self.options(case))

    def verifier(self) -> Verifier:
        """The warm verifier (started on first use)."""
        if self._verifier is None:
            from upskills.verify import Verifier

            self._verifier = Verifier(device=self.device)
        return self._verifier

    def close(self) -> None:
        """Stop the verifier's worker."""
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None


def _clip(text: str, head: int = 250, tail: int = 400) -> str:
    """Keep a long message's start and its end (where a traceback says what failed)."""
    return text if len(text) <= head + tail else f"{text[:head]} ... {text[-tail:]}"


def _record(gen: GenerationRecord, verdict: Verdict, device: str) -> EvaluationRecord:
    err = verdict.error_class
    return EvaluationRecord(
        key=gen.key,
        kernel_hash=gen.kernel_hash,
        passed=bool(verdict.passed),
        error_class=str(err.value if hasattr(err, "value") else err) if err else None,
        message=_clip(verdict.message or ""),
        speedup_eager=verdict.speedup_eager,
        speedup_compile=verdict.speedup_compile,
        device=device,
        gpu=verdict.gpu,
        duration_s=round(verdict.duration_s, 3),
    )


def evaluate_run(
    run_dir: Path,
    device: str = "auto",
    progress: bool = True,
    workers: int | None = None,
    executor: ExecutorConfig | None = None,
) -> Path:
    """Judge every generated sample not yet judged on this device kind.

    Args:
        run_dir: the lift run folder.
        device: ``auto``, ``cpu`` or ``cuda``.
        progress: show a progress bar with counts and ETA.
        workers: verifier workers (local) or actors (ray); default one per GPU (local: one on
            CPU). Overrides ``executor.workers``.
        executor: which executor judges the kernels (default: ``local``).

    Returns:
        The evaluation file written (each verdict appended as it arrives).
    """
    from upskills.executor import ExecutorConfig, make_executor

    run_dir = Path(run_dir)
    kind = resolve_device(device)
    out = run_dir / evaluations_name(kind)
    merge_parts(run_dir, kind)  # leftovers of a multi-worker evaluation by an older version
    config = executor or ExecutorConfig()
    if workers is not None:
        config = config.model_copy(update={"workers": workers})
    with make_executor(config, kind) as ex:
        evaluate_with(run_dir, kind, ex, progress)
    return out


def merge_parts(run_dir: Path, kind: str) -> None:
    """Fold worker part files into ``evaluations.<kind>.jsonl`` (new keys only) and remove them."""
    out = run_dir / evaluations_name(kind)
    parts = sorted(run_dir.glob(f"evaluations.{kind}.part*.jsonl"))
    if not parts:
        return
    done = {r.key for r in read_records(out, EvaluationRecord)}
    with RecordWriter(out, done) as writer:
        for part in parts:
            for rec in read_records(part, EvaluationRecord):
                writer.write(rec)
    for part in parts:
        part.unlink()


def evaluate_with(run_dir: Path, kind: str, executor: Executor, progress: bool = True) -> None:
    """Judge the pending samples of ``run_dir`` with ``executor``, appending as verdicts arrive.

    Identical kernels of a case make one work unit (keyed ``case/kernel_hash``); its verdict is
    written for every sample that produced that kernel, and reused from records already on disk.
    """
    from upskills.executor import WorkUnit

    manifest = load_manifest(run_dir)
    out = run_dir / evaluations_name(kind)
    gens = read_records(run_dir / GENERATIONS, GenerationRecord)
    done_records = read_records(out, EvaluationRecord)
    done = {r.key for r in done_records}
    cases = {c.id: c for c in manifest.cases}
    gen_by_key = {g.key: g for g in gens}
    cache: dict[tuple[str, str], EvaluationRecord] = {}
    for r in done_records:
        g = gen_by_key.get(r.key)
        if g is not None and g.kernel_hash:
            cache[(g.case, g.kernel_hash)] = r
    # infrastructure errors are not judged: they stay pending until a resume regenerates them
    todo = [g for g in gens if g.key not in done and g.error is None]
    checker = CaseChecker(manifest.config, kind)
    salt = check_salt(run_dir) if todo else ""
    bar = _bar(len(todo), f"evaluate ({kind}, {executor.name})", progress)
    waiting: dict[str, list[GenerationRecord]] = {}
    units: list[WorkUnit] = []
    try:
        with RecordWriter(out, done) as writer:
            for gen in todo:
                rec = _settled(gen, cases[gen.case], cache, kind)
                if rec is not None:
                    writer.write(rec)
                    bar.update(1)
                    continue
                assert gen.kernel_source is not None and gen.kernel_hash is not None
                unit_key = f"{gen.case}/{gen.kernel_hash}"
                if unit_key not in waiting:
                    case = cases[gen.case]
                    units.append(
                        WorkUnit(
                            key=unit_key,
                            task=case.task_def,
                            candidate=gen.kernel_source,
                            options=checker.options(case).model_copy(
                                update={"seed": verdict_seed(salt, checker.config.seed, unit_key)}
                            ),
                        )
                    )
                waiting.setdefault(unit_key, []).append(gen)
            for result in executor.run(units):
                for gen in waiting.pop(result.key):
                    writer.write(_record(gen, result.verdict, kind))
                    bar.update(1)
    finally:
        bar.close()


def _settled(
    gen: GenerationRecord,
    case: CaseInfo,
    cache: dict[tuple[str, str], EvaluationRecord],
    kind: str,
) -> EvaluationRecord | None:
    """The record of a sample that needs no verifier (a choice, no kernel, or judged already)."""
    if case.rung == "choose" and gen.choice is not None:
        # the label is the verifier's, given when the case was built (on the whole kernel)
        picked = case.choices[gen.choice]
        return EvaluationRecord(
            key=gen.key,
            kernel_hash=gen.kernel_hash,
            passed=picked.correct,
            error_class=None if picked.correct else f"chose:{picked.bug}",
            message=picked.message[:300],
            device=kind,
        )
    if not gen.kernel_source or not gen.kernel_hash:
        return EvaluationRecord(
            key=gen.key,
            passed=False,
            error_class="no_kernel",
            message="no ```python block defining ModelNew in the response",
            device=kind,
        )
    hit = cache.get((gen.case, gen.kernel_hash))
    return hit.model_copy(update={"key": gen.key}) if hit is not None else None


def _bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="sample", disable=not enabled or total == 0)
