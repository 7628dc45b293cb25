"""The generation phase: ask each student every (arm, case, sample), append one line each.

Sample ``i`` of a case is drawn for every tool-free arm in one call (batched when the provider
offers ``generate_batch``) with the seed hash(run seed, case, i), case-major, so an interrupted
run has paired arms for the cases it reached.
A provider error is recorded on the sample, not raised, so a bad endpoint never loses the
samples already written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from upskills.core.hashing import kernel_hash
from upskills.lift.arms import Arm
from upskills.lift.config import CaseInfo, LiftConfig, RunManifest
from upskills.lift.prompting import extract_kernel, prompt_hash, splice_line, system_prompt
from upskills.lift.store import GENERATIONS, GenerationRecord, RecordWriter, read_records
from upskills.lift.store import sample_key as make_key
from upskills.lift.student import Student

Checker = Any
"""``evaluate.CaseChecker``: agent mode's warm verifier (its ``verifier()`` and ``device``)."""


def sample_seed(run_seed: int, case: str, sample: int) -> int:
    """Seed of sample ``sample`` of ``case``: the same in every arm (31-bit)."""
    digest = hashlib.sha256(f"{run_seed}/{case}/{sample}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def _params(student: Student, config: LiftConfig, seed: int) -> Any:
    from upskills.llm.base import GenParams

    s = student.sampling
    return GenParams(
        temperature=s.temperature,
        top_p=s.top_p,
        max_tokens=config.max_new_tokens or s.max_new_tokens,
        seed=seed,
        stop=s.stop,
    )


class _Unit:
    """One (case, sample index) still to generate, with its arms."""

    def __init__(self, case: CaseInfo, index: int, seed: int, todo: list[Arm]) -> None:
        self.case, self.index, self.seed, self.todo = case, index, seed, todo
        self.plain = [a for a in todo if not a.uses_tool]


class _Sample:
    """Accumulates one sample's calls."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.latency_s = 0.0
        self.calls = 0
        self.reads: list[str] = []
        self.text = ""
        self.stop_reason: str | None = None
        self.error: str | None = None
        self.kernel: str | None = None
        """The kernel an agent-loop run ended with (else it is extracted from ``text``)."""
        self.trace: str | None = None
        """The agent-loop run's trace, relative to the run folder."""

    def add(self, response: Any, share: int = 1) -> None:
        self.input_tokens += response.usage.input_tokens + response.usage.cache_read_tokens
        self.output_tokens += response.usage.output_tokens
        self.latency_s += response.latency_s / share
        self.calls += 1
        self.text = response.text
        self.stop_reason = response.stop_reason


class Generator:
    """Runs the generation phase of one experiment for one student."""

    def __init__(
        self,
        manifest: RunManifest,
        student: Student,
        provider: Any,
        read_skill: dict[str, tuple[Any, Callable[[dict[str, Any]], str]]],
        checker: Checker | None = None,
    ) -> None:
        """Bind a student's provider, the arms' read_skill tools and the agent-mode checker."""
        self.manifest = manifest
        self.config = manifest.config
        self.student = student
        self.provider = provider
        self.read_skill = read_skill
        self.checker = checker
        self.run_dir: Path | None = None
        """The run folder (set by ``run``): agent-loop traces go to its ``traces/``."""

    def _one(self, arm: Arm, case: CaseInfo, seed: int, system: str) -> _Sample:
        """One answer (with a ``read_skill`` tool loop on on-demand arms).

        Agent mode's write cases run the teachers' agent loop instead (``_loop``).
        """
        from upskills.llm.base import Message, ProviderError

        if self.config.mode == "agent" and case.rung == "write" and self.checker is not None:
            return self._loop(arm, case, seed)
        out = _Sample()
        messages = [
            Message(role="system", content=system),
            Message(role="user", content=case.prompt),
        ]
        tools: list[Any] = []
        handler = None
        if arm.uses_tool and arm.skill in self.read_skill:
            spec, handler = self.read_skill[arm.skill]
            tools = [spec]
        reads_left = self.config.max_tool_reads
        try:
            while True:
                response = self.provider.generate(
                    messages, tools, _params(self.student, self.config, seed)
                )
                out.add(response)
                if not (response.tool_calls and handler is not None and reads_left > 0):
                    break
                messages.append(
                    Message(role="assistant", content=response.text, tool_calls=response.tool_calls)
                )
                for call in response.tool_calls:
                    reads_left -= 1
                    if call.name == "read_skill":
                        try:
                            result = handler(call.arguments)
                            # only a read that returned the skill counts as an activation
                            out.reads.append(str(call.arguments.get("path") or "SKILL.md"))
                        except Exception as exc:  # noqa: BLE001 - a bad read is the model's error
                            result = f"error: {exc}"
                    else:
                        result = f"error: unknown tool {call.name!r}; only read_skill exists"
                    messages.append(
                        Message(role="tool", content=result, tool_call_id=call.id, name=call.name)
                    )
        except ProviderError as exc:
            out.error = str(exc)
        return out

    def _loop(self, arm: Arm, case: CaseInfo, seed: int) -> _Sample:
        """The student solves the case's task in the teachers' agent loop, leaving a trace.

        Tools and limits differ from a teacher's run, nothing else: ``agent_turns`` model calls,
        the arm's block in the skills section of the system prompt (on-demand arms get the
        pack and ``read_skill``), and the first kernel a check passes is submitted. The
        sample's kernel is the run's best passing kernel, else the last one it wrote.
        """
        from upskills.agent import AgentConfig, run_agent
        from upskills.llm.base import ProviderError
        from upskills.trace import read_trace
        from upskills.trace.attempts import attempts_of
        from upskills.trace.events import ModelCall, ToolCall, ToolResult

        assert self.checker is not None and self.run_dir is not None
        key = f"{self.student.name}/{arm.name}/{case.id}/{seed}"  # seed: one per sample index
        rel = Path("traces") / (hashlib.sha256(key.encode()).hexdigest()[:16] + ".jsonl")
        path = self.run_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # a sample a resume redoes starts a new trace
        packs = []
        if arm.uses_tool and arm.skill_path:
            from upskills.skills.pack import load_pack

            packs = [load_pack(arm.skill_path)]
        config = AgentConfig(
            max_turns=self.config.agent_turns,
            max_tokens=None,
            max_wall_s=None,
            device=self.checker.device,
            params=_params(self.student, self.config, seed),
            skills_mode="on_demand" if packs else "none",
            role="student",
            agent_name=self.student.name,
            check_seeds=self.config.check_seeds,
            check_timeout_s=self.config.check_timeout_s,
            submit_on_pass=True,
        )
        out = _Sample()
        out.trace = rel.as_posix()
        try:
            end = run_agent(
                case.task_def,
                self.provider,
                config,
                path,
                packs,
                verifier=self.checker.verifier(),
                skill_block="" if packs else arm.block,
            )
        except ProviderError as exc:  # run_agent records it; the sample is not the student's
            out.error = str(exc)
            return out
        if end.outcome == "error":
            out.error = end.message
        trace = read_trace(path)
        asked: dict[str, str] = {}
        for event in trace.events:
            if isinstance(event, ModelCall):
                out.text = event.response_text or out.text
                out.stop_reason = event.stop_reason
            elif isinstance(event, ToolCall) and event.tool_name == "read_skill":
                asked[event.call_id] = str(event.arguments.get("path") or "SKILL.md")
            elif isinstance(event, ToolResult) and event.tool_name == "read_skill":
                if event.error is None:  # only a read that returned the skill is an activation
                    out.reads.append(asked.get(event.call_id, "SKILL.md"))
        attempts = attempts_of(trace.events)
        last = next((a.kernel_source for a in reversed(attempts) if a.kernel_source), None)
        out.kernel = end.best_kernel_source or last
        out.calls = end.totals.turns
        out.input_tokens, out.output_tokens = end.totals.input_tokens, end.totals.output_tokens
        out.latency_s = end.totals.duration_s
        return out

    def _batch(self, units: Sequence[_Unit]) -> list[list[_Sample]]:
        """The tool-free arms of several (case, sample) units: one batched call if possible.

        Units are grouped up to the provider's batch size (a GPU generates a full batch in about
        the time of one sequence); the whole call is seeded with its first unit's seed, which
        each record of the call stores as its seed.
        """
        from upskills.llm.base import Message, ProviderError

        batch = getattr(self.provider, "generate_batch", None)
        total = sum(len(u.plain) for u in units)
        if self.config.mode == "agent" or batch is None or total < 2:
            return [
                [self._one(a, u.case, u.seed, system_prompt(a.block)) for a in u.plain]
                for u in units
            ]
        conversations = [
            [
                Message(role="system", content=system_prompt(a.block)),
                Message(role="user", content=u.case.prompt),
            ]
            for u in units
            for a in u.plain
        ]
        outs = [[_Sample() for _ in u.plain] for u in units]
        flat = [o for group in outs for o in group]
        try:
            params = _params(self.student, self.config, units[0].seed)
            responses = batch(conversations, [], params, n=1)
        except ProviderError as exc:
            for o in flat:
                o.error = str(exc)
            return outs
        for o, r in zip(flat, responses, strict=True):
            o.add(r[0], share=total)
        return outs

    def run(self, path: Path, progress: Any = None) -> int:
        """Generate every missing sample of this student; returns how many were written.

        Order: case, then sample index, then arm. Tool-free arms of consecutive (case, sample)
        units share one batched call, up to the provider's batch size (seeded with the first
        unit's seed); on-demand arms run their tool loop alone with their unit's seed.
        """
        self.run_dir = Path(path).parent
        # a sample that ended in an infrastructure error is not done: it is retried
        done = {r.key for r in read_records(path, GenerationRecord) if r.error is None}
        written = 0
        name = self.student.name
        batched = self.config.mode != "agent" and hasattr(self.provider, "generate_batch")
        room = max(1, int(getattr(self.provider, "batch_size", 1) or 1)) if batched else 1
        pending: list[_Unit] = []
        with RecordWriter(path, done) as writer:
            for case in self.manifest.cases:
                if case.rung == "choose":
                    todo = [
                        a
                        for a in self.manifest.arms
                        if make_key(name, a.name, case.id, 0) not in done
                    ]
                    if todo:
                        for rec in self._choose(todo, case):
                            writer.write(rec)
                            written += 1
                            if progress is not None:
                                progress.update(1)
                    continue
                for i in range(case.samples(self.config.samples)):
                    todo = [
                        a
                        for a in self.manifest.arms
                        if make_key(name, a.name, case.id, i) not in done
                    ]
                    if not todo:
                        continue
                    unit = _Unit(case, i, sample_seed(self.config.seed, case.id, i), todo)
                    if pending and sum(len(u.plain) for u in pending) + len(unit.plain) > room:
                        written += self._flush(pending, writer, progress)
                    pending.append(unit)
            written += self._flush(pending, writer, progress)
        return written

    def _flush(self, pending: list[_Unit], writer: RecordWriter, progress: Any) -> int:
        """Generate the pending units (one batched call for their tool-free arms); write them."""
        written = 0
        seed = pending[0].seed if len(pending) > 1 else None
        for unit, samples in zip(pending, self._batch(pending), strict=True):
            results = dict(zip([a.name for a in unit.plain], samples, strict=True))
            for a in unit.todo:
                if a.uses_tool:
                    results[a.name] = self._one(a, unit.case, unit.seed, system_prompt(a.block))
            for a in unit.todo:
                used = seed if seed is not None and not a.uses_tool else unit.seed
                writer.write(self._record(a, unit.case, unit.index, used, results[a.name]))
                written += 1
                if progress is not None:
                    progress.update(1)
        pending.clear()
        return written

    def _choose(self, arms: Sequence[Arm], case: CaseInfo) -> list[GenerationRecord]:
        """Score every candidate line of a choose case in each arm; the argmax is the answer."""
        import time

        from upskills.llm.base import Message, ProviderError

        seed = sample_seed(self.config.seed, case.id, 0)
        score = getattr(self.provider, "score_batch", None)
        if score is None:  # refused in preparation; kept for library callers
            raise ProviderError(
                f"provider {type(self.provider).__name__} cannot score log-likelihoods",
                provider=str(getattr(self.provider, "provider", "?")),
            )
        lines = [c.line for c in case.choices]
        requests = [
            (
                [
                    Message(role="system", content=system_prompt(a.block)),
                    Message(role="user", content=case.prompt),
                ],
                "```python\n" + case.kernel_prefix,
                lines,
            )
            for a in arms
        ]
        start = time.monotonic()
        error: str | None = None
        try:
            scores = score(requests)
        except ProviderError as exc:
            scores, error = [[] for _ in arms], str(exc)
        latency = (time.monotonic() - start) / max(1, len(arms))
        out = []
        for arm, arm_scores in zip(arms, scores, strict=True):
            s = _Sample()
            s.error, s.latency_s, s.calls = error, latency, 1
            choice = max(range(len(lines)), key=lambda j: arm_scores[j]) if arm_scores else None
            s.text = lines[choice] if choice is not None else ""
            rec = self._record(arm, case, 0, seed, s)
            out.append(
                rec.model_copy(
                    update={"choice": choice, "scores": [round(x, 4) for x in arm_scores]}
                )
            )
        return out

    def _kernel(self, case: CaseInfo, s: _Sample) -> str | None:
        """The kernel a response stands for, by the case's rung (one rule per rung)."""
        if s.error is not None:
            return None
        if s.kernel is not None:
            return s.kernel
        if case.rung == "choose":
            return case.kernel_prefix + s.text + "\n" + case.kernel_suffix if s.text else None
        if case.rung == "fill":
            return splice_line(case, s.text)
        return extract_kernel(s.text)

    def _record(self, arm: Arm, case: CaseInfo, i: int, seed: int, s: _Sample) -> GenerationRecord:
        kernel = self._kernel(case, s)
        return GenerationRecord(
            key=make_key(self.student.name, arm.name, case.id, i),
            student=self.student.name,
            arm=arm.name,
            case=case.id,
            rung=case.rung,
            task=case.task,
            split=case.split,
            sample=i,
            seed=seed,
            prompt_hash=prompt_hash(system_prompt(arm.block), case.prompt),
            response_text=s.text,
            kernel_source=kernel,
            kernel_hash=kernel_hash(kernel) if kernel else None,
            input_tokens=s.input_tokens,
            output_tokens=s.output_tokens,
            latency_s=round(s.latency_s, 4),
            calls=s.calls,
            skill_reads=s.reads,
            trace=s.trace,
            stop_reason=s.stop_reason,
            error=s.error,
        )


def generations_path(run_dir: Path) -> Path:
    """The generation file of a run folder."""
    return Path(run_dir) / GENERATIONS
