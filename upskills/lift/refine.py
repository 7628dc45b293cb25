"""Refinement from student failures: a lift run's failures on *train* cases become lessons.

``refine(pack, run_dir)`` reads a lift run (``run.json``, ``generations.jsonl``,
``evaluations.<device>.jsonl``), keeps the failed samples on train cases (the cases whose task
fed the skill: failures there mean the skill did not teach what it had evidence for), groups
them by the verifier's error class and writes a "Lessons from student failures" section that
addresses each class with the evidence (counts, cases, the verifier's messages):

- ``interface``: the exact ``ModelNew`` interface of each failing case, read from its reference
  (constructor and ``forward`` signatures);
- ``no_kernel``/``syntax``: the answer format (one complete module in one fenced block);
- ``guard``: launch your own kernel, no reference ops; ``compile``, ``mismatch``, ``runtime``...:
  the messages, with the pack's own matching checklist items.

The result is a new minor version of the pack (the old one stays in ``.versions/``), with
``references/refinement.json`` (the evidence) and ``references/refinement.md`` (evidence and
the SKILL.md diff). Held-out cases of the run are written next to it with the ``upskills lift``
command that measures old against new on them (``rerun`` runs it). Held-out failures are never
read: the skill must not learn from its own test.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from upskills.distill.lessons import clean_message
from upskills.distill.store import archive_version, bump, staging_dir, swap_in, write_tree

SECTION = "## Lessons from student failures"
"""Heading of the section refinement writes (replaced, never duplicated, on a re-run)."""

ADVICE: dict[str, str] = {
    "interface": "Define `class ModelNew(nn.Module)` with exactly the reference `Model`'s "
    "constructor and `forward` parameters (same names, same order, same defaults).",
    "no_kernel": "Answer with one complete Python module in a single ```python block: imports, "
    "the kernel, and `class ModelNew`; no prose inside the block, nothing left out.",
    "syntax": "The module must parse: one ```python block, complete statements, no ellipses or "
    "placeholders.",
    "import": "Import only `torch`, `torch.nn`, `triton`, `triton.language` (or "
    "`torch.utils.cpp_extension.load_inline`); define every helper you use.",
    "compile": "Triton: block sizes are `tl.constexpr` powers of two, `tl.arange` bounds are "
    "constexpr, no Python control flow on tensor values inside `@triton.jit`.",
    "guard": "`forward` must launch your own kernel for the main computation; calling the "
    "reference's torch ops (or returning cached results) is rejected.",
    "mismatch": "Mask every load and store on ragged shapes, accumulate in fp32, and check the "
    "output on a size that is not a multiple of the block.",
    "runtime": "Pass tensors (not Python lists) and contiguous inputs; the grid must be a tuple.",
    "shape": "Return the reference's output shape exactly (keep or drop dimensions as it does).",
    "dtype": "Return the reference's output dtype (cast the fp32 accumulator back at the store).",
    "timeout": "Every loop must terminate: loop over `range(0, N, BLOCK)`, never `while` on data.",
    "crash": "Guard every access with a mask; an out-of-bounds pointer crashes the process.",
    "nan": "Subtract the row max before `exp`; masked lanes get a neutral value (`-inf` for max).",
}
"""Error class -> what a student should do instead."""


class FailureClass(BaseModel):
    """Failed train samples of one error class, with the evidence."""

    model_config = ConfigDict(extra="forbid")

    error_class: str
    """Verifier error class (or ``no_kernel``)."""
    count: int
    """Failed samples."""
    cases: list[str] = Field(default_factory=list)
    """Train cases with such a failure."""
    messages: list[str] = Field(default_factory=list)
    """The most frequent verifier messages (cleaned)."""
    keys: list[str] = Field(default_factory=list)
    """Sample keys (``student/arm/case/sample``) of the evidence."""


class Refinement(BaseModel):
    """What a refinement read and wrote."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    """Version of this record's layout."""
    skill: str
    """``name@version`` refined."""
    new_version: str = ""
    """The version written (empty when there was nothing to address)."""
    run: str
    """The lift run folder read."""
    train_samples: int = 0
    """Samples on train cases read."""
    failures: list[FailureClass] = Field(default_factory=list)
    """Failures by class, most frequent first."""
    heldout_cases: str = ""
    """Folder of the run's held-out cases (for the re-run)."""
    rerun_command: str = ""
    """The ``upskills lift`` command measuring old vs new on held-out cases."""
    rerun_config: dict[str, Any] = Field(default_factory=dict)
    """The same re-run as ``LiftConfig`` fields."""


def _signature(source: str) -> str:
    """``class ModelNew(nn.Module)`` with the reference Model's ``__init__`` and ``forward``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            defs = {
                f.name: ast.unparse(f.args)
                for f in node.body
                if isinstance(f, ast.FunctionDef) and f.name in ("__init__", "forward")
            }
            init = defs.get("__init__", "self")
            return (
                f"class ModelNew(nn.Module):  def __init__({init})  ...  "
                f"def forward({defs.get('forward', 'self, *args')})"
            )
    return ""


def _read_run(run_dir: Path) -> tuple[Any, dict[str, Any], list[Any]]:
    from upskills.lift.config import load_manifest
    from upskills.lift.store import (
        GENERATIONS,
        EvaluationRecord,
        GenerationRecord,
        evaluations_name,
        read_records,
    )

    manifest = load_manifest(run_dir)
    gens = {g.key: g for g in read_records(run_dir / GENERATIONS, GenerationRecord)}
    evals: list[Any] = []
    for device in ("cuda", "cpu"):
        path = run_dir / evaluations_name(device)
        if path.exists():
            evals = read_records(path, EvaluationRecord)
            break
    return manifest, gens, evals


def collect_failures(run_dir: Path, skill_name: str) -> tuple[int, list[FailureClass], Any]:
    """Failures on train cases of a lift run, by error class (arms of this skill when any).

    Returns:
        (train samples read, failure classes most frequent first, the run manifest).
    """
    manifest, gens, evals = _read_run(run_dir)
    split = {c.id: c.split for c in manifest.cases}
    arms = {a.name for a in manifest.arms if (a.skill or "").split("@")[0] == skill_name}
    groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    train = 0
    for ev in evals:
        gen = gens.get(ev.key)
        if gen is None or split.get(gen.case) != "train" or (arms and gen.arm not in arms):
            continue
        train += 1
        if not ev.passed:
            cls = ev.error_class or "error"
            groups[cls].append((gen.case, clean_message(ev.message, 200), ev.key))
    out = []
    for cls, rows in groups.items():
        msgs = Counter(m for _, m, _ in rows if m)
        out.append(
            FailureClass(
                error_class=cls,
                count=len(rows),
                cases=sorted({c for c, _, _ in rows}),
                messages=[m for m, _ in msgs.most_common(3)],
                keys=sorted(k for _, _, k in rows)[:20],
            )
        )
    return train, sorted(out, key=lambda f: (-f.count, f.error_class)), manifest


def failure_section(failures: list[FailureClass], manifest: Any) -> str:
    """The Markdown section that addresses each failure class with its evidence."""
    sources = {c.id: c.task_def.source for c in manifest.cases}
    lines = [
        SECTION,
        "",
        "Students given this skill failed these train cases (verifier messages quoted); do this "
        "instead:",
        "",
    ]
    for f in failures:
        advice = ADVICE.get(f.error_class, "Read the verifier's message and fix that first.")
        lines.append(
            f"- **{f.error_class}** ({f.count} samples, {', '.join(f.cases[:4])}): {advice}"
        )
        if f.error_class == "interface":
            for case in f.cases[:3]:
                sig = _signature(sources.get(case, ""))
                if sig:
                    lines.append(f"  - `{case}`: `{sig}`")
        for msg in f.messages[:2]:
            lines.append(f"  - Seen: `{msg}`")
    return "\n".join(lines) + "\n"


def _with_section(body: str, section: str) -> str:
    """``body`` with the failure section replaced or inserted before the checklist."""
    body = re.sub(rf"{re.escape(SECTION)}\n.*?(?=\n## |\Z)", "", body, flags=re.S).rstrip() + "\n"
    if "\n## Checklist" in body:
        head, _, tail = body.partition("\n## Checklist")
        return f"{head.rstrip()}\n\n{section}\n## Checklist{tail}"
    return f"{body.rstrip()}\n\n{section}"


def _heldout_cases(manifest: Any, folder: Path) -> int:
    from upskills.cases.model import TestCase, dump_case

    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for c in manifest.cases:
        if c.split != "heldout":
            continue
        task = c.task_def
        case = TestCase(
            id=c.id,
            task=c.task,
            task_hash=c.task_hash,
            task_source=task.source,
            statement=task.statement,
            prompt=c.prompt,
            variants=list(c.variants or []),
            task_variants=list(task.variants),
            task_tags=list(task.tags),
            dtypes=list(task.dtypes),
            atol=task.atol,
            rtol=task.rtol,
            tags=list(c.tags),
            origin=["lift-run"],
            split="heldout",
        )
        (folder / f"{c.id}.yaml").write_text(dump_case(case), encoding="utf-8")
        n += 1
    return n


def refine(skill: str, run_dir: str | Path, skills_dir: str | Path = "skills") -> Refinement:
    """Write a new version of a pack that addresses its students' failures on train cases.

    Args:
        skill: the pack (folder or ``name[@version]``).
        run_dir: a lift run folder that used the pack.
        skills_dir: where ``name`` references resolve.

    Returns:
        What was read and written; ``new_version`` is empty when the run shows no train
        failure (nothing is written then).
    """
    from upskills.skills.pack import load_pack, resolve_pack, validate_pack

    pack = resolve_pack(skill, skills_dir)
    run_dir = Path(run_dir)
    train, failures, manifest = collect_failures(run_dir, pack.name)
    out = Refinement(skill=pack.ref, run=str(run_dir), train_samples=train, failures=failures)
    if not failures:
        return out
    version = bump(pack.version, "minor")
    section = failure_section(failures, manifest)
    skill_md = (pack.path / "SKILL.md").read_text(encoding="utf-8")
    head, _, _ = skill_md.partition(pack.body) if pack.body else (skill_md, "", "")
    head = re.sub(r'(\n\s+version:\s*)"?[^"\n]+"?', rf'\g<1>"{version}"', head, count=1)
    new_md = head + _with_section(pack.body, section)
    files = {
        p.relative_to(pack.path).as_posix(): p.read_text(encoding="utf-8")
        for p in pack.path.rglob("*")
        if p.is_file()
    }
    files["SKILL.md"] = new_md
    compact = files.get("references/compact.md", f"# {pack.name} (compact)\n")
    lines = [x for x in compact.splitlines() if not x.startswith("- Student failure: ")]
    lines[2:2] = [
        f"- Student failure: {f.error_class} -> {ADVICE.get(f.error_class, 'see SKILL.md')}"
        for f in failures[:4]
    ]
    files["references/compact.md"] = "\n".join(lines).rstrip() + "\n"
    diff = "".join(
        difflib.unified_diff(
            skill_md.splitlines(True), new_md.splitlines(True), "SKILL.md (old)", "SKILL.md (new)"
        )
    )
    cases = run_dir / "refine" / "heldout-cases"
    if _heldout_cases(manifest, cases):
        out.heldout_cases = str(cases)
        students = ",".join(manifest.config.students)
        out.rerun_config = {
            "students": list(manifest.config.students),
            "skills": [pack.ref, f"{pack.name}@{version}"],
            "cases": [str(cases)],
            "arms": ["baseline", "inline"],
            "samples": manifest.config.samples,
            "out": str(run_dir / "refine" / "lift"),
            "device": manifest.config.device,
        }
        out.rerun_command = (
            f"upskills lift --students {students} --skills {pack.ref},{pack.name}@{version} "
            f"--cases {cases} --arms baseline,inline --samples {manifest.config.samples} "
            f"--out {run_dir / 'refine' / 'lift'}"
        )
    out.new_version = version
    files["references/refinement.json"] = out.model_dump_json(indent=1) + "\n"
    files["references/refinement.md"] = (
        f"# Refinement {pack.ref} -> {version}\n\nFrom lift run `{run_dir.name}`: "
        f"{train} train samples read.\n\n{section}\n## Re-run on held-out cases\n\n"
        f"`{out.rerun_command or 'no held-out cases in the run'}`\n\n## SKILL.md diff\n\n"
        f"```diff\n{diff}```\n"
    )
    root = Path(skills_dir) if ".versions" in pack.path.parts else pack.path.parent
    stage = staging_dir(root)
    try:
        folder = stage / pack.name
        write_tree(folder, files)
        errors = validate_pack(folder)
        if errors:
            raise ValueError(f"refined pack {pack.name} fails validation: " + "; ".join(errors))
        if not (root / ".versions" / pack.name / pack.version).exists():
            archive_version(root, pack.path, pack.name, pack.version)
        archive_version(root, folder, pack.name, version)
        swap_in(folder, root / pack.name, stage)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    if load_pack(root / pack.name).version != version:
        raise ValueError(f"{root / pack.name}: version {version} was not written")
    (run_dir / "refine").mkdir(parents=True, exist_ok=True)
    (run_dir / "refine" / "refinement.json").write_text(json.dumps(out.model_dump(), indent=1))
    return out
