"""The Report: what ``summary.json`` holds (one record per run, numbers with their intervals)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Interval(BaseModel):
    """A paired difference with its 95% clustered bootstrap CI and paired test."""

    model_config = ConfigDict(extra="forbid")

    mean: float
    """Mean per-case difference (arm minus reference), as a fraction (0.1 = 10 points)."""
    ci_low: float | None
    """Lower end of the 95% CI (None: one task, no interval can be claimed)."""
    ci_high: float | None
    """Upper end of the 95% CI (None: one task, no interval can be claimed)."""
    p_value: float
    """Two-sided sign-flip permutation p-value."""
    n_cases: int
    """Cases paired."""
    n_clusters: int
    """Distinct tasks (bootstrap clusters)."""
    better: int
    """Cases where the arm scored higher."""
    worse: int
    """Cases where the arm scored lower (how many cases got worse)."""
    method: str = "bootstrap"
    """Interval method: ``newcombe`` (paired Wilson), ``newcombe-tasks`` (paired Wilson on the
    table scaled to Kish's effective sample size: 0/1 outcomes, several cases a task),
    ``t`` (t over task clusters), ``t-few`` (fewer than 10 tasks: leans on normality,
    flagged), ``bootstrap``/``bootstrap-few`` (no spread in other scores) or ``none`` (one
    task: no interval)."""
    p_holm: float | None = None
    """p-value Holm-adjusted across every lift row of the report."""


class ArmStats(BaseModel):
    """Per student x arm: pass@k, fast_1, speedups, failures, tokens, latency, activation."""

    model_config = ConfigDict(extra="forbid")

    student: str
    """Student name."""
    arm: str
    """Arm name."""
    kind: str
    """Arm kind (baseline, inline, on_demand, placebo, excerpt)."""
    split: str
    """Splits the cases come from (``heldout``, ``train`` or ``heldout+train``)."""
    samples: int
    """Generated samples."""
    evaluated: int
    """Samples with an evaluation on the chosen device."""
    cases: int
    """Cases with every sample evaluated."""
    pass_at_k: dict[str, float | None]
    """Unbiased pass@k (k as string) averaged over cases; None with no case evaluated."""
    fast_1: float | None
    """Fraction of samples correct and faster than eager (None without timings)."""
    speedup_geomean: float | None
    """Geometric-mean speedup vs eager over correct kernels (None without timings)."""
    speedups: list[float] = Field(default_factory=list)
    """Speedups vs eager of correct kernels (for distributions)."""
    failures: dict[str, int] = Field(default_factory=dict)
    """Failure class -> samples."""
    mean_input_tokens: float
    """Mean prompt tokens per sample."""
    mean_output_tokens: float
    """Mean generated tokens per sample."""
    mean_latency_s: float
    """Mean generation latency per sample."""
    block_tokens: int
    """Tokens of the arm's skill block."""
    activation_rate: float | None = None
    """On-demand arms: fraction of samples that called read_skill."""
    reads: dict[str, int] = Field(default_factory=dict)
    """On-demand arms: path read -> times."""
    rung: str = "all"
    """Ladder rung the row covers (``all``, ``choose``, ``fill``, ``repair``, ``write``)."""
    chance: float | None = None
    """Pass rate of a uniform guess (choose: mean correct/k over cases); None elsewhere."""
    margin_nats: float | None = None
    """Choose cases: mean over cases of the best correct line's log-likelihood minus the best
    wrong line's (nats; > 0 when the student ranks a correct line first); None elsewhere."""
    pass_ci: tuple[float, float] | None = None
    """Wilson 95% interval of pass@1 over cases (one sample per case only), on Kish's effective
    sample size when a task has several cases (``lift.stats.wilson_clustered``)."""
    infra_errors: int = 0
    """Samples ended by infrastructure errors (excluded from the pass rates)."""


class LiftRow(BaseModel):
    """One arm against a reference arm for one student, on one metric and case subset."""

    model_config = ConfigDict(extra="forbid")

    student: str
    """Student name."""
    arm: str
    """Arm measured."""
    reference: str
    """Arm compared against (``baseline``, ``placebo...``, ``excerpt...``, or ``RUN:arm``)."""
    metric: Literal["pass_1", "fast_1", "margin_nats"]
    """Per-case metric differenced (``margin_nats``: choose cases' log-likelihood margin)."""
    subset: str
    """``all``, ``split:<name>`` or ``tag:<name>``."""
    lift: Interval
    """The paired difference and its interval."""
    repairs: int
    """Cases unsolved by the reference and solved (any sample) by the arm."""
    regressions: int
    """Cases solved by the reference and unsolved by the arm."""


class Report(BaseModel):
    """A lift run's report (``summary.json``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    run: str
    """Run folder name."""
    evaluation: str | None
    """Evaluation file the numbers come from (None: nothing evaluated yet)."""
    device: str | None
    """Device of that evaluation."""
    gpu: str | None = None
    """GPU name when evaluated on CUDA."""
    splits: dict[str, int]
    """Split -> cases."""
    samples_per_case: int
    """Samples per student x arm x case."""
    command: str
    """The command (or config) that produced the run."""
    arms: list[ArmStats]
    """Per student x arm statistics."""
    lifts: list[LiftRow]
    """Lifts with intervals: vs baseline, placebo, excerpt; by split and tag."""
    baseline_run: str | None = None
    """Other run compared against, when given."""
    notes: list[str] = Field(default_factory=list)
    """Caveats (pending evaluations, CPU has no timings, ...)."""
    generation_device: str | None = None
    """Where local students generated and scored (``cpu``, ``cuda``); None for endpoints."""
