"""LiftConfig: one lift experiment (students x arms x cases x samples) and its run manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.cases.model import Choice
from upskills.lift.arms import ARM_KINDS, Arm
from upskills.tasks.model import Task

RUN_MANIFEST = "run.json"
"""The manifest inside a run folder."""


class LiftConfig(BaseModel):
    """What a lift experiment measures and how (the CLI's flags, as a record)."""

    model_config = ConfigDict(extra="forbid")

    out: str
    """Run folder (created; an existing one with the same manifest is resumed)."""
    students: list[str]
    """Student names (in ``students/`` or embedded) or YAML paths."""
    skills: list[str] = Field(default_factory=list)
    """Skill packs: folders, or ``name[@version]`` resolved in ``skills/``."""
    cases: list[str]
    """Test case folders or YAML files."""
    samples: int = Field(default=3, ge=1)
    """Samples per student x arm x case."""
    arms: list[str] = Field(default_factory=lambda: [k for k in ARM_KINDS if k != "off_topic"])
    """Arm kinds: baseline, inline, on_demand, placebo, off_topic, excerpt."""
    rungs: list[str] = Field(default_factory=lambda: ["choose", "fill", "repair", "write"])
    """Ladder rungs to run (cases of other rungs are skipped)."""
    off_topic: list[str] = Field(default_factory=list)
    """Skill packs on another topic for the ``off_topic`` control arm."""
    mode: Literal["one_shot", "agent"] = "one_shot"
    """One response per sample, or an agent loop with verifier feedback."""
    agent_turns: int = Field(default=3, ge=1)
    """Model turns per sample in agent mode (feedback after each failing kernel)."""
    seed: int = 0
    """Run seed; sample i of case c uses seed hash(seed, c, i) in every arm."""
    allow_train: bool = False
    """Allow cases whose task fed a skill (train split); refused otherwise."""
    traces: list[str] = Field(default_factory=list)
    """Trace files or folders searched for the excerpt arm's source traces."""
    compact: bool = False
    """Inline each skill's compact variant (for small students)."""
    max_new_tokens: int | None = None
    """Override of every student's ``sampling.max_new_tokens``."""
    student_device: str | None = None
    """Override of local students' ``device`` (``cpu``, ``cuda``); None keeps their config."""
    max_cases: int | None = Field(default=None, ge=1)
    """Use only the first N eligible cases (sorted by id)."""
    device: str = "auto"
    """Evaluation device: ``auto``, ``cpu`` (Triton interpreter) or ``cuda``."""
    evaluate: bool = True
    """Run the evaluation phase after generation."""
    check_seeds: int = Field(default=1, ge=1)
    """Input seeds per shape variant in each verdict."""
    check_timeout_s: float = Field(default=120.0, gt=0)
    """Time limit of one verdict."""
    max_tool_reads: int = Field(default=3, ge=0)
    """Most ``read_skill`` calls per sample in on-demand arms."""
    progress: bool = True
    """Show progress bars (counts and ETA) on stderr."""


class CaseInfo(BaseModel):
    """A case as the run manifest records it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Case id."""
    task: str
    """Task name."""
    task_hash: str
    """Task content hash."""
    split: str
    """``heldout`` or ``train``."""
    tags: list[str] = Field(default_factory=list)
    """Technique tags."""
    prompt: str
    """The prompt the student sees."""
    variants: list[str] | None = None
    """Shape variants checked (None: all the task's variants the device can run)."""
    task_def: Task
    """The task itself, so evaluation needs nothing but the run folder."""
    rung: str = "write"
    """Ladder rung: ``choose``, ``fill``, ``repair`` or ``write``."""
    family: str = ""
    """Family hash, recomputed from the task source when the run was prepared."""
    choices: list[Choice] = Field(default_factory=list)
    """``choose``: the candidate lines with the verifier's labels."""
    kernel_prefix: str = ""
    """``choose``/``fill``: kernel text before the differing line."""
    kernel_suffix: str = ""
    """``choose``/``fill``: kernel text after the differing line."""

    @property
    def chance(self) -> float | None:
        """Pass rate of a uniform guess (choose: correct choices / k); None for other rungs."""
        if self.rung != "choose" or not self.choices:
            return None
        return sum(c.correct for c in self.choices) / len(self.choices)

    def samples(self, requested: int) -> int:
        """Samples this case takes: a ``choose`` score is deterministic, so one."""
        return 1 if self.rung == "choose" else requested


class RunManifest(BaseModel):
    """What a run folder holds: config, arms, cases, students and prompt hashes."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    config: LiftConfig
    """The experiment's config."""
    arms: list[Arm]
    """Arms with their blocks."""
    cases: list[CaseInfo]
    """Cases in the experiment."""
    students: list[dict[str, Any]]
    """Student configs as used (sampling included)."""
    prompt_hashes: dict[str, str]
    """sha256 of each package prompt used."""
    token_counter: str
    """How block tokens were counted (``tokenizer:<student>`` or ``estimate:chars/4``)."""
    created: str
    """UTC time the run was created."""
    upskills_version: str
    """Package version."""

    def identity(self) -> dict[str, Any]:
        """The parts that must match for a run folder to be resumed."""
        return {
            "arms": [(a.name, a.block_hash) for a in self.arms],
            "cases": [(c.id, c.task_hash) for c in self.cases],
            "students": self.students,
            "samples": self.config.samples,
            "seed": self.config.seed,
            "mode": self.config.mode,
            "rungs": self.config.rungs,
            "generation": {
                "max_new_tokens": self.config.max_new_tokens,
                "compact": self.config.compact,
                "agent_turns": self.config.agent_turns,
                "max_tool_reads": self.config.max_tool_reads,
            },
            "prompts": self.prompt_hashes,
        }


def load_manifest(run_dir: Path) -> RunManifest:
    """Read ``run.json`` of a run folder (clear error when missing or invalid)."""
    path = Path(run_dir) / RUN_MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: {run_dir} is not a lift run folder")
    return RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
