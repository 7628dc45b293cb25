"""Import a Claude Code session log (``~/.claude/projects/<dir>/<session>.jsonl``) as a trace.

Claude Code writes one JSON object a line: ``user`` and ``assistant`` records whose
``message.content`` is a string or a list of blocks (``text``, ``thinking``, ``tool_use``,
``tool_result``), plus bookkeeping records (``summary``, ``system``, ``file-history-snapshot``...)
that carry no model or tool activity and are skipped. The format is not officially documented;
this importer relies only on the fields above, ``message.id``/``model``/``usage`` and
``timestamp``. An assistant message split over several lines (same ``message.id``) becomes one
``model_call``. Each ``tool_use`` becomes a ``tool_call`` and its ``tool_result`` a
``tool_result``; when a tool result's text is a Verdict JSON (``upskills check --json``), the
Verdict is attached, and a ``Write`` of a ``.py`` file attaches the kernel source.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from upskills import __version__
from upskills.trace.events import (
    ModelCall,
    Note,
    RunEnd,
    RunStart,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    Totals,
    Usage,
    _now,
)
from upskills.trace.reader import TraceLineError
from upskills.trace.writer import TraceWriter
from upskills.verify.verdict import Verdict


@dataclass
class ImportResult:
    """What an import produced."""

    path: Path
    events: int = 0
    skipped: list[TraceLineError] = field(default_factory=list)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", "")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content if isinstance(b, dict)]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _verdict_in(text: str) -> Verdict | None:
    start = text.find("{")
    if start < 0 or '"candidate_hash"' not in text:
        return None
    try:
        return Verdict.model_validate_json(text[start : text.rfind("}") + 1])
    except ValidationError:
        return None


def _at(rec: dict[str, Any]) -> str:
    ts = rec.get("timestamp")
    return str(ts) if ts else _now()


def _kernel_hash(src: str) -> str:
    return hashlib.sha256(src.encode()).hexdigest()[:16]


class _Importer:
    def __init__(self, writer: TraceWriter, task: str, task_hash: str):
        self.w, self.task, self.task_hash = writer, task, task_hash
        self.started = False
        self.pending: dict[str, Any] | None = None
        self.calls: dict[str, ToolCall] = {}
        self.kernels: dict[str, str] = {}
        self.totals = Totals()
        self.best: tuple[float, str] | None = None
        self.solved = False

    def start(self, rec: dict[str, Any], model: str | None) -> None:
        self.w.write(
            RunStart(
                trace_id=self.w.trace_id,
                ts=_at(rec),
                task=self.task,
                task_hash=self.task_hash,
                agent_role="external",
                agent_name="claude-code",
                provider="anthropic" if model else None,
                model=model,
                environment={
                    "claude_code_version": rec.get("version"),
                    "upskills": __version__,
                    "session_id": rec.get("sessionId"),
                },
            )
        )
        self.started = True

    def flush_assistant(self) -> None:
        p, self.pending = self.pending, None
        if p is None:
            return
        u = p["usage"]
        usage = Usage(
            input_tokens=u.get("input_tokens", 0) or 0,
            output_tokens=u.get("output_tokens", 0) or 0,
            cache_read_tokens=u.get("cache_read_input_tokens", 0) or 0,
            cache_write_tokens=u.get("cache_creation_input_tokens", 0) or 0,
        )
        self.totals.turns += 1
        self.totals.input_tokens += usage.input_tokens + usage.cache_read_tokens
        self.totals.output_tokens += usage.output_tokens
        reqs = [
            ToolCallRequest(id=b["id"], name=b["name"], arguments=b.get("input") or {})
            for b in p["tool_uses"]
        ]
        self.w.write(
            ModelCall(
                trace_id=self.w.trace_id,
                ts=_at(p),
                provider="anthropic",
                model=p["model"] or "unknown",
                response_text="\n".join(p["texts"]),
                tool_calls=reqs,
                usage=usage,
                stop_reason=p["stop"],
            )
        )
        for b in p["tool_uses"]:
            call = ToolCall(
                trace_id=self.w.trace_id,
                ts=_at(p),
                tool_name=b["name"],
                call_id=b["id"],
                arguments=b.get("input") or {},
            )
            self.w.write(call)
            self.totals.tool_calls += 1
            self.calls[b["id"]] = call
            path = str((b.get("input") or {}).get("file_path", ""))
            if b["name"] == "Write" and path.endswith(".py"):
                self.kernels[b["id"]] = str(b["input"].get("content", ""))

    def assistant(self, rec: dict[str, Any]) -> None:
        msg = rec.get("message") or {}
        mid = msg.get("id")
        if self.pending is not None and self.pending["id"] != mid:
            self.flush_assistant()
        if self.pending is None:
            self.pending = {
                "id": mid,
                "timestamp": rec.get("timestamp"),
                "model": msg.get("model"),
                "texts": [],
                "tool_uses": [],
                "usage": {},
                "stop": None,
            }
        p = self.pending
        p["usage"] = msg.get("usage") or p["usage"]
        p["stop"] = msg.get("stop_reason") or p["stop"]
        for b in _blocks(msg):
            if b.get("type") == "text" and b.get("text"):
                p["texts"].append(b["text"])
            elif b.get("type") == "tool_use" and b.get("id") and b.get("name"):
                p["tool_uses"].append(b)

    def user(self, rec: dict[str, Any]) -> None:
        self.flush_assistant()
        msg = rec.get("message") or {}
        for b in _blocks(msg):
            if b.get("type") == "tool_result":
                self.tool_result(rec, b)
            elif b.get("type") == "text" and b.get("text"):
                self.w.write(
                    Note(trace_id=self.w.trace_id, ts=_at(rec), kind="user", text=b["text"])
                )

    def tool_result(self, rec: dict[str, Any], b: dict[str, Any]) -> None:
        cid = str(b.get("tool_use_id", ""))
        call = self.calls.get(cid)
        text = _text_of(b.get("content"))
        verdict = _verdict_in(text)
        src = self.kernels.get(cid)
        if verdict is not None and verdict.passed:
            self.solved = True
            if verdict.speedup_eager is not None and (
                self.best is None or verdict.speedup_eager > self.best[0]
            ):
                self.best = (verdict.speedup_eager, verdict.candidate_hash)
        self.w.write(
            ToolResult(
                trace_id=self.w.trace_id,
                ts=_at(rec),
                parent_span_id=call.span_id if call else None,
                tool_name=call.tool_name if call else "unknown",
                call_id=cid or "unknown",
                output=text,
                error=text if b.get("is_error") else None,
                verdict=verdict,
                kernel_source=src,
                kernel_hash=_kernel_hash(src) if src else None,
            )
        )


def import_claude_code(
    source: str | Path, out: str | Path, task: str = "unknown", task_hash: str = ""
) -> ImportResult:
    """Convert a Claude Code session log into an upskills trace file.

    Args:
        source: the Claude Code ``.jsonl`` session file.
        out: the trace file to write (must not exist).
        task: the task the session worked on (a built-in name or a label).
        task_hash: the task's content hash, when known.

    Returns:
        The written path, the number of events and the source lines skipped (with line numbers).

    Raises:
        FileExistsError: ``out`` exists already.
        FileNotFoundError: ``source`` does not exist.
    """
    source, out = Path(source), Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists; choose another --out or remove it")
    result = ImportResult(out)
    with open(source, encoding="utf-8") as fh, TraceWriter(out) as w:
        imp = _Importer(w, task, task_hash)
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as exc:
                result.skipped.append(TraceLineError(source, lineno, f"not valid JSON ({exc.msg})"))
                continue
            kind = rec.get("type") if isinstance(rec, dict) else None
            if kind not in ("user", "assistant"):
                continue
            if not imp.started:
                model = (rec.get("message") or {}).get("model") if kind == "assistant" else None
                imp.start(rec, model)
            (imp.assistant if kind == "assistant" else imp.user)(rec)
        imp.flush_assistant()
        if imp.started:
            best = imp.best
            w.write(
                RunEnd(
                    trace_id=w.trace_id,
                    outcome="solved" if imp.solved else "unsolved",
                    best_speedup=best[0] if best else None,
                    best_kernel_hash=best[1] if best else None,
                    totals=imp.totals,
                    message=f"imported from Claude Code log {source.name}",
                )
            )
        result.events = w.count
    return result
