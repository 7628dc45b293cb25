"""Options of a check: seeds, timing, timeout, variant subset, baselines."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.verify.verdict import FlushMode


class CheckOptions(BaseModel):
    """How thoroughly to check a candidate."""

    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(default=3, ge=1, le=100)
    """Input seeds per shape variant (fresh inputs each)."""
    timing: bool = True
    """Time the candidate on GPU (ignored on CPU, where timing is unavailable)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Wall-clock limit of the child process for the whole check (compile, runs, timing)."""
    variants: list[str] | None = None
    """Check only these variants (by name); None checks every variant the device can run."""
    baselines: bool = True
    """Look up (or measure) eager and torch.compile baselines and report speedups."""
    fresh_baselines: bool = False
    """Time the baselines again in this check, on the same GPU just before the candidate runs
    (so nothing it leaves behind can slow them), instead of reading them from the cache (which
    is then neither read nor written): the speedup becomes a side-by-side ratio of one machine
    start, as a compute-bound kernel needs, whose time follows the GPU's clocks. Costs a
    torch.compile of the reference."""
    perturb_timing: bool = True
    """Give every timed call inputs of its own (:mod:`upskills.verify.perturb`), so no result
    cached by input values is timed. Off only to measure what the perturbation itself costs
    (``benchmarks/verifier_bench.py``): a verdict timed without it can be fooled."""
    flush: FlushMode = "write"
    """How L2 is flushed before each timed call, the candidate's and the baselines' alike
    (:data:`upskills.verify.verdict.FlushMode`). ``write`` (the default, and every shipped
    verdict's) charges the call the write-back of the flush's dirty lines; ``read`` leaves L2
    clean. Baselines are cached per flush."""
    audit_timed_calls: bool = True
    """Fingerprint every timed call's outputs and verify calls drawn after the run
    (:mod:`upskills.verify.fingerprint`), so a forward that reads which calls the judge keeps
    cannot compute those alone. Off only to measure what the audit costs: a verdict timed
    without it can be fooled (``docs/design/verifier.md``)."""
    audit_clock_calls: bool = True
    """The judge's clock check without a call the forward could compute alone: every
    back-to-back call on its own perturbed inputs, fingerprinted and verified on calls drawn
    after the reply, the overhead timed without ``forward`` and taken off. Off only to measure
    what it costs: a clock check without it can be fooled (``docs/design/verifier.md``)."""
    late_trial: bool | None = None
    """One more trial, with fresh inputs, after every other call of the check (after the timed
    calls where the check is timed). The timed calls run without the op recorder: a forward
    that counted its calls could run its own kernel in the trials and PyTorch's afterwards, and
    be timed at PyTorch's speed. None: on where the check is timed (a GPU check with timing)."""
    seed: int | None = Field(default=None, ge=0)
    """The check's seed (replay a verdict); None draws a fresh one per check."""
    random_shape: bool = True
    """Also run one shape drawn at random within the task's ranges."""
    races: Literal["note", "fail"] = "fail"
    """On CPU, a non-atomic read-modify-write across programs: fail the check, or only note it."""
