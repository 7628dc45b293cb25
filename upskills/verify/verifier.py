"""The verifier: ``check(task, candidate) -> Verdict`` and the reusable :class:`Verifier`.

Stages, in order: parse (syntax, with line) -> static guards -> import/compile -> interface ->
correctness (seeds x shapes x input domains, run-time guards) -> timing (GPU) -> speedup
(against cached baselines). Parsing and static guards run here, in the caller's process. Then
two fresh processes run side by side: the judge (:mod:`upskills.verify.judge`: inputs,
reference, comparison) and the candidate (:mod:`upskills.verify.candidate_host`), each forked
from its own warm worker (:mod:`upskills.verify.sandbox`). The candidate's process only ever
hands back outputs, into the judge's buffers, and timings the judge cross-checks; a hang or
crash there costs one verdict and nothing else.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from upskills.core.device import resolve_device as core_resolve_device
from upskills.core.hashing import kernel_hash
from upskills.tasks.model import Task
from upskills.verify.baselines import restore_rewritten, snapshot_cache
from upskills.verify.interface import static_interface_issue
from upskills.verify.judge import JudgeJob, JudgeResult
from upskills.verify.options import CheckOptions
from upskills.verify.package_guard import PackageSnapshot
from upskills.verify.sandbox import JobOutcome, Zygote
from upskills.verify.static import parse_candidate, static_guards
from upskills.verify.static_device import device_notes
from upskills.verify.static_races import race_notes
from upskills.verify.verdict import ErrorClass, FlushMode, Verdict, VerdictStage

BASELINE_TIMEOUT_S = 900.0
"""Time limit of one baseline measurement (torch.compile can take minutes)."""

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


SEED_BITS = 63
"""A fresh check's seed, in bits. Every input of the check derives from it: the trials', the
timing sets', their perturbations and the late trial's. A candidate sees one trial's seed (in
its label, and recoverable from its inputs), and ``trial_seed`` hashes the check's seed with
SHA-256: at 31 bits (until 2026-12-06) a GPU, which hashes billions a second, could try every
check seed in about a second and foresee the timed calls' inputs; at 63 bits it cannot."""


def fresh_seed() -> int:
    """A check's seed when none is given (``--seed`` replays one)."""
    return secrets.randbits(SEED_BITS)


def resolve_device(device: str) -> str:
    """``auto``, ``cpu`` or ``cuda`` -> ``cpu`` or ``cuda`` (see :mod:`upskills.core.device`).

    The verifier itself needs torch even on CPU: a clear error says which extra installs it.
    """
    try:
        import torch  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError as exc:
        raise ValueError("the verifier needs torch: pip install 'upskills[kernels]'") from exc
    return core_resolve_device(device)


def resolve_task(task: Task | str | Path) -> Task:
    """A Task as given, or loaded by built-in name or path (raises ``TaskError``)."""
    if isinstance(task, Task):
        return task
    from upskills.tasks import load_task

    return load_task(task)


def resolve_candidate(candidate: str | Path) -> tuple[str, str]:
    """``(source, display name)`` of a candidate given as a path or as source text."""
    if isinstance(candidate, Path):
        return candidate.read_text(), candidate.name
    if "\n" not in candidate and candidate.endswith(".py"):
        path = Path(candidate)
        if not path.is_file():
            raise FileNotFoundError(f"candidate file not found: {candidate}")
        return path.read_text(), path.name
    return candidate, "candidate.py"


def _where_in_log(log: str, path: str, display: str) -> str:
    """Innermost ``display:line in func`` of a faulthandler dump in the child's log."""
    where = ""
    for m in _FRAME.finditer(log):
        if m.group("file") == path or m.group("file").endswith(path):
            where = f"{display}:{m.group('line')} in {m.group('func')}"
            break  # faulthandler prints the innermost frame first
    return where


def _raised(lines: list[str]) -> list[str]:
    """The last Python traceback's own line (``SomeError: text``), as a one-item list.

    A child that dies of an exception nobody caught prints its traceback, then exits with
    status 70: without this line its message said where, never what.
    """
    found: list[str] = []
    in_traceback = False
    for line in lines:
        if line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif in_traceback and line and not line[0].isspace():
            found, in_traceback = [line.strip()[:500]], False
    return found


def _death_message(outcome: JobOutcome, path: str, display: str) -> str:
    code = outcome.exit_code
    if code is not None and code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"exited with status {code}"
    where = _where_in_log(outcome.log_tail, path, display)
    lines = outcome.log_tail.splitlines()
    fatal = [ln.strip() for ln in lines if ln.startswith(("Fatal Python error", "CUDA error"))]
    ours = [ln.strip() for ln in lines if path in ln]
    if not ours:  # the innermost frames of the dump (or the end of the output)
        frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")]
        ours = frames[:4] if frames else [ln.strip() for ln in lines[-6:]]
    raised = _raised(lines)
    detail = "\n".join(["", *fatal[:2], *ours[:8], *raised]).rstrip()
    at = f" at {where}" if where else ""
    return f"{display}: the worker process {how}{at} (segfault, abort or fatal error){detail}"


class Verifier:
    """A reusable checker: a judge and a candidate worker per device, fresh children per check.

    Args:
        device: ``auto``, ``cpu`` (Triton interpreter, correctness only) or ``cuda``.
        options: Default options of each check.

    Use as a context manager, or call :meth:`close` when done.
    """

    def __init__(self, device: str = "auto", options: CheckOptions | None = None) -> None:
        self.device = resolve_device(device)
        self.options = options or CheckOptions()
        self._zygote: Zygote | None = None
        self._candidates: Zygote | None = None
        self.package = PackageSnapshot()
        """upskills' own files, compared and put back after every candidate."""

    def __enter__(self) -> Verifier:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes."""
        for zygote in (self._zygote, self._candidates):
            if zygote is not None:
                zygote.close()
        self._zygote = None
        self._candidates = None

    @property
    def zygote(self) -> Zygote:
        """The judge's warm worker (started on first use)."""
        if self._zygote is None:
            self._zygote = Zygote(self.device, "judge")
        return self._zygote

    @property
    def candidates(self) -> Zygote:
        """The candidates' warm worker (started on first use)."""
        if self._candidates is None:
            self._candidates = Zygote(self.device, "candidate")
        return self._candidates

    def _variants(self, task: Task, options: CheckOptions) -> list[str]:
        variants = task.all_variants()
        if options.variants is not None:
            known = {v.name for v in variants}
            unknown = [n for n in options.variants if n not in known]
            if unknown:
                raise ValueError(
                    f"task {task.name!r} has no variant {unknown[0]!r} "
                    f"(variants: {', '.join(sorted(known))})"
                )
            variants = [v for v in variants if v.name in options.variants]
        if self.device == "cpu":
            variants = [v for v in variants if v.cpu] or [
                v for v in variants if v.main and len(task.all_variants()) == 1
            ]
        return [v.name for v in variants]

    def check(
        self, task: Task | str | Path, candidate: str | Path, options: CheckOptions | None = None
    ) -> Verdict:
        """Judge one candidate against one task.

        Args:
            task: A Task, a built-in task name or a path to a KernelBench-format file.
            candidate: The candidate's source text or a path to its ``.py`` file.
            options: Options for this check (default: the verifier's).

        Returns:
            The Verdict; ``passed`` only when every stage passed.
        """
        start = time.monotonic()
        options = options or self.options
        task = resolve_task(task)
        source, display = resolve_candidate(candidate)
        seed = options.seed if options.seed is not None else fresh_seed()
        verdict = Verdict(
            task=task.name,
            task_hash=task.hash,
            candidate_hash=kernel_hash(source),
            device=self.device,
            passed=False,
            seed=seed,
            timing_status="unavailable" if self.device == "cpu" else "skipped",
        )
        self._judge(verdict, task, source, display, options, seed)
        verdict.duration_s = round(time.monotonic() - start, 3)
        verdict.message = redact_paths(verdict.message)
        return verdict

    def _judge(
        self,
        verdict: Verdict,
        task: Task,
        source: str,
        display: str,
        options: CheckOptions,
        seed: int,
    ) -> None:
        t0 = time.monotonic()
        tree, issue = parse_candidate(source, display)
        if tree is None:
            assert issue is not None
            verdict.error_class, verdict.stage = issue.error_class, VerdictStage.PARSE
            verdict.message = issue.message
            return
        issues = static_guards(tree, display)
        verdict.stage_seconds["static"] = round(time.monotonic() - t0, 4)
        if issues:
            more = f" (+{len(issues) - 1} more)" if len(issues) > 1 else ""
            verdict.error_class, verdict.stage = ErrorClass.GUARD, VerdictStage.GUARDS
            verdict.guard = f"static:{issues[0].rule}"
            verdict.message = issues[0].message + more
            return
        if wrong := static_interface_issue(tree, task.source, display):  # before any import
            verdict.error_class, verdict.stage = ErrorClass.INTERFACE, VerdictStage.INTERFACE
            verdict.message = wrong
            return
        notes, device = [], []
        if self.device == "cpu":
            notes = [f"static race check: {n}" for n in race_notes(tree, display)]
            device = [f"device check: {n}" for n in device_notes(tree, display)]
        variants = self._variants(task, options)
        if not variants:
            verdict.error_class, verdict.stage = ErrorClass.TASK, VerdictStage.CORRECTNESS
            verdict.message = f"task {task.name!r} has no variant small enough for the CPU"
            return
        if notes and options.races == "fail":
            verdict.error_class, verdict.stage = ErrorClass.GUARD, VerdictStage.GUARDS
            verdict.guard = "race"
            verdict.message = notes[0]
            return
        address = f"upskills-{secrets.token_hex(16)}"
        job = JudgeJob(
            task=task,
            device=self.device,
            address=address,
            display=display,
            variants=variants,
            seeds=options.seeds,
            seed=seed,
            random_shape=options.random_shape,
            timing=options.timing,
            perturb_timing=options.perturb_timing,
            flush=options.flush,
            audit_timed_calls=options.audit_timed_calls,
            audit_clock_calls=options.audit_clock_calls,
            late_trial=(
                options.late_trial
                if options.late_trial is not None
                else options.timing and self.device.startswith("cuda")
            ),
            timeout_s=options.timeout_s,
            candidate_parent=self.candidates.pid(),
            static_notes=notes + device,
        )
        cand_payload = {
            "source": source,
            "display": display,
            "device": self.device,
            "address": address,
        }
        box: dict[str, JobOutcome] = {}

        def run_candidate() -> None:
            box["outcome"] = self.candidates.run("candidate", cand_payload, options.timeout_s + 5)

        fresh = None
        if options.fresh_baselines and options.timing and options.baselines:
            # timed before the candidate runs: nothing it leaves behind can slow them
            t0 = time.monotonic()
            fresh = self.fresh_baseline(task, options.flush)
            verdict.stage_seconds["baselines"] = round(time.monotonic() - t0, 4)
        cache_before = snapshot_cache() if self.device == "cuda" else None
        self.package.refresh()
        thread = threading.Thread(target=run_candidate, daemon=True)
        thread.start()
        outcome = self.zygote.run("judge", job.model_dump(mode="json"), options.timeout_s + 30)
        lost = (outcome.result or {}).get("candidate_lost")
        thread.join(timeout=0 if lost == "timeout" else 3.0)
        if thread.is_alive():
            self.candidates.stop_child(dump_first=True)
            thread.join(timeout=30.0)
        self._apply(verdict, outcome, box.get("outcome"), display, options)
        self._package_guard(verdict, display)
        if cache_before is not None:
            self._cache_guard(verdict, cache_before, display)
        if verdict.passed and verdict.timing is not None and options.baselines:
            self._speedups(
                verdict,
                task,
                cache_before,
                fresh=options.fresh_baselines,
                fresh_entry=fresh,
                flush=options.flush,
            )

    def _package_guard(self, verdict: Verdict, display: str) -> None:
        """A candidate that rewrote upskills' own files fails, and the files are put back."""
        touched = self.package.put_back()
        if not touched:
            return
        names = ", ".join(f"upskills/{t}" for t in touched[:5])
        more = f" and {len(touched) - 5} more" if len(touched) > 5 else ""
        print(
            f"upskills: {names}{more} changed while a candidate ran: restored as they were "
            f"(added files removed)",
            file=sys.stderr,
        )
        _fail_guard(
            verdict,
            "package_files",
            f"{display}: upskills' own files were changed while the candidate ran "
            f"({names}{more}); restored as they were",
        )

    def _cache_guard(self, verdict: Verdict, before: Any, display: str) -> None:
        """A candidate that rewrote the baseline cache fails, and the entries are put back."""
        put_back = restore_rewritten(before)
        if not put_back:
            return
        _fail_guard(
            verdict,
            "baseline_cache",
            f"{display}: the verifier's baseline cache was rewritten while the candidate ran "
            f"({len(put_back)} entr{'y' if len(put_back) == 1 else 'ies'} put back)",
        )

    def _apply(
        self,
        verdict: Verdict,
        outcome: JobOutcome,
        cand: JobOutcome | None,
        display: str,
        options: CheckOptions,
    ) -> None:
        if outcome.result is None or "internal_error" in outcome.result:
            internal = (outcome.result or {}).get("internal_error") or outcome.log_tail[-2000:]
            verdict.error_class, verdict.stage = ErrorClass.RUNTIME, VerdictStage.CORRECTNESS
            verdict.message = (
                f"internal verifier error (not the candidate's fault?):\n{internal}"
                if not outcome.timed_out
                else "the judge did not finish in time (internal error)"
            )
            return
        result = JudgeResult.model_validate(outcome.result)
        verdict.variants = result.variants
        verdict.env = dict(result.env)
        verdict.gpu = verdict.env.get("gpu")
        verdict.notes = list(result.notes)
        verdict.stage_seconds.update(result.stage_seconds)
        if self.device == "cuda":
            verdict.timing_status = result.timing_status  # type: ignore[assignment]
        verdict.timing = result.timing
        if result.candidate_lost is not None:
            self._lost(verdict, result, cand, display, options)
            return
        verdict.passed = result.passed
        verdict.error_class = result.error_class
        verdict.guard = result.guard
        verdict.stage = VerdictStage.DONE if result.passed else result.stage
        verdict.message = result.message

    def _lost(
        self,
        verdict: Verdict,
        result: JudgeResult,
        cand: JobOutcome | None,
        display: str,
        options: CheckOptions,
    ) -> None:
        """The candidate's process hung or died: say where, from its own output."""
        log = cand.log_tail if cand is not None else ""
        path_marker = f"/{display}" if display.endswith(".py") else "/candidate.py"
        verdict.passed = False
        # the candidate's hello (its environment) came: it died after its import, not in it
        verdict.stage = VerdictStage.CORRECTNESS if result.env else VerdictStage.IMPORT
        if result.candidate_lost == "timeout" or (cand is not None and cand.timed_out):
            where = _where_in_log(log, path_marker, display)
            at = f" (it was at {where})" if where else ""
            verdict.error_class = ErrorClass.TIMEOUT
            verdict.message = (
                f"{display}: did not finish within {options.timeout_s:g} s{at}; "
                "the candidate's process was killed (infinite loop or hang?)"
            )
            return
        verdict.error_class = ErrorClass.CRASH
        fake = JobOutcome(None, False, cand.exit_code if cand else None, log, 0.0)
        verdict.message = _death_message(fake, path_marker, display)

    def _speedups(
        self,
        verdict: Verdict,
        task: Task,
        cached: Any = None,
        *,
        fresh: bool = False,
        fresh_entry: Any = None,
        flush: FlushMode = "write",
    ) -> None:
        """Speedups of a timed verdict against the cached baselines.

        With ``fresh``, against ``fresh_entry`` instead: the baselines this check timed before
        its candidate ran (None when they failed).
        """
        if fresh:
            entry = fresh_entry
            if entry is None:
                verdict.message += "; baselines could not be timed again in this check"
        else:
            t0 = time.monotonic()
            entry = self.baseline(
                task, verdict.env.get("gpu", ""), verdict.env.get("torch", ""), cached, flush
            )
            # a cache miss measures them here (torch.compile included): the check's costliest step
            verdict.stage_seconds["baselines"] = round(time.monotonic() - t0, 4)
        if entry is None or verdict.timing is None:
            return
        median = verdict.timing.median_ms
        if entry.eager is not None:
            verdict.baselines["eager"] = entry.eager
            verdict.speedup_eager = round(entry.eager.median_ms / median, 4)
        if entry.compile is not None:
            verdict.baselines["compile"] = entry.compile
            verdict.speedup_compile = round(entry.compile.median_ms / median, 4)
        if verdict.speedup_eager is not None:
            verdict.message += f"; {verdict.speedup_eager:.2f}x vs eager"
        if verdict.speedup_compile is not None:
            verdict.message += f", {verdict.speedup_compile:.2f}x vs torch.compile"
        if fresh and verdict.speedup_eager is not None:
            verdict.message += " (baselines timed in this check)"
        if flush != "write" and verdict.speedup_eager is not None:
            verdict.message += f" (L2 flushed by a {flush} before each timed call)"

    def baseline(
        self,
        task: Task,
        gpu: str,
        torch_version: str,
        cached: Any = None,
        flush: FlushMode = "write",
    ) -> Any:
        """The cached baseline entry for ``task`` on this GPU, measuring it on a miss.

        ``cached``: the user cache as it was before the candidate ran (what it may have
        written since is not read). ``flush``: the L2 flush they are timed with.
        """
        from upskills.verify.baselines import lookup_baseline, store_baseline

        entry = lookup_baseline(gpu, torch_version, task.hash, cached, flush) if gpu else None
        if entry is not None:
            return entry
        entry = self.fresh_baseline(task, flush)
        if entry is not None:
            store_baseline(entry)
        return entry

    def fresh_baseline(self, task: Task, flush: FlushMode = "write") -> Any:
        """Baselines of ``task`` timed now (CUDA only), not cached; None when they fail."""
        from upskills.verify.baselines import BaselineEntry

        if self.device != "cuda":
            return None
        outcome = self.measure_baseline(task, flush=flush)
        if outcome.result is None or "internal_error" in outcome.result:
            return None
        return BaselineEntry.model_validate(outcome.result)

    def measure_baseline(
        self, task: Task, timeout_s: float = BASELINE_TIMEOUT_S, flush: FlushMode = "write"
    ) -> JobOutcome:
        """Measure eager and torch.compile baselines of ``task`` in a child (CUDA only)."""
        payload = {
            "task": task.model_dump(mode="json"),
            "variant": task.main_variant().name,
            "flush": flush,
        }
        return self.zygote.run("baseline", payload, timeout_s)


def _fail_guard(verdict: Verdict, guard: str, message: str) -> None:
    """Turn ``verdict`` into a failure of ``guard`` found after the candidate ran."""
    verdict.passed = False
    verdict.error_class, verdict.stage = ErrorClass.GUARD, VerdictStage.GUARDS
    verdict.guard = guard
    verdict.message = message


def redact_paths(text: str) -> str:
    """This machine's paths in a message: upskills' package, Python prefix, home directory.

    They become ``upskills/``, ``<python>/`` and ``~/``.

    Verdict messages quote tracebacks and import errors that name files by where they are, and
    verdicts are shipped in reports and traces.
    """
    package = str(Path(__file__).resolve().parents[1])  # upskills' own files: relative
    text = text.replace(package.rstrip("/") + "/", "upskills/")
    for root, mark in ((sys.prefix, "<python>"), (sys.base_prefix, "<python>")):
        if len(root) > 1:
            text = text.replace(root.rstrip("/") + "/", mark + "/")
    home = os.path.expanduser("~")
    if len(home) > 1:
        text = text.replace(home.rstrip("/") + "/", "~/")
    return text


def check(
    task: Task | str | Path,
    candidate: str | Path,
    *,
    device: str = "auto",
    options: CheckOptions | None = None,
) -> Verdict:
    """Judge one candidate kernel against one task (a one-shot :class:`Verifier`).

    Args:
        task: A Task, a built-in task name, or a path to a KernelBench-format ``.py``.
        candidate: Source text of the candidate, or a path to its ``.py`` file.
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
        options: Seeds, timing, timeout, variant subset, baselines.

    Returns:
        The Verdict.
    """
    with Verifier(device, options) as verifier:
        return verifier.check(task, candidate)
