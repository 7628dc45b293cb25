"""External-agent sessions: any agent (a person, a coding agent) calls the tools, we trace it.

A session is a folder holding ``state.json`` (the task itself, the current and best kernels,
counters) and ``trace.jsonl``. Every command opens the folder, acts, and saves, so a session
can be driven one shell command at a time (``upskills session call``), by the MCP server, and
moved between machines: the task source travels inside ``state.json`` and each verdict records
the machine it was produced on. Nothing in the folder names a path of the machine.

The trace says honestly who worked: role ``external``, the agent name given, and a provider and
model only when the caller states them. There are no ``model_call`` events: the agent's own
reasoning is not visible here, only its tool calls and notes.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from upskills.agent.recording import BestKernel, record_tool
from upskills.agent.toolbox import KERNEL_TOOLS, KernelToolbox, ToolOutcome
from upskills.tasks.model import Task
from upskills.trace.events import Note, RunEnd, RunOutcome, RunStart, Totals

try:
    import fcntl
except ImportError:  # not POSIX: no locking
    fcntl = None  # type: ignore[assignment]

STATE_FILE = "state.json"
"""Name of the session state file inside a session folder."""
TRACE_FILE = "trace.jsonl"
"""Name of the trace file inside a session folder."""
LOCK_FILE = ".lock"
"""Lock file serialising commands on one session folder (POSIX ``flock``)."""

Outcome = RunOutcome
"""How a session ended (the trace's run outcome)."""


class SessionError(Exception):
    """A session folder is missing, malformed, or in the wrong state for the request."""


class SessionState(BaseModel):
    """The persistent state of one external-agent session (``state.json``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    trace_id: str
    """Id of the session's trace."""
    run_span_id: str
    """Span id of the trace's run_start (parent of every later event)."""
    task: Task
    """The task, embedded, so the folder is self-contained."""
    agent_name: str
    """Agent name as given (``claude-code``, ``external``)."""
    provider: str | None = None
    """Provider of the agent's model, when stated."""
    model: str | None = None
    """The agent's model, when stated."""
    started_at: str
    """UTC start time, ISO 8601."""
    started_host: str = ""
    """Host the session started on."""
    last_host: str = ""
    """Host of the latest call (a change is noted in the trace)."""
    current_source: str | None = None
    """The current kernel's source."""
    best: BestKernel = Field(default_factory=BestKernel)
    """Best passing kernel so far."""
    tool_calls: int = 0
    """Tool calls made."""
    submitted: bool | None = None
    """None before submit; then whether the last submitted kernel passed."""
    ended: bool = False
    """Whether run_end was written."""


class Session:
    """An open session folder.

    Use ``Session.start`` to create one and ``Session.open`` to resume one.
    """

    def __init__(self, folder: Path, state: SessionState, device: str = "auto"):
        self.folder = folder
        self.state = state
        self.device = device

    # -- lifecycle -----------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        task: Task | str,
        folder: str | Path,
        *,
        agent_name: str = "external",
        provider: str | None = None,
        model: str | None = None,
        device: str = "auto",
    ) -> Session:
        """Create a session folder and write the trace's ``run_start``.

        Raises:
            SessionError: the folder already holds a session.
        """
        from upskills.agent.environment import run_environment
        from upskills.trace import TraceWriter

        if not isinstance(task, Task):
            from upskills.tasks import load_task

            task = load_task(task)
        folder = Path(folder)
        if (folder / STATE_FILE).exists() or (folder / TRACE_FILE).exists():
            raise SessionError(f"{folder}: already holds a session; pick a new --dir")
        folder.mkdir(parents=True, exist_ok=True)
        trace_id = uuid.uuid4().hex
        host = socket.gethostname()
        with TraceWriter(folder / TRACE_FILE, trace_id=trace_id) as writer:
            start = RunStart(
                trace_id=trace_id,
                task=task.name,
                task_hash=task.hash,
                agent_role="external",
                agent_name=agent_name,
                provider=provider,
                model=model,
                parameters={"device": device, "interface": "session", "task_origin": task.origin},
                environment=run_environment(device),
            )
            writer.write(start)
        state = SessionState(
            trace_id=trace_id,
            run_span_id=start.span_id,
            task=task,
            agent_name=agent_name,
            provider=provider,
            model=model,
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            started_host=host,
            last_host=host,
        )
        session = cls(folder, state, device)
        session.save()
        return session

    @classmethod
    def open(cls, folder: str | Path, device: str = "auto") -> Session:
        """Open an existing session folder.

        Raises:
            SessionError: no session there, or its state file is malformed.
        """
        folder = Path(folder)
        return cls(folder, _load_state(folder), device)

    def save(self) -> None:
        """Write ``state.json`` atomically."""
        path = self.folder / STATE_FILE
        tmp = path.with_name(f".{STATE_FILE}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_text(self.state.model_dump_json(indent=2), encoding="utf-8")
        tmp.replace(path)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold the folder's lock, on the state as last saved (another process may have acted)."""
        with open(self.folder / LOCK_FILE, "a") as fh:
            if fcntl is not None:
                fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                self.state = _load_state(self.folder)
                self._require_open()
                yield
                self.save()
            finally:
                if fcntl is not None:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    @property
    def trace_path(self) -> Path:
        """The session's trace file."""
        return self.folder / TRACE_FILE

    # -- actions -------------------------------------------------------------------------------

    def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        verifier: Any = None,
        seeds: int | None = None,
        ceilings: str | Path | None = None,
    ) -> ToolOutcome:
        """Run one tool on this machine, append tool_call and tool_result, save the state.

        Args:
            tool: a kernel tool name.
            arguments: its arguments (``source`` for write_kernel, check, benchmark, profile).
            verifier: a warm ``Verifier`` to use; a one-shot one otherwise.
            seeds: seeds per variant for this call's verdict (default: the verifier's).
            ceilings: ceilings JSON for ``profile`` (default: ``UPSKILLS_CEILINGS``, else
                measured on CUDA).

        Raises:
            SessionError: the session has ended, or the tool is not a session tool.
        """
        from upskills.trace import TraceWriter

        if tool not in KERNEL_TOOLS:
            raise SessionError(f"unknown tool {tool!r}; session tools: {', '.join(KERNEL_TOOLS)}")
        options = None
        if seeds is not None:
            from upskills.verify import CheckOptions

            options = CheckOptions(seeds=seeds)
        with self._exclusive():
            state = self.state
            toolbox = KernelToolbox(
                state.task,
                device=self.device,
                options=options,
                verifier=verifier,
                ceilings=ceilings,
            )
            toolbox.current_source = state.current_source
            with TraceWriter(self.trace_path, trace_id=state.trace_id) as writer, toolbox:
                self._note_host(writer)
                state.tool_calls += 1
                outcome = record_tool(
                    writer,
                    parent_span_id=state.run_span_id,
                    name=tool,
                    arguments=dict(arguments or {}),
                    call_id=f"call-{state.tool_calls}-{uuid.uuid4().hex[:8]}",
                    run=lambda: toolbox.call(tool, arguments),
                )
            state.current_source = toolbox.current_source
            state.best.offer(outcome)
            if tool == "submit" and outcome.verdict is not None:
                state.submitted = outcome.verdict.passed
        return outcome

    def note(self, text: str, kind: str = "note") -> None:
        """Append a note event."""
        from upskills.trace import TraceWriter

        with (
            self._exclusive(),
            TraceWriter(self.trace_path, trace_id=self.state.trace_id) as writer,
        ):
            writer.write(
                Note(
                    trace_id=self.state.trace_id,
                    parent_span_id=self.state.run_span_id,
                    kind=kind,
                    text=text,
                )
            )

    def end(self, outcome: RunOutcome | str | None = None, message: str = "") -> RunEnd:
        """Write run_end: totals and the best passing kernel.

        Args:
            outcome: defaults to ``solved`` when the last submitted kernel passed, else
                ``unsolved``.
            message: why the session ended.
        """
        known = [o.value for o in RunOutcome]
        if outcome is not None and outcome not in known:
            raise SessionError(f"outcome {outcome!r} is not one of {', '.join(known)}")
        with self._exclusive():
            return self._end(RunOutcome(outcome) if outcome is not None else None, message)

    def _end(self, outcome: RunOutcome | None, message: str) -> RunEnd:
        from upskills.trace import TraceWriter, read_trace

        if outcome is None:
            outcome = RunOutcome.SOLVED if self.state.submitted else RunOutcome.UNSOLVED
        started = datetime.fromisoformat(self.state.started_at)
        first = read_trace(self.trace_path).start
        if first is not None:
            started = datetime.fromisoformat(first.ts)
        totals = Totals(
            tool_calls=self.state.tool_calls,
            duration_s=max(0.0, (datetime.now(UTC) - started).total_seconds()),
        )
        best = self.state.best
        event = RunEnd(
            trace_id=self.state.trace_id,
            parent_span_id=self.state.run_span_id,
            outcome=outcome,
            best_speedup=best.speedup,
            best_kernel_hash=best.hash,
            best_kernel_source=best.source,
            totals=totals,
            message=message or _default_message(outcome, self.state.submitted),
        )
        with TraceWriter(self.trace_path, trace_id=self.state.trace_id) as writer:
            written = writer.write(event)
        self.state.ended = True
        assert isinstance(written, RunEnd)
        return written

    def _require_open(self) -> None:
        if self.state.ended:
            raise SessionError(f"{self.folder}: the session has ended; start a new one")

    def _note_host(self, writer: Any) -> None:
        host = socket.gethostname()
        if host == self.state.last_host:
            return
        from upskills.agent.environment import run_environment

        env = run_environment(self.device)
        writer.write(
            Note(
                trace_id=self.state.trace_id,
                parent_span_id=self.state.run_span_id,
                kind="environment",
                text=f"session moved from {self.state.last_host} to {host}: "
                + json.dumps(env, sort_keys=True, default=str),
            )
        )
        self.state.last_host = host


def _load_state(folder: Path) -> SessionState:
    path = folder / STATE_FILE
    if not path.is_file():
        raise SessionError(f"{path}: no session here; run `upskills session start` first")
    try:
        return SessionState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise SessionError(f"{path}: field {field!r}: {err['msg']}") from exc


def _default_message(outcome: str, submitted: bool | None) -> str:
    if submitted is None:
        return f"ended by the agent without a submit ({outcome})"
    return f"ended by the agent after a submit that {'passed' if submitted else 'failed'}"
