"""Claude Code transcript rows in the shape Claude Code 2.x writes them.

Field set taken from real transcripts (``~/.claude/projects/<project>/<session>.jsonl``): every
conversation row carries ``parentUuid``, ``isSidechain``, ``userType``, ``cwd``, ``sessionId``,
``version``, ``gitBranch``, ``type``, ``uuid``, ``timestamp``; assistant rows add
``requestId`` and an Anthropic Messages ``message`` (``id``, ``type``, ``role``, ``model``,
``content``, ``stop_reason``, ``stop_sequence``, ``usage`` with cache counts and the
``cache_creation`` / ``service_tier`` keys); a ``Task`` result row carries ``toolUseResult``
with the subagent's ``agentId``; a subagent's own file
(``<session>/subagents/agent-<id>.jsonl``) has ``isSidechain: true`` and ``agentId`` on every
row. Bookkeeping rows (``queue-operation``, ``file-history-snapshot``, ``summary``) come too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION = "0a6afc57-2f31-4cb4-8ff0-01247f50c64c"
MODEL = "claude-opus-4-5-20251101"


class Rows:
    """Builds one transcript's rows, chaining ``parentUuid`` like Claude Code does."""

    def __init__(self, sidechain: bool = False, agent_id: str | None = None, t0: int = 0):
        self.rows: list[Any] = []
        self.parent: str | None = None
        self.sidechain, self.agent_id, self.t = sidechain, agent_id, t0
        self.n = 0

    def _base(self, kind: str) -> dict[str, Any]:
        self.n += 1
        self.t += 1
        uid = f"{'s' if self.sidechain else 'm'}{self.agent_id or ''}-{self.n:04d}"
        row: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": "/home/dev/kernels",
            "sessionId": SESSION,
            "version": "2.0.61",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": f"2026-11-30T10:{self.t // 60:02d}:{self.t % 60:02d}.000Z",
        }
        if self.agent_id:
            row["agentId"] = self.agent_id
        self.parent = uid
        return row

    def user(self, content: Any, **extra: Any) -> dict[str, Any]:
        row = self._base("user") | {"message": {"role": "user", "content": content}} | extra
        self.rows.append(row)
        return row

    def result(self, tool_use_id: str, text: str, is_error: bool = False, **extra: Any) -> None:
        block: dict[str, Any] = {"tool_use_id": tool_use_id, "type": "tool_result", "content": text}
        if is_error:
            block["is_error"] = True
        self.user([block], **extra)

    def assistant(
        self,
        msg_id: str,
        content: list[dict[str, Any]],
        usage: tuple[int, int, int, int] = (3, 40, 0, 0),
        stop: str | None = None,
        model: str = MODEL,
    ) -> dict[str, Any]:
        inp, out, cache_read, cache_write = usage
        row = self._base("assistant") | {
            "requestId": f"req_{msg_id}",
            "message": {
                "model": model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": inp,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": cache_write,
                        "ephemeral_1h_input_tokens": 0,
                    },
                    "output_tokens": out,
                    "service_tier": "standard",
                },
            },
        }
        self.rows.append(row)
        return row

    def raw(self, line: Any) -> None:
        self.rows.append(line)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            for r in self.rows:
                if isinstance(r, bytes):
                    fh.write(r + b"\n")
                else:
                    text = r if isinstance(r, str) else json.dumps(r)
                    fh.write(text.encode() + b"\n")
        return path


def tool_use(call_id: Any, name: str, tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}
