"""Compute a run's Report from its manifest, generations and one evaluation file.

Only cases with every sample evaluated enter the statistics; pending ones are counted in the
notes. Lifts pair cases between two arms of the same student (same cases, same seeds) and are
always stored with their intervals.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from upskills.lift.config import CaseInfo, RunManifest, load_manifest
from upskills.lift.stats import flips, geomean, holm, paired_lift, pass_at_k, wilson_clustered
from upskills.lift.store import (
    GENERATIONS,
    EvaluationRecord,
    GenerationRecord,
    evaluations_name,
    read_records,
)
from upskills.report.model import ArmStats, Interval, LiftRow, Report


@dataclass
class CaseScore:
    """One student x arm x case: sample outcomes."""

    n: int = 0
    correct: int = 0
    fast: int = 0
    timed: int = 0
    margins: list[float] = field(default_factory=list[float])
    """Choose cases: the log-likelihood margin of each scored sample (nats)."""

    @property
    def margin(self) -> float | None:
        """Mean margin (None: not a scored choose case)."""
        return sum(self.margins) / len(self.margins) if self.margins else None

    @property
    def pass_rate(self) -> float:
        """Fraction correct."""
        return self.correct / self.n if self.n else 0.0

    @property
    def fast_rate(self) -> float:
        """Fraction correct and faster than eager."""
        return self.fast / self.n if self.n else 0.0


@dataclass
class RunData:
    """A run's records joined: generation and evaluation per key."""

    manifest: RunManifest
    generations: list[GenerationRecord]
    evaluations: dict[str, EvaluationRecord]
    evaluation_file: str | None
    device: str | None
    scores: dict[tuple[str, str, str], CaseScore] = field(default_factory=dict)


def pick_evaluation(run_dir: Path, device: str | None = None) -> Path | None:
    """The evaluation file to report: the given device's, else cuda's, else cpu's."""
    order = [device] if device else ["cuda", "cpu"]
    for d in order:
        p = run_dir / evaluations_name(d)
        if p.is_file():
            return p
    return None


def load_run(run_dir: Path, device: str | None = None) -> RunData:
    """Read a run folder's records."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    gens = read_records(run_dir / GENERATIONS, GenerationRecord)
    path = pick_evaluation(run_dir, device)
    evals = {r.key: r for r in read_records(path, EvaluationRecord)} if path else {}
    data = RunData(
        manifest,
        gens,
        evals,
        path.name if path else None,
        path.name.split(".")[1] if path else None,
    )
    samples = manifest.config.samples
    need = {c.id: c.samples(samples) for c in manifest.cases}
    by_id = {c.id: c for c in manifest.cases}
    for g in gens:
        if g.error is not None:
            continue  # an infrastructure error is not the student's: never scored
        e = evals.get(g.key)
        if e is None:
            continue
        s = data.scores.setdefault((g.student, g.arm, g.case), CaseScore())
        s.n += 1
        s.correct += int(e.passed)
        if e.speedup_eager is not None:
            s.timed += 1
            s.fast += int(e.passed and e.speedup_eager > 1.0)
        margin = choice_margin(by_id[g.case], g.scores) if g.case in by_id else None
        if margin is not None:
            s.margins.append(margin)
    data.scores = {k: v for k, v in data.scores.items() if v.n == need.get(k[2], samples)}
    return data


def choice_margin(case: CaseInfo, scores: list[float] | None) -> float | None:
    """Best correct line's log-likelihood minus the best wrong line's (nats), or None.

    None unless ``case`` is a choose case scored on every line with both kinds present.
    """
    if case.rung != "choose" or not scores or len(scores) != len(case.choices):
        return None
    right = [v for v, c in zip(scores, case.choices, strict=True) if c.correct]
    wrong = [v for v, c in zip(scores, case.choices, strict=True) if not c.correct]
    return max(right) - max(wrong) if right and wrong else None


def _arm_stats(data: RunData, student: str, arm: str, timed: bool, rung: str = "all") -> ArmStats:
    """One arm's statistics on one rung (or all); ``timed``: the evaluation measured timings."""
    m = data.manifest
    spec = next(a for a in m.arms if a.name == arm)
    ids = {c.id for c in m.cases if rung in ("all", c.rung)}
    everything = [g for g in data.generations if g.student == student and g.arm == arm]
    everything = [g for g in everything if g.case in ids]
    infra = sum(1 for g in everything if g.error is not None)
    gens = [g for g in everything if g.error is None]
    evs = [data.evaluations[g.key] for g in gens if g.key in data.evaluations]
    cases = [c for c in m.cases if c.id in ids and (student, arm, c.id) in data.scores]
    scores = [data.scores[(student, arm, c.id)] for c in cases]
    n = min((c.samples(m.config.samples) for c in cases), default=m.config.samples)
    ks = sorted({1, min(3, n), n})
    pak: dict[str, float | None] = {  # no evaluated case: no rate (never a 0% from nothing)
        str(k): sum(pass_at_k(s.n, s.correct, k) for s in scores) / len(scores) if scores else None
        for k in ks
    }
    speedups = [e.speedup_eager for e in evs if e.passed and e.speedup_eager is not None]
    failures = Counter(e.error_class or "unknown" for e in evs if not e.passed)
    reads = Counter(r for g in gens for r in g.skill_reads)
    splits = sorted({c.split for c in cases}) or sorted({c.split for c in m.cases})
    count = max(len(gens), 1)
    return ArmStats(
        student=student,
        arm=arm,
        kind=spec.kind,
        split="+".join(splits),
        samples=len(gens),
        evaluated=len(evs),
        cases=len(cases),
        pass_at_k=pak,
        fast_1=(sum(s.fast_rate for s in scores) / len(scores)) if timed else None,
        speedup_geomean=geomean(speedups),
        speedups=speedups,
        failures=dict(sorted(failures.items())),
        mean_input_tokens=sum(g.input_tokens for g in gens) / count,
        mean_output_tokens=sum(g.output_tokens for g in gens) / count,
        mean_latency_s=sum(g.latency_s for g in gens) / count,
        block_tokens=spec.block_tokens,
        activation_rate=(sum(1 for g in gens if g.skill_reads) / count) if spec.uses_tool else None,
        reads=dict(sorted(reads.items())),
        rung=rung,
        chance=_chance(cases),
        margin_nats=_mean([s.margin for s in scores if s.margin is not None]),
        pass_ci=(
            wilson_clustered([float(s.correct) for s in scores], [c.task for c in cases])
            if scores and all(s.n == 1 for s in scores)
            else None
        ),
        infra_errors=infra,
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _chance(cases: list) -> float | None:  # noqa: ANN001 - CaseInfo list
    values = [c.chance for c in cases if c.chance is not None]
    if not values or len(values) != len(cases):
        return None
    return sum(values) / len(values)


def _lift(
    a: dict[str, CaseScore],
    b: dict[str, CaseScore],
    task_of: dict[str, str],
    metric: str,
) -> tuple[Interval, int, int] | None:
    common = sorted(set(a) & set(b))
    if not common:
        return None

    if metric == "margin_nats":  # only cases scored in both arms
        common = [c for c in common if a[c].margin is not None and b[c].margin is not None]
        if not common:
            return None

    def value(s: CaseScore) -> float:
        if metric == "margin_nats":
            return s.margin or 0.0
        return s.pass_rate if metric == "pass_1" else s.fast_rate

    lift = paired_lift(
        [value(a[c]) for c in common],
        [value(b[c]) for c in common],
        [task_of[c] for c in common],
        rates=metric != "margin_nats",
    )
    repairs, regressions = flips(
        [value(a[c]) > 0 for c in common], [value(b[c]) > 0 for c in common]
    )
    return Interval.model_validate(lift.as_dict()), repairs, regressions


def _references(manifest: RunManifest, arm: str) -> list[str]:
    """Arms an arm is compared against: baseline always; placebo and excerpt for skill arms."""
    spec = next(a for a in manifest.arms if a.name == arm)
    names = {a.name: a for a in manifest.arms}
    refs = ["baseline"] if "baseline" in names and arm != "baseline" else []
    if spec.kind in ("inline", "on_demand"):
        for other in manifest.arms:
            if other.kind in ("placebo", "excerpt") and other.skill == spec.skill:
                refs.append(other.name)
            elif other.kind == "off_topic":
                refs.append(other.name)
    return refs


def _metrics(manifest: RunManifest, timed: bool) -> list[str]:
    """Per-case metrics lifts are computed on: pass_1, fast_1 when timed, margins of choices."""
    metrics = ["pass_1", "fast_1"] if timed else ["pass_1"]
    if any(c.rung == "choose" for c in manifest.cases):
        metrics.append("margin_nats")
    return metrics


def compute_report(
    run_dir: Path, baseline: Path | None = None, device: str | None = None
) -> Report:
    """Statistics of a run (and, with ``baseline``, its arms against another run's).

    Args:
        run_dir: the lift run folder.
        baseline: another run folder; its arms are paired with this run's by student, arm
            name and case id (e.g. an older skill version, or the same run evaluated elsewhere).
        device: evaluation device to report (default: cuda when present, else cpu).

    Returns:
        The Report.
    """
    data = load_run(run_dir, device)
    m = data.manifest
    task_of = {c.id: c.task for c in m.cases}
    students = [s["name"] for s in m.students]
    # a GPU evaluation measures timings whenever a kernel passes; none passing means fast_1 = 0
    timed = data.device == "cuda" or any(s.timed for s in data.scores.values())
    metrics = _metrics(m, timed)
    arms: list[ArmStats] = []
    lifts: list[LiftRow] = []
    per: dict[tuple[str, str], dict[str, CaseScore]] = defaultdict(dict)
    for (student, arm, case), score in data.scores.items():
        per[(student, arm)][case] = score
    subsets: list[tuple[str, set[str]]] = [("all", {c.id for c in m.cases})]
    for split in sorted({c.split for c in m.cases}):
        subsets.append((f"split:{split}", {c.id for c in m.cases if c.split == split}))
    for tag in sorted({t for c in m.cases for t in c.tags}):
        subsets.append((f"tag:{tag}", {c.id for c in m.cases if tag in c.tags}))
    for student in students:
        for spec in m.arms:
            arms += _arm_rows(data, student, spec.name, timed)
            for ref in _references(m, spec.name):
                for metric in metrics:
                    for subset, ids in subsets if ref == "baseline" else subsets[:1]:
                        a = {c: s for c, s in per[(student, spec.name)].items() if c in ids}
                        b = {c: s for c, s in per[(student, ref)].items() if c in ids}
                        got = _lift(a, b, task_of, metric)
                        if got is None:
                            continue
                        interval, rep, reg = got
                        lifts.append(
                            LiftRow(
                                student=student,
                                arm=spec.name,
                                reference=ref,
                                metric=metric,  # type: ignore[arg-type]
                                subset=subset,
                                lift=interval,
                                repairs=rep,
                                regressions=reg,
                            )
                        )
    if baseline is not None:
        other = load_run(Path(baseline), device)
        other_per: dict[tuple[str, str], dict[str, CaseScore]] = defaultdict(dict)
        for (student, arm, case), score in other.scores.items():
            other_per[(student, arm)][case] = score
        for key, mine in sorted(per.items()):
            if key not in other_per:
                continue
            got = _lift(mine, other_per[key], task_of, "pass_1")
            if got is not None:
                interval, rep, reg = got
                lifts.append(
                    LiftRow(
                        student=key[0],
                        arm=key[1],
                        reference=f"{Path(baseline).name}:{key[1]}",
                        metric="pass_1",
                        subset="all",
                        lift=interval,
                        repairs=rep,
                        regressions=reg,
                    )
                )
    notes = _notes(data, timed) + _floor_notes(arms) + _adjust(lifts)
    gen_device = _generation_device(m)
    gpu = next((e.gpu for e in data.evaluations.values() if e.gpu), None)
    return Report(
        run=Path(run_dir).name,
        evaluation=data.evaluation_file,
        device=data.device,
        gpu=gpu,
        splits=dict(Counter(c.split for c in m.cases)),
        samples_per_case=m.config.samples,
        command=_command(Path(run_dir), m),
        arms=arms,
        lifts=lifts,
        baseline_run=str(baseline) if baseline else None,
        notes=notes,
        generation_device=gen_device,
    )


_RUNG_ORDER = ["choose", "fill", "repair", "write"]


def _arm_rows(data: RunData, student: str, arm: str, timed: bool) -> list[ArmStats]:
    """An arm's row over all cases, then one per ladder rung (when the run has rungs)."""
    rungs = sorted({c.rung for c in data.manifest.cases}, key=_RUNG_ORDER.index)
    rows = [_arm_stats(data, student, arm, timed)]
    if rungs != ["write"]:
        rows += [_arm_stats(data, student, arm, timed, r) for r in rungs]
    return rows


def _adjust(lifts: list[LiftRow]) -> list[str]:
    """Holm-adjust every row's p-value in place; the notes that go with it."""
    adjusted = holm([row.lift.p_value for row in lifts])
    for row, p in zip(lifts, adjusted, strict=True):
        row.lift.p_holm = p
    notes = []
    if any(row.lift.method in ("bootstrap-few", "t-few") for row in lifts):
        notes.append(
            "some lifts rest on fewer than 10 tasks with non-binary scores: their intervals "
            "lean on normality (method 't-few'/'bootstrap-few'); read them as rough"
        )
    if lifts:
        notes.append(
            f"p-values are Holm-adjusted across the {len(lifts)} lift rows (p_holm); "
            "unadjusted p-values answer one pre-chosen comparison only"
        )
    return notes


def _generation_device(manifest: RunManifest) -> str | None:
    devices = sorted(
        {str(s.get("device")) for s in manifest.students if s.get("provider") == "transformers"}
    )
    return ",".join(devices) if devices else None


def _floor_notes(arms: list[ArmStats]) -> list[str]:
    notes = []
    for rung in sorted({a.rung for a in arms}):
        rows = [a for a in arms if a.rung == rung and a.cases]
        rates = [a.pass_at_k.get("1") for a in rows]
        if rows and all(r == 0.0 for r in rates):
            notes.append(f"rung {rung}: every arm at 0% (floor): no lift can show here")
        elif rows and all(r == 1.0 for r in rates):
            notes.append(f"rung {rung}: every arm at 100% (ceiling): no lift can show here")
    infra = sum(a.infra_errors for a in arms if a.rung == "all")
    if infra:
        notes.append(
            f"{infra} sample(s) ended in infrastructure errors (HTTP, timeout, outage): "
            "excluded from pass rates; rerun the lift command to retry them"
        )
    return notes


def _notes(data: RunData, timed: bool) -> list[str]:
    m = data.manifest
    notes: list[str] = []
    expected = len(m.students) * len(m.arms) * sum(c.samples(m.config.samples) for c in m.cases)
    if len(data.generations) < expected:
        notes.append(f"generation incomplete: {len(data.generations)} of {expected} samples")
    pending = sum(1 for g in data.generations if g.key not in data.evaluations)
    if pending:
        notes.append(f"{pending} generated samples not evaluated on this device yet")
    if not timed:
        notes.append(
            "no timings (CPU evaluation in the Triton interpreter checks correctness only): "
            "fast_1 and speedups are not available"
        )
    if any(c.split == "train" for c in m.cases):
        notes.append("some cases come from tasks that fed the skills (split 'train')")
    return notes


def _command(run_dir: Path, manifest: RunManifest) -> str:
    path = run_dir / "command.txt"
    if path.is_file():
        return path.read_text(encoding="utf-8").strip()
    return json.dumps(manifest.config.model_dump(), sort_keys=True)
