"""Import a Claude Code session (``~/.claude/projects/<dir>/<session>.jsonl``) as a trace.

The row format is described in ``claude_code_format``. An assistant message split over several
rows (same ``message.id``) becomes one ``model_call``; each ``tool_use`` a ``tool_call`` and
its ``tool_result`` a ``tool_result``. When a tool result's text is a Verdict JSON
(``upskills check --json``) the Verdict is attached, and a ``Write`` of a ``.py`` file attaches
the kernel source to its result.

Subagents become child spans: a subagent's transcript (``<session>/subagents/agent-<id>.jsonl``,
or a run of ``isSidechain`` rows in an older single-file log) is opened by a ``note`` of kind
``subagent`` whose parent is the ``Task`` call that spawned it (linked by the result's
``toolUseResult.agentId``), and every event of the subagent hangs under that note.

A malformed row (not JSON, invalid UTF-8, a field of the wrong shape) is skipped and reported
with its file and line; the trace is written to a temporary file and renamed into place only
when the import finished, so a failure never leaves a half-written trace.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from upskills import __version__
from upskills.core.hashing import kernel_hash
from upskills.trace.events import (
    ModelCall,
    Note,
    RunEnd,
    RunOutcome,
    RunStart,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    Totals,
    TraceEvent,
    Usage,
    now_iso,
)
from upskills.trace.importers.claude_code_format import (
    Row,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    parse_row,
)
from upskills.trace.reader import TraceLineError
from upskills.trace.writer import TraceWriter
from upskills.verify.verdict import Verdict

SYNTHETIC_MODEL = "<synthetic>"
"""Model name Claude Code writes on messages it made up itself (interruptions, errors)."""

SPAWN_TOOLS = frozenset({"Task", "Agent"})
"""Tools that start a subagent."""

_AGENT_ID_IN_TEXT = re.compile(r"agentId:\s*([A-Za-z0-9_-]+)")


@dataclass
class ImportResult:
    """What an import produced."""

    path: Path
    """The trace file written."""
    events: int = 0
    """Events written."""
    skipped: list[TraceLineError] = field(default_factory=list[TraceLineError])
    """Source lines skipped, each with its file, line and reason."""
    subagents: int = 0
    """Subagent transcripts imported as child spans."""


@dataclass
class _Lines:
    """The readable rows of one transcript file."""

    path: Path
    rows: list[tuple[int, Row]] = field(default_factory=list[tuple[int, Row]])


def session_files(source: str | Path) -> tuple[Path, list[Path]]:
    """The main transcript and its subagent transcripts, for a file or a session folder.

    Args:
        source: ``<session>.jsonl``; or the ``<session>/`` folder beside it (holding
            ``subagents/``); or a folder holding exactly one ``<session>.jsonl``.

    Returns:
        ``(main transcript, subagent transcripts)``; internal context-compaction agents
        (``agent-acompact-*``) are left out.

    Raises:
        FileNotFoundError: no transcript found.
    """
    src = Path(source)
    if src.is_dir():
        beside = src.with_name(src.name + ".jsonl")
        if beside.is_file():
            main = beside
        else:
            found = sorted(src.glob("*.jsonl"))
            if len(found) != 1:
                raise FileNotFoundError(
                    f"{src}: expected one session .jsonl in the folder or {beside.name} beside "
                    f"it, found {len(found)}; pass the session file instead"
                )
            main = found[0]
    elif src.is_file():
        main = src
    else:
        raise FileNotFoundError(f"{src}: no such Claude Code session file or folder")
    subdirs = [main.with_suffix("") / "subagents"]
    if src.is_dir():
        subdirs.append(src / "subagents")
    subs = {
        p
        for d in subdirs
        if d.is_dir()
        for p in d.glob("agent-*.jsonl")
        if not p.name.startswith("agent-acompact")
    }
    return main, sorted(subs)


def read_rows(path: Path, skipped: list[TraceLineError]) -> _Lines:
    """Decode and validate a transcript's rows; bad lines go to ``skipped``."""
    out = _Lines(path)
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                skipped.append(TraceLineError(path, lineno, f"invalid UTF-8 at byte {exc.start}"))
                continue
            try:
                row = parse_row(json.loads(text))
            except json.JSONDecodeError as exc:
                skipped.append(TraceLineError(path, lineno, f"not valid JSON ({exc.msg})"))
                continue
            except ValueError as exc:
                skipped.append(TraceLineError(path, lineno, str(exc)))
                continue
            if row is not None:
                out.rows.append((lineno, row))
    return out


def provider_of(model: str | None) -> str | None:
    """The OTel ``gen_ai.provider.name`` behind a Claude Code model id, or None if unknown."""
    if not model:
        return None
    if model.startswith(("anthropic.", "us.anthropic.", "eu.anthropic.", "apac.anthropic.")):
        return "aws.bedrock"
    if "@" in model:
        return "gcp.vertex_ai"
    if model.startswith("claude"):
        return "anthropic"
    return None


def _verdict_in(text: str) -> Verdict | None:
    start = text.find("{")
    if start < 0 or '"candidate_hash"' not in text:
        return None
    try:
        return Verdict.model_validate_json(text[start : text.rfind("}") + 1])
    except ValidationError:
        return None


@dataclass
class _Pending:
    """An assistant message being assembled from its rows."""

    id: str | None
    ts: str
    model: str | None
    texts: list[str] = field(default_factory=list[str])
    tool_uses: list[ToolUseBlock] = field(default_factory=list[ToolUseBlock])
    usage: Usage = field(default_factory=Usage)
    stop: str | None = None


class _Builder:
    """Turns rows into events, in order; one instance per import."""

    def __init__(self, trace_id: str, subagents: dict[str, _Lines]):
        self.trace_id = trace_id
        self.events: list[TraceEvent] = []
        self.calls: dict[str, ToolCall] = {}
        self.kernels: dict[str, str] = {}
        self.subagents = subagents
        self.imported_agents: set[str] = set()
        self.best: tuple[float, str] | None = None
        self.solved = False
        self.last_ts: str | None = None

    def ts(self, row: Row) -> str:
        if row.timestamp:
            self.last_ts = row.timestamp
        return row.timestamp or self.last_ts or now_iso()

    def run(self, rows: list[tuple[int, Row]], parent: str | None) -> None:
        """Convert one agent's rows; runs of sidechain rows in them become subagents."""
        pending: _Pending | None = None
        side: list[tuple[int, Row]] = []
        for item in rows:
            row = item[1]
            if row.is_sidechain and parent is None:
                side.append(item)
                continue
            if side:
                pending = self.flush(pending, parent)
                self.subagent(side, self.open_spawn(), "sidechain")
                side = []
            if row.type == "assistant":
                pending = self.assistant(row, pending, parent)
            else:
                pending = self.flush(pending, parent)
                self.user(row, parent)
        self.flush(pending, parent)
        if side:
            self.subagent(side, self.open_spawn(), "sidechain")

    def open_spawn(self) -> str | None:
        """Span of the latest Task call still waiting for its result."""
        answered = {e.call_id for e in self.events if isinstance(e, ToolResult)}
        for e in reversed(self.events):
            if isinstance(e, ToolCall) and e.tool_name in SPAWN_TOOLS and e.call_id not in answered:
                return e.span_id
        return None

    def subagent(self, rows: list[tuple[int, Row]], parent: str | None, name: str) -> None:
        if not rows:
            return
        note = Note(
            trace_id=self.trace_id,
            ts=self.ts(rows[0][1]),
            parent_span_id=parent,
            kind="subagent",
            text=name,
        )
        self.events.append(note)
        self.run(rows, note.span_id)

    def assistant(self, row: Row, pending: _Pending | None, parent: str | None) -> _Pending:
        msg = row.message
        if pending is not None and (pending.id is None or pending.id != msg.id):
            pending = self.flush(pending, parent)
        if pending is None:
            pending = _Pending(id=msg.id, ts=self.ts(row), model=msg.model)
        else:
            self.ts(row)
        if msg.usage is not None:
            u = msg.usage
            pending.usage = Usage(
                input_tokens=u.input_tokens or 0,
                output_tokens=u.output_tokens or 0,
                cache_read_tokens=u.cache_read_input_tokens or 0,
                cache_write_tokens=u.cache_creation_input_tokens or 0,
            )
        pending.stop = msg.stop_reason or pending.stop
        for b in msg.blocks():
            if isinstance(b, TextBlock) and b.text:
                pending.texts.append(b.text)
            elif isinstance(b, ToolUseBlock):
                pending.tool_uses.append(b)
        return pending

    def flush(self, p: _Pending | None, parent: str | None) -> None:
        if p is None:
            return None
        call = ModelCall(
            trace_id=self.trace_id,
            ts=p.ts,
            parent_span_id=parent,
            provider=provider_of(p.model) or "anthropic",
            model=p.model or "unknown",
            response_text="\n".join(p.texts),
            tool_calls=[
                ToolCallRequest(id=b.id, name=b.name, arguments=b.input) for b in p.tool_uses
            ],
            usage=p.usage,
            stop_reason=p.stop,
        )
        self.events.append(call)
        for b in p.tool_uses:
            tool = ToolCall(
                trace_id=self.trace_id,
                ts=p.ts,
                parent_span_id=parent,
                tool_name=b.name,
                call_id=b.id,
                arguments=b.input,
            )
            self.events.append(tool)
            self.calls[b.id] = tool
            path = b.input.get("file_path")
            content = b.input.get("content")
            if b.name == "Write" and isinstance(path, str) and path.endswith(".py"):
                self.kernels[b.id] = content if isinstance(content, str) else ""
        return None

    def user(self, row: Row, parent: str | None) -> None:
        for b in row.message.blocks():
            if isinstance(b, ToolResultBlock):
                self.tool_result(row, b)
            elif isinstance(b, TextBlock) and b.text:
                kind = "meta" if row.is_meta else "user"
                note = Note(
                    trace_id=self.trace_id,
                    ts=self.ts(row),
                    parent_span_id=parent,
                    kind=kind,
                    text=b.text,
                )
                self.events.append(note)

    def tool_result(self, row: Row, b: ToolResultBlock) -> None:
        call = self.calls.get(b.tool_use_id)
        text = b.text
        if call is not None and call.tool_name in SPAWN_TOOLS:
            match = _AGENT_ID_IN_TEXT.search(text)
            agent = row.spawned_agent() or (match.group(1) if match else None)
            if agent and agent in self.subagents and agent not in self.imported_agents:
                self.imported_agents.add(agent)
                self.subagent(self.subagents[agent].rows, call.span_id, f"agent-{agent}")
        verdict = _verdict_in(text)
        src = self.kernels.get(b.tool_use_id)
        if verdict is not None and verdict.passed:
            self.solved = True
            speedup = verdict.speedup_eager
            if speedup is not None and (self.best is None or speedup > self.best[0]):
                self.best = (speedup, verdict.candidate_hash)
        result = ToolResult(
            trace_id=self.trace_id,
            ts=self.ts(row),
            parent_span_id=call.span_id if call else None,
            tool_name=call.tool_name if call else "unknown",
            call_id=b.tool_use_id,
            output=text,
            error=text if b.is_error else None,
            verdict=verdict,
            kernel_source=src,
            kernel_hash=kernel_hash(src) if src else None,
        )
        self.events.append(result)

    def totals(self, first: str, last: str) -> Totals:
        calls = [e for e in self.events if isinstance(e, ModelCall)]
        return Totals(
            turns=len(calls),
            tool_calls=sum(isinstance(e, ToolCall) for e in self.events),
            input_tokens=sum(c.usage.total_input_tokens for c in calls),
            output_tokens=sum(c.usage.output_tokens for c in calls),
            duration_s=max(0.0, _seconds(last) - _seconds(first)),
        )


def _seconds(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return 0.0


def _agent_id(lines: _Lines) -> str:
    for _, row in lines.rows:
        if row.agent_id:
            return row.agent_id
    return lines.path.stem.removeprefix("agent-")


def import_claude_code(
    source: str | Path, out: str | Path, task: str = "unknown", task_hash: str = ""
) -> ImportResult:
    """Convert a Claude Code session, subagents included, into an upskills trace file.

    Args:
        source: the session ``.jsonl``, or its session folder (see :func:`session_files`).
        out: the trace file to write (must not exist).
        task: the task the session worked on (a built-in name or a label).
        task_hash: the task's content hash, when known.

    Returns:
        The written path, the number of events, the subagents imported and the source lines
        skipped (file and line each).

    Raises:
        FileExistsError: ``out`` exists already.
        FileNotFoundError: ``source`` has no transcript.
    """
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists; choose another --out or remove it")
    main_path, sub_paths = session_files(source)
    result = ImportResult(out)
    main = read_rows(main_path, result.skipped)
    subs = [read_rows(p, result.skipped) for p in sub_paths]
    all_rows = [r for lines in (main, *subs) for _, r in lines.rows]
    stamps = sorted(r.timestamp for r in all_rows if r.timestamp)
    models = [
        r.message.model
        for r in all_rows
        if r.type == "assistant" and r.message.model and r.message.model != SYNTHETIC_MODEL
    ]
    model = models[0] if models else None
    first_main = main.rows[0][1] if main.rows else None

    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        with TraceWriter(tmp) as w:
            b = _Builder(w.trace_id, {_agent_id(s): s for s in subs})
            b.run(main.rows, None)
            for agent, lines in b.subagents.items():
                if agent not in b.imported_agents:
                    b.subagent(lines.rows, None, f"agent-{agent}")
            result.subagents = len(subs)
            first = stamps[0] if stamps else now_iso()
            last = stamps[-1] if stamps else first
            w.write(
                RunStart(
                    trace_id=w.trace_id,
                    ts=first,
                    task=task,
                    task_hash=task_hash,
                    agent_role="external",
                    agent_name="claude-code",
                    provider=provider_of(model),
                    model=model,
                    environment={
                        "claude_code_version": first_main.version if first_main else None,
                        "upskills": __version__,
                        "session_id": first_main.session_id if first_main else None,
                    },
                )
            )
            for event in b.events:
                w.write(event)
            best = b.best
            w.write(
                RunEnd(
                    trace_id=w.trace_id,
                    ts=last,
                    outcome=RunOutcome.SOLVED if b.solved else RunOutcome.UNSOLVED,
                    best_speedup=best[0] if best else None,
                    best_kernel_hash=best[1] if best else None,
                    totals=b.totals(first, last),
                    message=f"imported from Claude Code log {main_path.name}",
                )
            )
            result.events = w.count
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return result
