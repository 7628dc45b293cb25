"""Causal attribution of a multi-change speedup: build the intermediate kernels and judge them.

When a perf episode's diff holds several changes (``changeset.split_changes``), ``ablate_episode``
builds ``before`` + one change at a time and has a *judge* check and time each of them, together
with ``before`` and ``after`` themselves, in the same session on the same device. A change's
effect is then its own: ``median(before) / median(before + change)``.

The judge in production is ``VerifierJudge`` (``Verifier(device).check``: correctness on every
variant, then CUDA-event timing vs eager and ``torch.compile``). On a CPU the verifier checks
correctness only, so no change can be credited: the episode is ``confounded`` with its changes
named. Tests inject another judge (a labelled test double) through the same code path.

Every judged kernel is appended to an ``AblationCache`` (JSONL, one ``Measurement`` a line,
keyed by device, GPU, task hash and kernel hash), so a killed run resumes and a GPU's work is
never redone; distilling elsewhere can read the same file without a GPU.

**One episode, one GPU.** The times of an episode's kernels are compared with each other, so
they all come from one GPU: ``ablate_episode`` never takes ``before`` from one GPU and a change
alone from another. An episode every kernel of which some GPU has already judged is read from
that GPU's rows and judged nowhere else; any other episode is judged on the judge's own GPU.
So a cache can hold two GPUs' rows (an H200's file and an H100's, one written and one only
read), and a second GPU takes up the episodes the first did not finish. A compile failure found
with nvcc and no GPU (``PRESCREEN_GPU``) holds for every GPU of the architecture it was built
for, so it counts as judged on each.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from upskills.distill.changeset import Change, apply_changes, split_changes

PRESCREEN_GPU = "none: nvcc on a CPU machine"
"""The GPU name of a compile failure found without a GPU (``ablation_prescreen.py``): it holds
on every GPU, so an episode on any GPU may use it."""

INTERACTION = 0.25
"""Relative gap between the product of single-change effects and the whole effect above which
the changes are reported as interacting."""


def kernel_hash(source: str) -> str:
    """sha256 (16 hex) of a kernel source, as the verifier and traces use it."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


class Measurement(BaseModel):
    """One kernel judged (correctness, then timing when the device can time)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    key: str
    """``device/gpu/task_hash/kernel_hash``: the cache key."""
    task: str
    """Task name."""
    task_hash: str
    """Task content hash."""
    kernel_hash: str
    """sha256 (16 hex) of the kernel judged."""
    judge: str
    """Who judged it: ``verifier`` or the label of a test double."""
    device: str
    """``cpu`` or ``cuda``."""
    gpu: str | None = None
    """GPU name when timed on CUDA."""
    passed: bool
    """Whether the kernel passed every correctness check."""
    error_class: str | None = None
    """Verdict error class when it failed."""
    message: str = ""
    """Verdict message (its first ``MESSAGE_CHARS`` characters; 300 before 2026-12-05)."""
    median_ms: float | None = None
    """Candidate median time (None when not timed)."""
    speedup_eager: float | None = None
    """Eager median / candidate median."""
    speedup_compile: float | None = None
    """torch.compile median / candidate median."""


class Judge(Protocol):
    """Checks and (where it can) times one kernel for one task.

    A judge may also have a ``gpu`` (its GPU's name): then only that GPU's rows of a cache are
    taken as its own measurements; without one, any GPU's of its device.
    """

    name: str
    device: str

    def __call__(self, task: str, task_hash: str, source: str) -> Measurement:
        """Judge ``source`` for the task named ``task``."""
        ...


MESSAGE_CHARS = 1200
"""How much of a verdict's message a measurement keeps."""


class VerifierJudge:
    """The production judge: ``Verifier(device, options).check(task, source)``."""

    name = "verifier"

    def __init__(self, device: str = "auto", seeds: int = 3, timeout_s: float = 300.0) -> None:
        """Start a verifier on ``device`` (``cpu`` checks correctness only)."""
        from upskills.verify import CheckOptions, Verifier

        self.verifier = Verifier(device, CheckOptions(seeds=seeds, timeout_s=timeout_s))
        self.device = self.verifier.device

    @functools.cached_property
    def gpu(self) -> str | None:
        """The GPU's name (None on a CPU): whose rows of a cache this judge may take as its own.

        Asked of a child process, so this one never starts CUDA.
        """
        if not self.device.startswith("cuda"):
            return None
        code = "import sys, torch; print(torch.cuda.get_device_name(sys.argv[1]))"
        cmd = [sys.executable, "-c", code, self.device]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not proc.stdout.strip():
            raise RuntimeError(f"cannot name the GPU of {self.device}: {proc.stderr[-300:]}")
        return proc.stdout.strip()

    def __call__(self, task: str, task_hash: str, source: str) -> Measurement:
        """Check and time one kernel; the verdict becomes a Measurement."""
        v = self.verifier.check(task, source)
        return Measurement(
            key="",
            task=v.task,
            task_hash=v.task_hash,
            kernel_hash=kernel_hash(source),
            judge=self.name,
            device=v.device,
            gpu=v.gpu,
            passed=v.passed,
            error_class=str(v.error_class) if v.error_class else None,
            # the clock check's refusal, with the CUDA-graph check's note after it, runs past
            # 300 characters: the H200 ablation of 2026-12-05 lost that note so
            message=v.message[:MESSAGE_CHARS],
            median_ms=v.timing.median_ms if v.timing else None,
            speedup_eager=v.speedup_eager,
            speedup_compile=v.speedup_compile,
        )

    def close(self) -> None:
        """Stop the verifier's worker."""
        self.verifier.close()


class AblationCache:
    """Append-only JSONL of measurements; a key already measured is never judged again.

    ``path`` is read and appended to; each of ``also`` is only read (another GPU's cache: its
    rows are used, and nothing is written to it).
    """

    def __init__(
        self, path: str | Path | None, also: Sequence[str | Path] = (), progress: bool = False
    ) -> None:
        """Load ``path`` (missing: empty; None: in memory only) and each of ``also``.

        ``progress``: a bar on stderr counting the kernels judged, and a line for each (what
        the judge said, how long it took), so a long ablation cut by a time limit shows where.
        """
        self.path = Path(path) if path else None
        self.rows: dict[str, Measurement] = {}
        self.progress = progress
        self._bar: Any = None
        for source in [self.path, *map(Path, also)]:
            if source is not None and source.exists():
                self._load(source)

    def _load(self, source: Path) -> None:
        for no, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                m = Measurement.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValidationError) as exc:
                first = str(exc).splitlines()[0]
                raise ValueError(
                    f"{source}:{no}: not a valid ablation Measurement: {first}"
                ) from None
            self.rows.setdefault(m.key, m)

    def lookup(
        self, device: str, task_hash: str, source: str, gpu: str | None = None
    ) -> Measurement | None:
        """A cached measurement of this kernel on this device kind.

        ``gpu``: only that GPU's (or one found with no GPU, ``PRESCREEN_GPU``); None: any GPU's.
        """
        suffix = f"/{task_hash}/{kernel_hash(source)}"
        places = [f"{device}/{gpu}/", f"{device}/{PRESCREEN_GPU}/"] if gpu else [f"{device}/"]
        for place in places:
            for key in sorted(self.rows):
                if key.startswith(place) and key.endswith(suffix):
                    return self.rows[key]
        return None

    def _report(self, m: Measurement, seconds: float) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(desc="ablation", unit="kernel", file=sys.stderr)
        said = "passed" if m.passed else f"failed ({m.error_class})"
        if m.median_ms is not None:
            said += f", {m.median_ms:.4g} ms"
        if m.speedup_eager is not None:
            said += f", {m.speedup_eager:.2f}x eager"
        where = f"{m.device} {m.gpu}" if m.gpu else m.device
        self._bar.write(
            f"ablation: judged {m.task} {m.kernel_hash} on {where}: {said} ({seconds:.1f} s)",
            file=sys.stderr,
        )
        self._bar.update(1)

    def close(self) -> None:
        """End the progress bar, if one was started."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def gpus(self, task_hash: str) -> list[tuple[str, str]]:
        """``(device, gpu)`` of every place that judged a kernel of this task, CUDA ones first.

        ``-`` stands for no GPU; compile failures found without a GPU are no place of their own.
        """
        places = {
            (m.device, m.gpu or "-")
            for m in self.rows.values()
            if m.task_hash == task_hash and m.gpu != PRESCREEN_GPU
        }
        return sorted(places, key=lambda p: (p[0] != "cuda", p))

    def measure(self, judge: Judge, task: str, task_hash: str, source: str) -> Measurement:
        """The cached measurement, or judge it now and append it."""
        hit = self.lookup(judge.device, task_hash, source, getattr(judge, "gpu", None))
        if hit is not None:
            return hit
        started = time.monotonic()
        m = judge(task, task_hash, source)
        m = m.model_copy(update={"key": f"{m.device}/{m.gpu or '-'}/{task_hash}/{m.kernel_hash}"})
        if self.progress:
            self._report(m, time.monotonic() - started)
        self.rows[m.key] = m
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(m.model_dump_json() + "\n")
        return m


class ChangeEffect(BaseModel):
    """One change of a multi-change diff, applied alone to ``before``."""

    model_config = ConfigDict(extra="forbid")

    index: int
    """Position of the change in the diff."""
    summary: str
    """What the change does (``adds vectorized_memory; num_warps 4 -> 8``)."""
    techniques: list[str] = Field(default_factory=list)
    """Techniques the change is about."""
    key: str = ""
    """Hash of the change's code."""
    alone: Measurement | None = None
    """``before`` + this change, judged (None when not measured)."""
    effect: float | None = None
    """median(before) / median(before + change): > 1 means the change alone made it faster."""
    credited: bool = False
    """True when the change alone passed and was timed, so its effect is its own."""


class EpisodeAblation(BaseModel):
    """The attribution of one perf episode's speed change to its changes."""

    model_config = ConfigDict(extra="forbid")

    task: str
    """Task name."""
    status: Literal["isolated", "ablated", "confounded"]
    """``isolated``: one change, nothing to split; ``ablated``: every change measured alone;
    ``confounded``: not all changes could be measured alone (``reason`` says why)."""
    reason: str = ""
    """Why the episode is confounded."""
    before: Measurement | None = None
    """``before`` judged in the ablation session."""
    after: Measurement | None = None
    """``after`` judged in the same session."""
    changes: list[ChangeEffect] = Field(default_factory=list)
    """Every change, in diff order."""
    interaction: str = ""
    """Set when single-change effects do not multiply to the whole effect."""


def _ratio(base: Measurement | None, other: Measurement | None) -> float | None:
    if base is None or other is None or not (base.passed and other.passed):
        return None
    if base.median_ms and other.median_ms:
        return base.median_ms / other.median_ms
    if base.speedup_eager and other.speedup_eager:
        return other.speedup_eager / base.speedup_eager
    return None


def _effects(changes: list[Change]) -> list[ChangeEffect]:
    return [
        ChangeEffect(index=c.index, summary=c.summary, techniques=list(c.techniques), key=c.key)
        for c in changes
    ]


def ablate_episode(
    task: str,
    task_hash: str,
    before: str,
    after: str,
    judge: Judge | None,
    cache: AblationCache,
) -> EpisodeAblation:
    """Attribute the speed change between two passing kernels to their separate changes.

    Args:
        task: task name (what the judge checks against).
        task_hash: task content hash (part of the cache key).
        before: the earlier passing kernel.
        after: the later passing kernel.
        judge: checks and times kernels; None reads the cache only (no new measurement).
        cache: measurements already made (and where new ones go).

    Returns:
        ``isolated`` for a single change; ``ablated`` when every change alone passed and was
        timed in the same session as ``before`` and ``after``; else ``confounded`` with the
        reason (no timing device, or which changes do not pass alone).
    """
    changes = split_changes(before, after)
    effects = _effects(changes)
    if len(changes) <= 1:
        return EpisodeAblation(task=task, status="isolated", changes=effects)

    alone = [apply_changes(before, after, [change]) for change in changes]
    place = _judged_place(cache, task_hash, [before, after, *alone], judge)

    def measure(source: str) -> Measurement | None:
        if place is not None:
            return cache.lookup(place[0], task_hash, source, place[1])
        if judge is not None:
            return cache.measure(judge, task, task_hash, source)
        return cache.lookup("cuda", task_hash, source) or cache.lookup("cpu", task_hash, source)

    out = EpisodeAblation(task=task, status="confounded", changes=effects)
    out.before, out.after = measure(before), measure(after)
    for eff, source in zip(effects, alone, strict=True):
        eff.alone = measure(source)
        eff.effect = _ratio(out.before, eff.alone)
        eff.credited = eff.effect is not None
    return _conclude(out)


def _judged_place(
    cache: AblationCache, task_hash: str, sources: list[str], judge: Judge | None
) -> tuple[str, str] | None:
    """Where an episode's kernels are read from: one ``(device, gpu)`` for all of them.

    A place that judged every one of ``sources`` (of the judge's device, when there is a
    judge); with no judge, else the place that judged the most of them. None: judge them now
    (or, with no judge and no place, read each from wherever it was judged, as a cache from
    before GPUs were kept apart would).
    """
    places = cache.gpus(task_hash)
    if judge is not None:
        places = [p for p in places if p[0] == judge.device]
    counts = {
        p: sum(cache.lookup(p[0], task_hash, s, p[1]) is not None for s in sources) for p in places
    }
    complete = [p for p in places if counts[p] == len(sources)]
    own = [p for p in complete if judge is not None and p[1] == getattr(judge, "gpu", None)]
    if complete:
        return (own or complete)[0]
    if judge is not None or not places:
        return None
    return max(places, key=lambda p: counts[p])  # the first of the most judged: CUDA first


def _conclude(out: EpisodeAblation) -> EpisodeAblation:
    if out.before is None or out.after is None:
        out.reason = "not measured (run `upskills distill --ablate --device cuda`)"
        return out
    if _ratio(out.before, out.after) is None:
        timed = out.before.passed and out.after.passed
        out.reason = (
            f"no timing on {out.before.device}: the changes were checked, not timed"
            if timed
            else f"before/after failed when re-judged on {out.before.device}"
        )
        alone_fails = [e for e in out.changes if e.alone is not None and not e.alone.passed]
        if alone_fails:
            out.reason += "; fails alone: " + "; ".join(f"#{e.index}" for e in alone_fails)
        for eff in out.changes:
            eff.credited = False
        return out
    failing = [e for e in out.changes if e.alone is not None and not e.alone.passed]
    missing = [e for e in out.changes if e.alone is None or (e.alone.passed and not e.credited)]
    if failing or missing:

        def named(effects: list[ChangeEffect]) -> str:
            return ", ".join(f"#{e.index} `{e.summary}`" for e in effects)

        parts = [f"{named(failing)} failed alone (needs the other changes)"] if failing else []
        parts += [f"{named(missing)} not timed alone"] if missing else []
        out.reason = "not separable: " + "; ".join(parts)
        return out
    out.status = "ablated"
    whole = _ratio(out.before, out.after) or 1.0
    product = 1.0
    for eff in out.changes:
        product *= eff.effect or 1.0
    if abs(product / whole - 1.0) > INTERACTION:
        out.interaction = (
            f"single-change effects multiply to {product:.2f}x but together they give "
            f"{whole:.2f}x: the changes interact"
        )
    return out
