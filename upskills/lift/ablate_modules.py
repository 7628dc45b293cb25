"""Per-module attribution of a pack: leave-one-section-out lift arms (``lift --ablate-modules``).

A pack's SKILL.md is a list of ``## `` sections (workflow, techniques, pitfalls, performance...).
``ablate_modules`` writes one variant pack per section, identical but for that section removed
(named ``<pack>-minus-<i>``, so each is its own inline arm), runs one lift experiment with the
baseline, the whole pack and every variant on the same cases, samples and seeds, and reports per
section: pass rate with the whole pack minus pass rate without the section. A section whose
removal *raises* the pass rate by at least ``harm_threshold`` is flagged as harmful.

Only the experiment's skill block changes between arms (the lift runner guarantees the rest),
so a difference is the section's. With few cases and samples the numbers are noisy: the report
gives the counts behind each rate.
"""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

HARM_THRESHOLD = 0.1
"""Pass-rate gain from removing a section at or above which the section is flagged harmful."""


class SectionEffect(BaseModel):
    """What removing one section did."""

    model_config = ConfigDict(extra="forbid")

    index: int
    """Position of the section in SKILL.md (0-based, ``## `` sections only)."""
    heading: str
    """The section's heading."""
    arm: str
    """Arm of the pack without this section."""
    passed: int
    """Passing samples without the section."""
    samples: int
    """Samples judged without the section."""
    delta: float
    """Pass rate with the whole pack minus pass rate without this section (> 0: it helps)."""
    verdict: str
    """``helps``, ``hurts`` (flagged), or ``neutral``."""


class ModuleAblation(BaseModel):
    """The leave-one-section-out report of one pack."""

    model_config = ConfigDict(extra="forbid")

    skill: str
    """``name@version`` of the pack."""
    run: str
    """The lift run folder."""
    full_arm: str
    """Arm of the whole pack."""
    full_pass_rate: float
    """Pass rate with the whole pack."""
    baseline_pass_rate: float | None = None
    """Pass rate with no skill (None when the baseline arm was not run)."""
    sections: list[SectionEffect] = Field(default_factory=list)
    """One row per section."""
    harmful: list[str] = Field(default_factory=list)
    """Headings of sections flagged as harmful."""


def split_sections(body: str) -> tuple[str, list[tuple[str, str]]]:
    """A SKILL.md body as (preamble, [(heading, section text)]) at ``## `` headings."""
    parts = re.split(r"(?m)^(?=## )", body)
    preamble, sections = parts[0], parts[1:]
    return preamble, [(s.splitlines()[0][3:].strip(), s) for s in sections]


def write_variants(pack: Any, folder: Path) -> list[tuple[int, str, Path]]:
    """One pack per section, without it, under ``folder``; returns (index, heading, path)."""
    preamble, sections = split_sections(pack.body)
    skill_md = (pack.path / "SKILL.md").read_text(encoding="utf-8")
    head = skill_md[: skill_md.rfind(pack.body)] if pack.body else skill_md
    out = []
    for i, (heading, _) in enumerate(sections):
        name = f"{pack.name[:48]}-minus-{i}"
        dest = folder / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(pack.path, dest)
        body = preamble + "".join(s for j, (_, s) in enumerate(sections) if j != i)
        new_head = re.sub(r"(?m)^name:.*$", f"name: {name}", head, count=1)
        (dest / "SKILL.md").write_text(new_head + body, encoding="utf-8")
        compact = dest / "references" / "compact.md"
        if compact.exists():
            compact.unlink()  # the compact variant is not sectioned; an inline arm uses SKILL.md
        out.append((i, heading, dest))
    return out


def _rates(run_dir: Path) -> dict[str, tuple[int, int]]:
    from upskills.lift.store import (
        GENERATIONS,
        EvaluationRecord,
        GenerationRecord,
        evaluations_name,
        read_records,
    )

    gens = {g.key: g for g in read_records(run_dir / GENERATIONS, GenerationRecord)}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for device in ("cuda", "cpu"):
        path = run_dir / evaluations_name(device)
        if not path.exists():
            continue
        for ev in read_records(path, EvaluationRecord):
            gen = gens.get(ev.key)
            if gen is not None:
                counts[gen.arm][0] += int(ev.passed)
                counts[gen.arm][1] += 1
        break
    return {arm: (p, n) for arm, (p, n) in counts.items()}


def ablate_modules(config: Any, harm_threshold: float = HARM_THRESHOLD) -> ModuleAblation:
    """Run leave-one-section-out arms of one pack and attribute pass rate to its sections.

    Args:
        config: a ``LiftConfig`` with exactly one skill; its arms are replaced by ``baseline``
            (when asked for) and ``inline`` for the whole pack and each variant.
        harm_threshold: pass-rate gain from removing a section that flags it as harmful.

    Returns:
        The report (also written to ``<out>/modules.json`` and ``<out>/modules.md``).

    Raises:
        ValueError: not exactly one skill, or a pack without ``## `` sections.
    """
    from upskills.lift.runner import run_lift
    from upskills.skills.pack import resolve_pack

    if len(config.skills) != 1:
        raise ValueError("--ablate-modules needs exactly one skill (--skills)")
    pack = resolve_pack(config.skills[0])
    out = Path(config.out)
    variants = write_variants(pack, out / "modules")
    if not variants:
        raise ValueError(f"{pack.path}/SKILL.md has no '## ' sections to leave out")
    arms = [a for a in ("baseline",) if a in config.arms] + ["inline"]
    run_config = config.model_copy(
        update={
            "skills": [str(pack.path), *(str(p) for _, _, p in variants)],
            "arms": arms,
            "evaluate": True,
        }
    )
    run_dir = run_lift(run_config)
    rates = _rates(run_dir)

    def rate(arm: str) -> float:
        p, n = rates.get(arm, (0, 0))
        return p / n if n else 0.0

    report = ModuleAblation(
        skill=pack.ref,
        run=str(run_dir),
        full_arm=pack.ref,
        full_pass_rate=rate(pack.ref),
        baseline_pass_rate=rate("baseline") if "baseline" in rates else None,
    )
    for i, heading, path in variants:
        arm = f"{path.name}@{pack.version}"
        p, n = rates.get(arm, (0, 0))
        delta = report.full_pass_rate - rate(arm)
        verdict = "hurts" if -delta >= harm_threshold else "helps" if delta > 0 else "neutral"
        report.sections.append(
            SectionEffect(
                index=i, heading=heading, arm=arm, passed=p, samples=n, delta=delta, verdict=verdict
            )
        )
        if verdict == "hurts":
            report.harmful.append(heading)
    (out / "modules.json").write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    (out / "modules.md").write_text(render_report(report), encoding="utf-8")
    return report


def render_report(report: ModuleAblation) -> str:
    """The report as a Markdown table."""
    base = report.baseline_pass_rate
    lines = [
        f"# Leave-one-section-out: {report.skill}",
        "",
        f"Whole pack: pass rate {report.full_pass_rate:.2f}"
        + (f"; baseline (no skill) {base:.2f}" if base is not None else "")
        + ". Delta = whole pack - without the section (> 0: the section helps).",
        "",
        "| # | section | without it | delta | verdict |",
        "|---|---|---|---|---|",
    ]
    for s in report.sections:
        rate = s.passed / s.samples if s.samples else 0.0
        lines.append(
            f"| {s.index} | {s.heading} | {rate:.2f} ({s.passed}/{s.samples}) | "
            f"{s.delta:+.2f} | {s.verdict} |"
        )
    if report.harmful:
        lines += ["", "Harmful (removing it helps): " + ", ".join(report.harmful)]
    lines += ["", f"Lift run: `{report.run}`"]
    return "\n".join(lines) + "\n"
