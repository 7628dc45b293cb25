"""The tool-using agent loop: generate, run the tool calls, feed back the results, until done.

One run is one model solving one task, traced event by event. It ends when the model submits
(``solved`` if the submitted kernel passes, ``unsolved`` if not), when a budget runs out (turns,
tokens, wall time: ``budget``), or on an error (``error``; the exception text is the message).
Teachers and students run the same loop; only ``AgentConfig.role`` differs.

Weak models often answer with a code block instead of a tool call. Such a reply's fenced python
block is treated as ``check(source=block)`` (store and check; recorded as a ``check`` tool call
with a ``fallback`` note), and the result is sent back as a user turn. A reply with neither a
tool call nor a code block gets one reminder; a second such reply in a row submits the current
kernel (a model that stops using tools is taken to be done).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from upskills.agent.config import AgentConfig
from upskills.agent.environment import hardware, run_environment
from upskills.agent.prompt import build_prompts
from upskills.agent.recording import BestKernel, record_tool
from upskills.agent.toolbox import KernelToolbox, ToolOutcome
from upskills.core.markdown import extract_kernel
from upskills.tasks.model import Task
from upskills.trace.events import ModelCall, Note, RunEnd, RunOutcome, RunStart, Totals

if TYPE_CHECKING:
    from upskills.llm.base import Message, ModelResponse, Provider
    from upskills.skills.pack import SkillPack
    from upskills.trace.writer import TraceWriter
    from upskills.verify.options import CheckOptions
    from upskills.verify.verifier import Verifier

FALLBACK_TEXT = (
    "Your reply had no tool call, so its python code block was checked as your kernel:\n\n"
    "{output}\n\nUse the tools (write_kernel, check, benchmark); call submit when you are done."
)
NUDGE_TEXT = (
    "Your reply had no tool call. Use the tools: write_kernel(source), check(), benchmark(); "
    "call submit() when your kernel passes. Replying again without a tool call submits the "
    "current kernel."
)

BUDGET_TEXT = (
    "\n\n[budget: {left} model call{s} left, this one included; submit your best passing kernel "
    "before the budget runs out]"
)


def extract_code_block(text: str) -> str | None:
    """The kernel in a reply, by the one rule students share (``core.markdown.extract_kernel``)."""
    return extract_kernel(text)


def check_options(config: AgentConfig) -> CheckOptions:
    """The verifier options implied by a config (imported lazily from ``upskills.verify``)."""
    from upskills.verify import CheckOptions

    updates: dict[str, Any] = {}
    if config.check_seeds is not None:
        updates["seeds"] = config.check_seeds
    if config.check_timeout_s is not None:
        updates["timeout_s"] = config.check_timeout_s
    return CheckOptions(**updates)


def run_agent(
    task: Task | str,
    provider: Provider,
    config: AgentConfig | None,
    trace_path: str | Path,
    skills: Sequence[SkillPack] = (),
    *,
    verifier: Verifier | None = None,
    skill_block: str = "",
) -> RunEnd:
    """Run one agent on one task, writing its trace.

    Args:
        task: a Task, or a reference for ``upskills.tasks.load_task``.
        provider: a model provider (``upskills.llm.get_provider``).
        config: budgets, device, sampling parameters, skills mode; defaults when None.
        trace_path: the trace file to write; it must not exist yet (or be empty).
        skills: SkillPacks to attach as ``config.skills_mode`` says.
        verifier: a warm ``Verifier`` to reuse (one is created and closed otherwise).
        skill_block: a prepared skill block inlined as it is (a lift arm's), when ``skills``
            are not inlined.

    Returns:
        The ``run_end`` event written last.

    Raises:
        FileExistsError: the trace file already has events.
    """
    from upskills.trace import TraceWriter

    if not isinstance(task, Task):
        from upskills.tasks import load_task

        task = load_task(task)
    config = config or AgentConfig()
    trace_path = Path(trace_path)
    if trace_path.exists() and trace_path.stat().st_size > 0:
        raise FileExistsError(f"{trace_path}: trace already has events; use a new path")
    hw = hardware(config.device)
    prompts = build_prompts(
        task,
        hw,
        config.device,
        skills=skills,
        skills_mode=config.skills_mode,
        compact=config.compact_skills,
        block=skill_block,
    )
    toolbox = KernelToolbox(
        task,
        device=config.device,
        options=check_options(config),
        verifier=verifier,
        skill_tool=prompts.skill_tool,
        hardware=hw,
    )
    with TraceWriter(trace_path) as writer, toolbox:
        run = _Run(task, provider, config, writer, toolbox)
        start = RunStart(
            trace_id=writer.trace_id,
            task=task.name,
            task_hash=task.hash,
            agent_role=config.role,
            agent_name=config.agent_name,
            provider=getattr(provider, "provider", None),
            model=getattr(provider, "model", None),
            parameters=config.model_dump(mode="json"),
            environment=run_environment(config.device, hw),
            skills=[f"{p.name}@{getattr(p, 'version', '?')}" for p in skills]
            if config.skills_mode != "none"
            else [],
            prompt_hashes=prompts.hashes,
        )
        writer.write(start)
        run.span = start.span_id
        try:
            return run.execute(prompts.system, prompts.task)
        except KeyboardInterrupt:
            run.end(RunOutcome.ABORTED, "interrupted")
            raise
        except Exception as exc:  # noqa: BLE001 - any failure ends this run, recorded
            return run.end(RunOutcome.ERROR, f"{type(exc).__name__}: {exc}")


class _Run:
    """State of one run: messages, totals, best kernel."""

    def __init__(
        self,
        task: Task,
        provider: Provider,
        config: AgentConfig,
        writer: TraceWriter,
        toolbox: KernelToolbox,
    ):
        from upskills.llm.base import Message

        self.task, self.provider, self.config = task, provider, config
        self.writer, self.toolbox = writer, toolbox
        self.Message = Message
        self.params = config.params
        self.span: str | None = None
        self.t0 = time.monotonic()
        self.totals = Totals()
        self.best = BestKernel()
        self.sent = 0
        self.fallbacks = 0

    def execute(self, system: str, task_text: str) -> RunEnd:
        """The loop; returns the run_end event."""
        msg = self.Message
        messages = [msg(role="system", content=system), msg(role="user", content=task_text)]
        idle = 0
        while True:
            reason = self.budget_exhausted()
            if reason:
                return self.end(RunOutcome.BUDGET, reason)
            self.warn_budget(messages)
            response, call_span = self.generate(messages)
            messages.append(
                msg(role="assistant", content=response.text, tool_calls=list(response.tool_calls))
            )
            if response.errors:
                self.note("warning", "; ".join(response.errors))
            if response.tool_calls:
                idle = 0
                for tc in response.tool_calls:
                    outcome = self.tool(tc.name, tc.arguments, tc.id, call_span)
                    messages.append(
                        msg(role="tool", content=outcome.output, tool_call_id=tc.id, name=tc.name)
                    )
                    if tc.name == "submit" and outcome.error is None:
                        return self.end_submitted(outcome)
                    if self.passed_limit(outcome):
                        return self.submit_passing(call_span)
                continue
            block = extract_code_block(response.text)
            if block is not None:
                idle = 0
                self.fallbacks += 1
                self.note("fallback", "no tool call: the reply's python block is checked")
                outcome = self.tool(
                    "check", {"source": block}, f"fallback-{self.fallbacks}", call_span
                )
                if self.passed_limit(outcome):
                    return self.submit_passing(call_span)
                messages.append(
                    msg(role="user", content=FALLBACK_TEXT.format(output=outcome.output))
                )
                continue
            idle += 0 if response.errors else 1  # a malformed tool call is not "done"
            if idle >= 2 and self.toolbox.current_source is not None:
                self.note(
                    "fallback", "no tool call twice in a row: the current kernel is submitted"
                )
                outcome = self.tool("submit", {}, "fallback-submit", call_span)
                return self.end_submitted(outcome)
            problems = "".join(f"\n- {e}" for e in response.errors)
            nudge = NUDGE_TEXT + (f"\nProblems with your reply:{problems}" if problems else "")
            messages.append(msg(role="user", content=nudge))

    def passed_limit(self, outcome: ToolOutcome) -> bool:
        """A student's limit: a passing check ends the run (``AgentConfig.submit_on_pass``)."""
        v = outcome.verdict
        return self.config.submit_on_pass and v is not None and v.passed

    def submit_passing(self, parent: str) -> RunEnd:
        """Submit the kernel that just passed (traced as a ``submit`` call with a note)."""
        self.note("limit", "submit_on_pass: the kernel that passed is submitted")
        return self.end_submitted(self.tool("submit", {}, "limit-submit", parent))

    def warn_budget(self, messages: list[Message]) -> None:
        """Tell the model, in the turn about to be sent, when two calls or fewer are left."""
        left = self.config.max_turns - self.totals.turns
        if left <= 2 and messages[-1].role in ("tool", "user"):
            note = BUDGET_TEXT.format(left=left, s="" if left == 1 else "s")
            messages[-1] = messages[-1].model_copy(update={"content": messages[-1].content + note})

    def budget_exhausted(self) -> str | None:
        """Why the run is out of budget, or None."""
        c = self.config
        if self.totals.turns >= c.max_turns:
            return f"turn budget spent ({c.max_turns} model calls)"
        used = self.totals.input_tokens + self.totals.output_tokens
        if c.max_tokens is not None and used >= c.max_tokens:
            return f"token budget spent ({used} >= {c.max_tokens} tokens)"
        elapsed = time.monotonic() - self.t0
        if c.max_wall_s is not None and elapsed >= c.max_wall_s:
            return f"time budget spent ({elapsed:.0f} s >= {c.max_wall_s:.0f} s)"
        return None

    def generate(self, messages: list[Message]) -> tuple[ModelResponse, str]:
        """One model call, traced; a provider failure is traced and re-raised."""
        new = [m.model_dump(mode="json") for m in messages[self.sent :]]
        self.sent = len(messages) + 1  # the assistant reply is part of the response
        specs = self.toolbox.specs()
        name, model = str(self.provider.provider), str(self.provider.model)
        t0 = time.perf_counter()
        self.totals.turns += 1
        try:
            response = self.provider.generate(messages, specs, self.params)
        except Exception as exc:
            self.writer.write(
                ModelCall(
                    trace_id=self.writer.trace_id,
                    parent_span_id=self.span,
                    provider=name,
                    model=model,
                    messages=new,
                    latency_s=time.perf_counter() - t0,
                    error=f"{type(exc).__name__}: {exc}",
                )
            )
            raise
        usage = response.usage
        self.totals.input_tokens += usage.total_input_tokens
        self.totals.output_tokens += usage.output_tokens
        event = ModelCall(
            trace_id=self.writer.trace_id,
            parent_span_id=self.span,
            provider=name,
            model=model,
            response_model=response.model,
            messages=new,
            response_text=response.text or "",
            tool_calls=list(response.tool_calls),
            usage=usage,
            latency_s=response.latency_s or (time.perf_counter() - t0),
            stop_reason=response.stop_reason,
            retries=response.retries,
        )
        self.writer.write(event)
        return response, event.span_id

    def tool(self, name: str, arguments: dict[str, Any], call_id: str, parent: str) -> ToolOutcome:
        """Run and trace one tool call; track the best passing kernel."""
        self.totals.tool_calls += 1
        outcome = record_tool(
            self.writer,
            parent_span_id=parent,
            name=name,
            arguments=arguments,
            call_id=call_id,
            run=lambda: self.toolbox.call(name, arguments),
        )
        self.best.offer(outcome)
        return outcome

    def note(self, kind: str, text: str) -> None:
        self.writer.write(
            Note(trace_id=self.writer.trace_id, parent_span_id=self.span, kind=kind, text=text)
        )

    def end_submitted(self, outcome: ToolOutcome) -> RunEnd:
        passed = outcome.verdict is not None and outcome.verdict.passed
        message = f"submitted kernel {outcome.kernel_hash} " + ("passed" if passed else "failed")
        return self.end(RunOutcome.SOLVED if passed else RunOutcome.UNSOLVED, message)

    def end(self, outcome: RunOutcome, message: str) -> RunEnd:
        """Write run_end with the totals and the best passing kernel."""
        self.totals.duration_s = time.monotonic() - self.t0
        event = RunEnd(
            trace_id=self.writer.trace_id,
            parent_span_id=self.span,
            outcome=outcome,  # type: ignore[arg-type]
            best_speedup=self.best.speedup,
            best_kernel_hash=self.best.hash,
            best_kernel_source=self.best.source,
            totals=self.totals,
            message=message,
        )
        written = self.writer.write(event)
        assert isinstance(written, RunEnd)
        return written
