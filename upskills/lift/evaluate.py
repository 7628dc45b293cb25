"""The evaluation phase: the verifier judges every generated kernel, one line per sample.

Runs anywhere the run folder is copied: it needs only ``run.json`` and ``generations.jsonl``.
Results go to ``evaluations.<device>.jsonl`` so CPU (Triton interpreter, correctness only) and
GPU evaluations of the same generations sit side by side. Identical kernels for the same case are
judged once per run (the verdict is a function of task and source).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from upskills.lift.config import CaseInfo, LiftConfig, load_manifest
from upskills.lift.store import (
    GENERATIONS,
    EvaluationRecord,
    GenerationRecord,
    RecordWriter,
    evaluations_name,
    read_records,
)


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cuda:N`` -> ``cuda``."""
    if device == "auto":
        try:
            import torch

            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            return "cpu"
    return "cuda" if device.startswith("cuda") else device


class CaseChecker:
    """One warm Verifier for the run; each case's variant subset goes in its CheckOptions."""

    def __init__(self, config: LiftConfig, device: str) -> None:
        """The verifier starts lazily, on the first kernel judged."""
        self.config = config
        self.device = device
        self._verifier: Any = None

    def options(self, case: CaseInfo) -> Any:
        """CheckOptions for ``case``."""
        from upskills.verify import CheckOptions

        return CheckOptions(
            seeds=self.config.check_seeds,
            timing=self.device != "cpu",
            timeout_s=self.config.check_timeout_s,
            variants=list(case.variants) if case.variants else None,
            baselines=self.device != "cpu",
        )

    def __call__(self, case: CaseInfo, source: str) -> Any:
        """The Verdict of ``source`` on ``case``'s task."""
        if self._verifier is None:
            from upskills.verify import Verifier

            self._verifier = Verifier(device=self.device)
        return self._verifier.check(case.task_def, source, self.options(case))

    def close(self) -> None:
        """Stop the verifier's worker."""
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None


def _clip(text: str, head: int = 250, tail: int = 400) -> str:
    """Keep a long message's start and its end (where a traceback says what failed)."""
    return text if len(text) <= head + tail else f"{text[:head]} ... {text[-tail:]}"


def _record(gen: GenerationRecord, verdict: Any, device: str) -> EvaluationRecord:
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
    run_dir: Path, device: str = "auto", progress: bool = True, workers: int | None = None
) -> Path:
    """Judge every generated sample not yet judged on this device kind.

    Args:
        run_dir: the lift run folder.
        device: ``auto``, ``cpu`` or ``cuda``.
        progress: show a progress bar with counts and ETA.
        workers: worker processes; default one per visible GPU on CUDA, one on CPU. Each
            worker takes the cases whose id hashes to it and sees only its own GPU.

    Returns:
        The evaluation file written.
    """
    run_dir = Path(run_dir)
    kind = resolve_device(device)
    out = run_dir / evaluations_name(kind)
    merge_parts(run_dir, kind)  # leftovers of a killed multi-worker evaluation
    n = workers or (_gpu_count() if kind == "cuda" else 1)
    if n <= 1:
        evaluate_shard(run_dir, kind, 0, 1, out, progress)
        return out
    procs = []
    for i in range(n):
        env = dict(os.environ)
        if kind == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = str(i)
        cmd = [sys.executable, "-m", "upskills.lift.evaluate", str(run_dir), kind, str(i), str(n)]
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    merge_parts(run_dir, kind)
    if any(codes):
        raise RuntimeError(f"evaluation workers exited with {codes}; rerun to resume")
    return out


def _gpu_count() -> int:
    try:
        import torch

        return max(1, torch.cuda.device_count())
    except ImportError:
        return 1


def _part(run_dir: Path, kind: str, shard: int) -> Path:
    return run_dir / f"evaluations.{kind}.part{shard}.jsonl"


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


def _shard_of(case: str, of: int) -> int:
    return int(hashlib.sha256(case.encode()).hexdigest()[:8], 16) % of


def evaluate_shard(
    run_dir: Path, kind: str, shard: int, of: int, out: Path | None = None, progress: bool = True
) -> None:
    """Judge the pending samples of the cases that hash to ``shard`` (of ``of``)."""
    manifest = load_manifest(run_dir)
    out = out or _part(run_dir, kind, shard)
    gens = read_records(run_dir / GENERATIONS, GenerationRecord)
    main = run_dir / evaluations_name(kind)
    done_records = read_records(main, EvaluationRecord)
    if out != main:
        done_records += read_records(out, EvaluationRecord)
    done = {r.key for r in done_records}
    cases = {c.id: c for c in manifest.cases}
    cache: dict[tuple[str, str], EvaluationRecord] = {}
    gen_by_key = {g.key: g for g in gens}
    for r in done_records:
        g = gen_by_key.get(r.key)
        if g is not None and g.kernel_hash:
            cache[(g.case, g.kernel_hash)] = r
    # infrastructure errors are not judged: they stay pending until a resume regenerates them
    todo = [
        g for g in gens if g.key not in done and g.error is None and _shard_of(g.case, of) == shard
    ]
    checker = CaseChecker(manifest.config, kind)
    bar = _bar(len(todo), f"evaluate ({kind} {shard + 1}/{of})", progress)
    try:
        with RecordWriter(out, done) as writer:
            for gen in todo:
                writer.write(_evaluate_one(gen, cases, checker, cache, kind))
                bar.update(1)
    finally:
        bar.close()
        checker.close()


def _evaluate_one(
    gen: GenerationRecord,
    cases: dict[str, CaseInfo],
    checker: CaseChecker,
    cache: dict[tuple[str, str], EvaluationRecord],
    kind: str,
) -> EvaluationRecord:
    case = cases[gen.case]
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
    if hit is not None:
        return hit.model_copy(update={"key": gen.key})
    rec = _record(gen, checker(cases[gen.case], gen.kernel_source), kind)
    cache[(gen.case, gen.kernel_hash)] = rec
    return rec


def _bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="sample", disable=not enabled or total == 0)


if __name__ == "__main__":  # a worker of a multi-GPU evaluation: RUN KIND SHARD OF
    evaluate_shard(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
