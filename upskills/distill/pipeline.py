"""``distill``: traces in, skill packs and test cases out.

Streams every trace file once (one trace in memory at a time), keeps the lessons and the best
kernel per task, merges lessons across traces, groups them into packs (by technique family, by
task domain, or one named pack), renders, validates, versions and swaps the packs into place,
then writes the test cases. Nothing in the output depends on the order of the inputs, the
clock or the machine.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import upskills
from upskills.distill.ablate import Judge
from upskills.distill.attribution import Attribution
from upskills.distill.episodes import TraceSummary, link_sessions, summarize_trace
from upskills.distill.lessons import Lesson, merge_lessons, mine_trace
from upskills.distill.render import PackPlan, Template, render_pack
from upskills.distill.store import archive_version, next_version, staging_dir, swap_in, write_tree
from upskills.distill.techniques import FAMILIES, TECHNIQUES, analyze_kernel
from upskills.skills.pack import PackError, validate_name, validate_pack
from upskills.skills.provenance import Provenance, TemplateSource, TraceSource

log = logging.getLogger(__name__)

DISTILLER = f"upskills-distill {upskills.__version__}"
"""Name and version of the distiller, recorded in every pack's provenance."""

FAMILY_TITLES = {
    "memory-access": ("gpu-memory-access", "GPU kernel memory access", "memory-bound"),
    "reductions": ("gpu-reductions", "GPU kernel reductions", "reduction, norm and softmax"),
    "tiling": ("gpu-tiling", "GPU kernel tiling", "matmul, attention and convolution"),
    "launch-tuning": ("gpu-launch-tuning", "GPU kernel launch tuning", "performance-critical"),
    "general": ("gpu-kernel-debugging", "GPU kernel debugging", "any GPU"),
}
"""Family -> (pack name, title, scope) for ``group='family'``."""


class DistillError(RuntimeError):
    """Distillation cannot proceed (bad input folder, nothing selected, invalid name)."""


class DistillConfig(BaseModel):
    """Options of one distillation."""

    model_config = ConfigDict(extra="forbid")

    group: Literal["family", "domain"] = "family"
    """One pack per technique family, or one per task domain (category tag)."""
    name: str | None = None
    """Put every lesson in one pack with this name (overrides ``group``)."""
    min_speedup: float | None = None
    """Select only traces whose best speedup vs eager reaches this (None: correctness only)."""
    min_prevalence: int = 2
    """Lessons seen in fewer traces go to references/, not SKILL.md."""
    rare_fixes: int = 12
    """Rare repairs (below ``min_prevalence``) listed in one line each in SKILL.md (0: none)."""
    teacher: str | None = None
    """``PROVIDER/MODEL`` that rewrites the prose from the same evidence (None: no model)."""
    suite: str = "kernels"
    """Name of the test-case suite folder under the cases folder."""
    max_templates: int = 2
    """Kernel templates per pack in scripts/."""
    include_builtin_cases: bool = True
    """Also write held-out cases for built-in tasks that fed no skill."""
    ablate: bool = False
    """Measure multi-change perf episodes one change at a time (``--ablate``)."""
    device: str = "cpu"
    """Device of the ablation verifier: ``cuda`` times changes; ``cpu`` checks correctness
    only, so multi-change effects stay confounded."""
    ablation_cache: str | None = None
    """JSONL of ablation measurements (read, and appended to with ``ablate``); None: none."""
    ablation_read: list[str] = Field(default_factory=list[str])
    """More ablation caches, only read (another GPU's measurements: ``ablate.py``)."""


@dataclass
class PackOutcome:
    """What happened to one pack."""

    name: str
    version: str
    change: str
    path: Path


@dataclass
class DistillResult:
    """Summary of a distillation."""

    traces_read: int = 0
    traces_selected: int = 0
    lessons: int = 0
    packs: list[PackOutcome] = field(default_factory=list)
    cases: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    ablations: dict[str, int] = field(default_factory=dict)
    """Multi-change perf episodes by attribution status (``ablated``, ``confounded``)."""
    cross_session: int = 0
    """Sessions whose first attempt was read as a change to the previous session's kernel."""


@dataclass
class _Evidence:
    lessons: list[Lesson] = field(default_factory=list)
    families: dict[str, str] = field(default_factory=dict)
    ablations: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    traces: dict[str, dict[str, str]] = field(default_factory=dict)
    best: dict[str, Template] = field(default_factory=dict)
    fed: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    techniques: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Task hash -> the techniques of every selected session's final kernel (test-case tags)."""
    template_techniques: dict[str, set[str]] = field(default_factory=dict)
    """Task hash -> the techniques of ``best``'s kernel alone: what its template shows (a
    slower CUDA session's warp shuffles are not the Triton template's)."""


def _selected(trace: TraceSummary, config: DistillConfig) -> bool:
    final = trace.final_kernel()
    if not trace.solved or final is None:
        return False
    if config.min_speedup is None:
        return True
    speed = trace.best_speedup if trace.best_speedup is not None else final.speedup
    return speed is not None and speed >= config.min_speedup


@functools.cache
def _family(task: str, task_hash: str) -> str:
    """Family hash of a traced task, from its reference source (its task hash if unknown)."""
    from upskills.distill.family import family_hash

    try:
        from upskills.tasks import load_task

        return family_hash(load_task(task).source)
    except Exception:  # noqa: BLE001 - a task we cannot load is its own family
        return task_hash


def _better(new: Template, old: Template | None) -> bool:
    if old is None:
        return True
    return (new.speedup or 0.0, new.trace_id) > (old.speedup or 0.0, old.trace_id)


def _collect(
    paths: Iterable[Path], config: DistillConfig, result: DistillResult, judge: Judge | None
) -> _Evidence:
    ev = _Evidence()
    summaries = [_summarize(path, result) for path in paths]
    selected = [t for t in summaries if t.trace_id and _selected(t, config)]
    result.cross_session = link_sessions(selected)
    with Attribution(config, judge) as attribution:
        for trace in selected:
            _collect_one(trace, result, ev, attribution)
    ev.ablations.update(attribution.counts)
    return ev


def _summarize(path: Path, result: DistillResult) -> TraceSummary:
    try:
        trace = summarize_trace(path)
    except OSError as exc:
        raise DistillError(f"cannot read trace {path}: {exc}") from exc
    result.traces_read += 1
    result.errors += [str(e) for e in trace.errors]
    return trace


def _collect_one(
    trace: TraceSummary,
    result: DistillResult,
    ev: _Evidence,
    attribution: Attribution,
) -> None:
    path = trace.path
    if trace.trace_id in ev.traces:
        result.warnings.append(f"{path}: trace {trace.trace_id} seen twice; kept the first")
        return
    result.traces_selected += 1
    ev.traces[trace.trace_id] = {
        "trace_id": trace.trace_id,
        "sha256": trace.sha256,
        "task": trace.task,
        "task_hash": trace.task_hash,
        "file": path.name,
        "model": trace.model or "",
    }
    ev.lessons += mine_trace(trace, attribution)
    final = trace.final_kernel()
    assert final is not None
    template = Template(
        trace.task,
        trace.task_hash,
        trace.trace_id,
        final.kernel_source,
        final.speedup,
        final.speedup_compile,
        final.gpu,
    )
    family = _family(trace.task, trace.task_hash)
    ev.families[trace.task_hash] = family
    used = set(analyze_kernel(final.kernel_source))
    if _better(template, ev.best.get(trace.task_hash)):
        ev.best[trace.task_hash] = template
        ev.template_techniques[trace.task_hash] = used
    ev.fed[trace.task_hash].add(trace.trace_id)
    ev.techniques[trace.task_hash] |= used


GENERIC_CONSTRUCTS = ("launch_config", "masking")
"""Techniques whose constructs (a launch, an ``if (``) appear in almost any change."""


def _confounded_family(lesson: Lesson) -> str:
    """Family of a confounded perf lesson, or of a measured one whose change adds no technique.

    E.g. a second pass made ``float4`` too: the kernel already had the technique. The first
    technique its changes add or drop; else the family whose constructs (``snippets.MARKERS``:
    ``float4``, ``__shfl_``, ``cp.async``) the changed code shows most; else launch tuning.
    """
    from upskills.distill.snippets import MARKERS

    perf_unnamed = lesson.technique == "unclassified" and lesson.kind == "perf"
    if lesson.technique != "confounded" and not perf_unnamed:
        return "general"
    for change in lesson.effect.changes:
        for word in change.replace(";", " ").split():
            if word in TECHNIQUES and word != "launch_config":
                return TECHNIQUES[word].family
    votes: dict[str, int] = defaultdict(int)
    for change in lesson.effect.changes:
        for tech, marker in MARKERS.items():
            if tech in TECHNIQUES and tech not in GENERIC_CONSTRUCTS and marker.search(change):
                votes[TECHNIQUES[tech].family] += 1
    if votes:
        return max(FAMILIES, key=lambda f: (votes.get(f, 0), -FAMILIES.index(f)))
    return "launch-tuning"


def _groups(
    lessons: list[Lesson], config: DistillConfig
) -> dict[str, tuple[str, str, list[Lesson]]]:
    """Pack name -> (title, scope, lessons)."""
    out: dict[str, tuple[str, str, list[Lesson]]] = {}
    if config.name:
        return {config.name: ("GPU kernel skills", "GPU", lessons)}
    for lesson in lessons:
        if config.group == "family":
            info = TECHNIQUES.get(lesson.technique)
            keys = [info.family if info else _confounded_family(lesson)]
        else:
            keys = lesson.preconditions.tags or ["general"]
        for key in keys:
            if config.group == "family":
                name, title, scope = FAMILY_TITLES[key]
            else:
                name, title, scope = f"gpu-{key}-kernels", f"GPU {key} kernels", key
            out.setdefault(name, (title, scope, []))[2].append(lesson)
    order = {FAMILY_TITLES[f][0]: i for i, f in enumerate((*FAMILIES, "general"))}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))


def template_homes(groups: dict[str, list[Lesson]], ev: _Evidence) -> dict[str, str]:
    """The one pack each kernel may be a template of: task hash -> pack name.

    A kernel goes to the pack whose taught techniques it shows most *distinctively*: each
    technique weighs 1 / (number of final kernels that use it), so masking or a launch
    configuration (in nearly every kernel) count little and a padded shared-memory tile or a
    warp shuffle count much. Ties go to the pack with more of the kernel's techniques, then by
    name. One norm kernel that also stages a reduction in shared memory is then the template
    of one pack, not of every pack that mentions shared memory.
    """
    taught = {
        name: {x.technique for x in lessons if x.supported and x.technique in TECHNIQUES}
        for name, lessons in groups.items()
    }
    users: dict[str, int] = {}
    for task_hash in ev.best:
        for tech in ev.template_techniques.get(task_hash, set()):
            users[tech] = users.get(tech, 0) + 1
    homes: dict[str, str] = {}
    for task_hash in ev.best:
        used = ev.template_techniques.get(task_hash, set())
        scored = sorted(
            (-sum(1.0 / users[x] for x in used & t), -len(used & t), name)
            for name, t in taught.items()
            if used & t
        )
        if scored:
            homes[task_hash] = scored[0][2]
    return homes


def templates_by_merit(
    lessons: list[Lesson], ev: _Evidence, limit: int, allowed: set[str] | None = None
) -> list[Template]:
    """A pack's scripts: the verified final kernels that show most of its topic, fastest first.

    A kernel fits when it uses a technique the pack teaches (a supported lesson's); kernels
    that use more of them rank first (a vectorized elementwise kernel before a norm that also
    masks), then by speed. Timed kernels slower than eager are never chosen; untimed
    (CPU-verified) kernels are chosen only when no kernel of the corpus was timed, and are
    labelled "correctness only".
    """
    taught = {x.technique for x in lessons if x.supported and x.technique in TECHNIQUES}
    shows = {h: ev.template_techniques.get(h, set()) for h in ev.best}
    fits = [t for t in ev.best.values() if shows[t.task_hash] & taught]
    if allowed is not None:
        fits = [t for t in fits if t.task_hash in allowed]
    timed = [t for t in ev.best.values() if t.speedup is not None]
    if timed:
        fits = [t for t in fits if t.speedup is not None and t.speedup >= 1.0]
    ranked = sorted(
        fits,
        key=lambda t: (
            -len(shows[t.task_hash] & taught),
            -(t.speedup or 0.0),
            t.task,
            t.task_hash,
        ),
    )
    return ranked[:limit]


def _plan(
    name: str,
    title: str,
    scope: str,
    lessons: list[Lesson],
    ev: _Evidence,
    config: DistillConfig,
    prompts: dict[str, str],
    homes: dict[str, str],
) -> PackPlan:
    trace_ids = sorted({s.trace_id for x in lessons for s in x.sources})
    mine = {h for h, pack in homes.items() if pack == name}
    templates = templates_by_merit(lessons, ev, config.max_templates, mine)
    evidence = hashlib.sha256(
        "\n".join(f"{t} {ev.traces[t]['sha256']}" for t in trace_ids).encode()
    ).hexdigest()[:16]
    provenance = Provenance(
        distiller=DISTILLER,
        evidence_sha256=evidence,
        # ablation_read only where given: the packs distilled before it existed stay unchanged
        config=config.model_dump(
            mode="json",
            exclude={"teacher"} | (set() if config.ablation_read else {"ablation_read"}),
        ),
        teacher=config.teacher,
        prompts=prompts,
        traces=[TraceSource.model_validate(ev.traces[t]) for t in trace_ids],
        templates=[
            TemplateSource(
                file=t.filename,
                task=t.task,
                trace_id=t.trace_id,
                speedup_eager=t.speedup,
                speedup_compile=t.speedup_compile,
                gpu=t.gpu,
            )
            for t in templates
        ],
        families=sorted({ev.families[ev.traces[t]["task_hash"]] for t in trace_ids}),
        ablation=dict(sorted(ev.ablations.items())),
    )
    return PackPlan(
        name,
        title,
        scope,
        lessons,
        templates,
        provenance,
        config.min_prevalence,
        rare_fixes=config.rare_fixes,
    )


def _write_cases(ev: _Evidence, out_cases: Path, config: DistillConfig) -> list[Path]:
    from upskills.cases.generate import build_cases
    from upskills.cases.model import dump_case

    tasks = []
    try:
        from upskills.tasks import builtin_tasks, load_task

        known = {t.hash: t for t in (builtin_tasks() if config.include_builtin_cases else [])}
        for task_hash, template in ev.best.items():
            if task_hash not in known:
                try:
                    task = load_task(template.task)
                except Exception:  # noqa: BLE001 - a task we cannot load gets no case
                    continue
                if task.hash == task_hash:
                    known[task.hash] = task
        tasks = list(known.values())
    except ImportError:
        return []
    cases = build_cases(
        tasks,
        {h: sorted(ids) for h, ids in ev.fed.items()},
        techniques={h: sorted(t) for h, t in ev.techniques.items()},
        known_good={h: t.source for h, t in ev.best.items()},
    )
    fed_families = {ev.families[h]: sorted(ids) for h, ids in ev.fed.items()}
    cases = sorted(
        (_split_by_family(c, fed_families) for c in cases), key=lambda c: (c.split, c.id)
    )
    root = out_cases
    stage = staging_dir(root)
    try:
        suite = stage / config.suite
        suite.mkdir()
        seen: set[str] = set()
        for case in cases:
            stem = case.id if case.id not in seen else f"{case.id}-{case.task_hash[:8]}"
            seen.add(stem)
            (suite / f"{stem}.yaml").write_text(dump_case(case), encoding="utf-8")
        split = "".join(f"{c.split}\t{c.id}\t{c.task_hash}\n" for c in cases)
        (suite / "split.tsv").write_text("split\tcase\ttask_hash\n" + split, encoding="utf-8")
        swap_in(suite, root / config.suite, stage)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return sorted((root / config.suite).glob("*.yaml"))


def _split_by_family(case: Any, fed: dict[str, list[str]]) -> Any:
    """A case whose family (recomputed from its source) fed a skill is ``train``."""
    from upskills.distill.family import family_hash

    traces = fed.get(family_hash(case.task_source))
    if case.split == "train" or traces is None:
        return case
    origin = sorted({*case.origin, *(f"sibling-of-trace:{t}" for t in traces)} - {"builtin"})
    return case.model_copy(update={"split": "train", "origin": origin})


def distill(
    trace_paths: Iterable[str | Path],
    out_skills: str | Path = "skills",
    out_cases: str | Path | None = "testcases",
    config: DistillConfig | None = None,
    judge: Judge | None = None,
) -> DistillResult:
    """Distill traces into skill packs (and test cases).

    Args:
        trace_paths: trace files and folders (searched recursively for ``*.jsonl``).
        out_skills: the skills folder; packs go to ``<out_skills>/<name>/``.
        out_cases: the test-case folder (cases go to ``<out_cases>/<suite>/``); None skips cases.
        config: options; defaults when None.
        judge: checks and times ablation kernels (default: the verifier on ``config.device``;
            used only with ``config.ablate``).

    Returns:
        What was read, selected and written. Malformed trace lines are listed in ``errors``.

    Raises:
        DistillError: a path does not exist or cannot be read, no trace is selected, or a pack
            name is invalid. Nothing is written to ``out_skills`` in that case.
    """
    from upskills.trace.reader import iter_trace_files

    config = config or DistillConfig()
    started = time.perf_counter()
    if config.name:
        try:
            validate_name(config.name)
        except PackError as exc:
            raise DistillError(str(exc)) from exc
    result = DistillResult()
    trace_paths = list(trace_paths)
    for raw in trace_paths:
        if Path(raw).is_dir() and not _readable(Path(raw)):
            raise DistillError(f"cannot read folder {raw}: permission denied")
    try:
        files = sorted(set(iter_trace_files(trace_paths)))
    except (FileNotFoundError, PermissionError) as exc:
        raise DistillError(str(exc)) from exc
    ev = _collect(files, config, result, judge)
    if not ev.lessons:
        why = f"{result.traces_read} trace file(s) read, {result.traces_selected} selected"
        crit = "solved" + (f" with speedup >= {config.min_speedup}" if config.min_speedup else "")
        raise DistillError(f"no lessons to distill: {why} (selection: {crit})")
    result.ablations = dict(sorted(ev.ablations.items()))
    merged = merge_lessons(ev.lessons)
    result.lessons = len(merged)
    groups = _groups(merged, config)
    homes = template_homes({name: g[2] for name, g in groups.items()}, ev)
    plans = [
        _plan(name, title, scope, lessons, ev, config, _prompt_hashes(config), homes)
        for name, (title, scope, lessons) in groups.items()
    ]
    if config.teacher:
        from upskills.distill.teacher import rewrite_plans

        result.warnings += rewrite_plans(plans, config.teacher)
    owned = [v[0] for v in FAMILY_TITLES.values()] if config.group == "family" else []
    try:
        result.packs = _write_packs(plans, Path(out_skills), retire=[] if config.name else owned)
    except PackError as exc:  # e.g. an existing pack with a malformed version
        raise DistillError(f"cannot update packs in {out_skills}: {exc}") from exc
    if out_cases is not None:
        result.cases = _write_cases(ev, Path(out_cases), config)
    result.seconds = time.perf_counter() - started
    return result


def _readable(folder: Path) -> bool:
    try:
        next(iter(folder.iterdir()), None)
    except PermissionError:
        return False
    return True


def _prompt_hashes(config: DistillConfig) -> dict[str, str]:
    from upskills.prompts import load_prompt

    names = ["distill_case"] + (["distill_rewrite"] if config.teacher else [])
    return {n: load_prompt(n).sha256 for n in names}


def _write_packs(
    plans: list[PackPlan], skills_dir: Path, retire: Iterable[str] = ()
) -> list[PackOutcome]:
    """Render, validate and version every pack in staging; then swap them all in.

    A pack named in ``retire`` that this distillation did not produce, and that an earlier
    distillation wrote (its provenance names the distiller), is retired: its folder leaves
    ``skills_dir`` and its versions stay in ``.versions/`` (a family pack whose lessons are
    gone must not keep citing traces that are no longer there). A hand-written pack of the
    same name is left alone.
    """
    stage = staging_dir(skills_dir)
    outcomes: list[PackOutcome] = []
    try:
        staged: list[tuple[PackPlan, str, str, Path]] = []
        for plan in plans:
            version, change, files = next_version(
                skills_dir / plan.name, lambda v, plan=plan: render_pack(plan, v)
            )
            folder = stage / plan.name
            write_tree(folder, files)
            errors = validate_pack(folder)
            if errors:
                raise DistillError(f"pack {plan.name} failed validation: " + "; ".join(errors))
            staged.append((plan, version, change, folder))
        for plan, version, change, folder in staged:
            archive_version(skills_dir, folder, plan.name, version)
            if change != "unchanged":
                swap_in(folder, skills_dir / plan.name, stage)
            outcomes.append(PackOutcome(plan.name, version, change, skills_dir / plan.name))
        outcomes += _retire(sorted(set(retire) - {p.name for p in plans}), skills_dir, stage)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return outcomes


def _retire(names: list[str], skills_dir: Path, trash: Path) -> list[PackOutcome]:
    """Move distiller-made packs ``names`` out of ``skills_dir`` (archived first)."""
    from upskills.skills.pack import load_pack

    out = []
    for name in names:
        folder = skills_dir / name
        if not (folder / "SKILL.md").is_file():
            continue
        pack = load_pack(folder)
        if pack.provenance is None or not pack.provenance.distiller.startswith("upskills-distill"):
            continue
        archive_version(skills_dir, folder, name, pack.version)
        folder.rename(trash / f"retired-{name}")
        out.append(PackOutcome(name, pack.version, "retired", folder))
    return out
