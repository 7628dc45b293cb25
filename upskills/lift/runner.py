"""run_lift: prepare an experiment (validate everything first), then generate and evaluate.

Preparation loads and checks every input before any model or GPU time is spent: student configs
(schema, provider, weights, endpoint reachability), skill packs (the Agent Skills validator),
cases (the reference parses and defines ``Model``, ``get_inputs``, ``get_init_inputs``) and
held-out discipline (a case whose task fed a skill is refused unless ``allow_train``). The run
folder's ``run.json`` fixes the experiment; re-running the same command resumes it.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from upskills import __version__
from upskills.lift.arms import build_arms, estimate_tokens
from upskills.lift.config import RUN_MANIFEST, CaseInfo, LiftConfig, RunManifest
from upskills.lift.generate import Generator, generations_path
from upskills.lift.prompting import prompt_hashes
from upskills.lift.student import Student, StudentError, check_endpoint, load_student
from upskills.tasks.model import Task

if TYPE_CHECKING:
    from upskills.cases.model import TestCase
    from upskills.llm.base import Provider
    from upskills.skills.pack import SkillPack


class LiftError(ValueError):
    """An experiment input is invalid; raised before any generation."""


def _collect_traces(refs: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for ref in refs:
        p = Path(ref)
        if p.is_dir():
            files += sorted(p.rglob("*.jsonl"))
        elif p.is_file():
            files.append(p)
        else:
            raise LiftError(f"--traces {ref}: no such file or folder")
    return files


def _load_cases(refs: Sequence[str]) -> list[TestCase]:
    from upskills.cases import model as cases_model

    out: list[TestCase] = []
    for ref in refs:
        p = Path(ref)
        try:
            out += cases_model.load_cases(p)
        except cases_model.CaseError as exc:
            raise LiftError(f"--cases {ref}: {exc}") from None
    if not out:
        raise LiftError(f"no test cases found in {', '.join(refs)}")
    ids = [c.id for c in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise LiftError(f"duplicate case ids: {', '.join(dupes)}")
    return sorted(out, key=lambda c: c.id)


def check_reference(case: TestCase) -> None:
    """Fail when a case's reference cannot be a KernelBench module (before any GPU time)."""
    where = f"case {case.id} (task {case.task})"
    try:
        tree = ast.parse(case.task_source)
    except SyntaxError as exc:
        raise LiftError(
            f"{where}: reference line {exc.lineno}: does not parse: {exc.msg}"
        ) from None
    names = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise LiftError(f"{where}: reference defines no {', '.join(missing)}")


def case_task(case: TestCase) -> Task:
    """The Task a case is judged against (built-in when the source matches, else the case's)."""
    if getattr(case, "task_variants", None):
        return case.to_task()
    try:
        from upskills.tasks import load_task

        task = load_task(case.task)
        if task.source == case.task_source:
            return task
    except Exception:  # noqa: BLE001 - not a built-in name: fall back to the case's source
        pass
    return Task(
        name=case.task,
        statement=case.statement or case.task,
        tags=list(case.tags),
        dtypes=list(case.dtypes),
        source=case.task_source,
        origin=f"case:{case.id}",
        atol=case.atol,
        rtol=case.rtol,
    )


def _fed_hashes(packs: Sequence[SkillPack]) -> set[str]:
    """Task and family hashes of the tasks whose traces fed the packs (from their provenance)."""
    return {
        h
        for p in packs
        if p.provenance
        for h in p.provenance.task_hashes() | set(p.provenance.families)
    }


def _load_packs(refs: Sequence[str]) -> list[SkillPack]:
    from upskills.skills.pack import PackError, resolve_pack, validate_pack

    packs = []
    for ref in refs:
        try:
            pack = resolve_pack(ref)
        except PackError as exc:
            raise LiftError(f"--skills {ref}: {exc}") from None
        errors = validate_pack(pack.path)
        if errors:
            raise LiftError(f"skill {ref} fails validation:\n  " + "\n  ".join(errors))
        packs.append(pack)
    return packs


def load_provider(student: Student) -> Provider:
    """The student's provider, with config problems reported as a LiftError."""
    from upskills.llm import get_provider
    from upskills.llm.base import ProviderError

    try:
        check_endpoint(student)
    except StudentError as exc:
        raise LiftError(str(exc)) from None
    threads = os.environ.get("UPSKILLS_CPU_THREADS") or student.cpu_threads
    if student.is_local() and threads and student.device == "cpu":
        import torch

        torch.set_num_threads(int(threads))  # this machine's choice: not part of the run's identity
    try:
        return get_provider(student.provider_spec(), **student.provider_options())
    except (ProviderError, FileNotFoundError, ValueError) as exc:
        where = student.source or student.name
        raise LiftError(f"{where}: student {student.name} cannot load: {exc}") from None


def _tokenizer_counter(tok: Any) -> Any:
    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False))

    return count


def _token_counter(students: Sequence[Student], providers: dict[str, Any]) -> tuple[Any, str]:
    for s in students:
        provider = providers[s.name]
        tok = getattr(provider, "tokenizer", None)
        if tok is None:  # TransformersProvider keeps it on its loaded model
            tok = getattr(getattr(provider, "_loaded", None), "tokenizer", None)
        if s.is_local() and tok is not None and hasattr(tok, "encode"):
            return _tokenizer_counter(tok), f"tokenizer:{s.name}"
    return estimate_tokens, "estimate:chars/4"


def can_score(provider: object) -> bool:
    """Whether a provider returns log-likelihoods of given continuations (``score_batch``)."""
    return callable(getattr(provider, "score_batch", None)) and bool(
        getattr(provider, "scores_log_likelihood", True)
    )


def _check_arms(config: LiftConfig) -> None:
    """Arm problems a user can hit, raised before any student loads."""
    from upskills.lift.arms import ARM_KINDS

    unknown = sorted(set(config.arms) - set(ARM_KINDS))
    if unknown:
        raise LiftError(f"unknown arm kind(s) {unknown}; choose from {', '.join(ARM_KINDS)}")
    if "excerpt" in config.arms and not config.traces:
        raise LiftError("the excerpt arm needs the skill's source traces: pass --traces DIR")
    if "off_topic" in config.arms and not config.off_topic:
        raise LiftError("the off_topic arm needs a real pack on another topic: pass --off-topic")


def _case_families(cases: Sequence[Any]) -> dict[str, str]:
    """Each case's family recomputed from its source; a disagreeing stored family is refused."""
    from upskills.cases.family import family_hash

    families: dict[str, str] = {}
    for c in cases:
        try:
            families[c.id] = family_hash(c.task_source)
        except SyntaxError:
            families[c.id] = ""  # check_reference names the line
        if c.family and c.family != families[c.id]:
            raise LiftError(
                f"case {c.id}: stored family {c.family} is not the family of its reference "
                f"source ({families[c.id]}); the case was edited after it was built: rebuild it"
            )
    return families


def _case_info(c: Any, fed: set[str], fed_families: set[str], family: str) -> CaseInfo:
    from upskills.cases.model import Choice

    choices = list(c.choices)
    if c.rung == "fill" and not choices and c.known_good:  # cases built before fill kept it
        removed = c.known_good[len(c.kernel_prefix) :].split("\n", 1)[0]
        choices = [Choice(line=removed, correct=True)]
    train = c.split == "train" or c.task_hash in fed or family in fed_families
    return CaseInfo(
        id=c.id,
        task=c.task,
        task_hash=c.task_hash,
        split="train" if train else c.split,
        tags=list(c.tags),
        prompt=c.prompt,
        variants=list(c.variants) or None,
        task_def=case_task(c),
        rung=c.rung,
        family=family,
        choices=choices,
        kernel_prefix=c.kernel_prefix,
        kernel_suffix=c.kernel_suffix,
    )


def prepare(
    config: LiftConfig,
) -> tuple[RunManifest, list[Student], dict[str, Provider], list[SkillPack]]:
    """Validate every input and build the manifest; loads providers but calls no model.

    Returns:
        (manifest, students, providers by student name, skill packs).

    Raises:
        LiftError: any invalid input, naming what and where.
    """
    from upskills.cases.family import pack_families

    _check_arms(config)
    trace_files = _collect_traces(config.traces)
    try:
        students = [load_student(s) for s in config.students]
        if config.student_device:
            students = [
                s.model_copy(
                    update={"device": config.student_device}
                    | ({"dtype": None} if config.student_device.startswith("cuda") else {})
                )
                if s.is_local()
                else s
                for s in students
            ]
    except StudentError as exc:
        raise LiftError(str(exc)) from None
    names = [s.name for s in students]
    if len(set(names)) != len(names):
        raise LiftError(f"duplicate student names: {names}")
    packs = _load_packs(config.skills)
    others = _load_packs(config.off_topic)
    needs_skill = {"inline", "on_demand", "placebo", "excerpt"} & set(config.arms)
    if needs_skill and not packs:
        raise LiftError(f"arms {sorted(needs_skill)} need at least one skill (--skills)")
    cases = [c for c in _load_cases(config.cases) if c.rung in config.rungs]
    if not cases:
        raise LiftError(f"no cases of rungs {config.rungs} in {', '.join(config.cases)}")
    fed = _fed_hashes(packs)
    fed_families = pack_families(packs)
    families = _case_families(cases)
    refused = [
        c.id
        for c in cases
        if c.split == "train" or c.task_hash in fed or families[c.id] in fed_families
    ]
    if refused and not config.allow_train:
        raise LiftError(
            f"{len(refused)} case(s) come from tasks that fed the skills (train split): "
            f"{', '.join(refused[:8])}{' ...' if len(refused) > 8 else ''}; use held-out cases "
            "or pass --allow-train (the report then labels those figures as train)"
        )
    for c in cases:
        check_reference(c)
        known = {v.name for v in case_task(c).all_variants()}
        unknown = [v for v in c.variants if v not in known]
        if unknown:
            raise LiftError(
                f"case {c.id}: variant {unknown[0]!r} is not a variant of task {c.task} "
                f"({', '.join(sorted(known))})"
            )
    if config.max_cases:
        cases = cases[: config.max_cases]
    providers = {s.name: load_provider(s) for s in students}
    if any(c.rung == "choose" for c in cases):
        for s in students:
            if not can_score(providers[s.name]):
                raise LiftError(
                    f"student {s.name} ({s.provider}): its provider cannot return prompt "
                    "log-probabilities, which choose cases need. Students that can: local "
                    "(transformers) ones, and openai ones served by vLLM or SGLang with "
                    "prompt_logprobs: true and chat_template in their YAML; OpenAI's API, "
                    "Anthropic, llama.cpp's server and Ollama cannot (docs/design/scoring.md). "
                    "Use such a student or drop the choose cases (--rungs)"
                )
    count, counter_name = _token_counter(students, providers)
    try:
        arms = build_arms(
            packs, config.arms, count, trace_files, compact=config.compact, off_topic=others
        )
    except ValueError as exc:
        raise LiftError(str(exc)) from None
    infos = [_case_info(c, fed, fed_families, families[c.id]) for c in cases]
    manifest = RunManifest(
        config=config,
        arms=arms,
        cases=infos,
        students=[s.model_dump(mode="json") for s in students],
        prompt_hashes=prompt_hashes(),
        token_counter=counter_name,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        upskills_version=__version__,
    )
    return manifest, students, providers, packs


def _write_manifest(run_dir: Path, manifest: RunManifest) -> RunManifest:
    path = run_dir / RUN_MANIFEST
    run_dir.mkdir(parents=True, exist_ok=True)
    if path.is_file():
        old = RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
        if old.identity() != manifest.identity():
            raise LiftError(
                f"{path} describes a different experiment (arms, cases, students, samples, seed "
                "or prompts differ); use a new --out folder"
            )
        return old
    path.write_text(manifest.model_dump_json(indent=1), encoding="utf-8")
    return manifest


def run_lift(config: LiftConfig, command: str | None = None) -> Path:
    """Run (or resume) a lift experiment: prepare, generate, evaluate.

    Args:
        config: the experiment.
        command: the command line, written to ``command.txt`` once every input validated.

    Returns:
        The run folder.

    Raises:
        LiftError: invalid inputs (nothing is generated then).
        InfrastructureError: samples still end in infrastructure errors after this run.
    """
    from tqdm import tqdm

    from upskills.lift.evaluate import CaseChecker, evaluate_run, resolve_device

    manifest, students, providers, packs = prepare(config)
    run_dir = Path(config.out)
    manifest = _write_manifest(run_dir, manifest)
    if command is not None:
        (run_dir / "command.txt").write_text(command + "\n", "utf-8")
    from upskills.skills.attach import read_skill_tool

    tools: dict[str, Any] = {
        a.skill: read_skill_tool([p for p in packs if p.ref == a.skill])
        for a in manifest.arms
        if a.uses_tool and a.skill
    }
    checker = CaseChecker(config, resolve_device(config.device)) if config.mode == "agent" else None
    path = generations_path(run_dir)
    total = (
        len(students) * len(manifest.arms) * sum(c.samples(config.samples) for c in manifest.cases)
    )
    from upskills.lift.store import GenerationRecord, read_records

    have = len(read_records(path, GenerationRecord))
    bar = tqdm(
        total=total, initial=have, desc="generate", unit="sample", disable=not config.progress
    )
    try:
        for s in students:
            Generator(manifest, s, providers[s.name], tools, checker).run(path, bar)
    finally:
        bar.close()
        if checker is not None:
            checker.close()
    if config.evaluate:
        evaluate_run(run_dir, config.device, progress=config.progress)
    (run_dir / "command.json").write_text(json.dumps(config.model_dump(), indent=1), "utf-8")
    failed = [r.key for r in read_records(path, GenerationRecord) if r.error is not None]
    if failed:
        raise InfrastructureError(
            f"{len(failed)} sample(s) ended in infrastructure errors (first: {failed[0]}); they "
            "are excluded from pass rates; rerun the same command to retry them"
        )
    return run_dir


class InfrastructureError(RuntimeError):
    """Samples failed for reasons that are not the student's (HTTP, timeout, outage)."""
