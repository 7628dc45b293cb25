"""The rows of a Claude Code transcript that the importer reads, as lenient pydantic models.

Claude Code (``~/.claude/projects/<project>/<session>.jsonl``) writes one JSON object a line.
Rows of ``type`` ``user`` and ``assistant`` carry the conversation: ``uuid``, ``parentUuid``,
``sessionId``, ``timestamp``, ``isSidechain`` (true inside a subagent), ``agentId`` (in a
subagent's own file), ``version``, and ``message`` in the Anthropic Messages format:
``content`` is a string or a list of blocks (``text``, ``thinking``, ``tool_use``,
``tool_result``, ``image``...), and an assistant message has ``id``, ``model``,
``stop_reason`` and ``usage`` (``input_tokens``, ``output_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``). One assistant message can be
split over several rows with the same ``message.id``. A user row answering a ``Task`` tool call
may carry ``toolUseResult.agentId``, naming the subagent file ``subagents/agent-<id>.jsonl``.
Other row types (``summary``, ``system``, ``file-history-snapshot``, ``queue-operation``) carry
no model or tool activity.

The models check the types of exactly the fields the importer uses, so a malformed row (``content:
null``, ``message`` as a string, a tool ``input`` that is not an object, an integer tool id)
fails validation and is skipped with a message, and keep every other field (``extra="allow"``).
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class TextBlock(_Lenient):
    """A text block."""

    type: Literal["text"]
    text: StrictStr = ""
    """The text."""


class ToolUseBlock(_Lenient):
    """A tool call requested by the model."""

    type: Literal["tool_use"]
    id: StrictStr
    """Tool call id (``toolu_...``)."""
    name: StrictStr
    """Tool name (``Write``, ``Bash``, ``Task``...)."""
    input: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Arguments, a JSON object."""


class ToolResultBlock(_Lenient):
    """A tool's answer, sent back in a user message."""

    type: Literal["tool_result"]
    tool_use_id: StrictStr
    """Id of the tool call answered."""
    content: StrictStr | list[dict[str, Any]] | None = None
    """Text, or a list of content blocks."""
    is_error: StrictBool | None = None
    """True when the tool failed."""

    @property
    def text(self) -> str:
        """The result's text blocks, joined."""
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return ""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


Block = TextBlock | ToolUseBlock | ToolResultBlock
"""A content block the importer acts on; other kinds (thinking, image) are kept out."""

_BLOCKS: dict[str, type[TextBlock] | type[ToolUseBlock] | type[ToolResultBlock]] = {
    "text": TextBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
}


class AssistantUsage(_Lenient):
    """Token usage of one assistant message, as the Anthropic API reports it."""

    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0


class Message(_Lenient):
    """The ``message`` of a user or assistant row."""

    role: StrictStr | None = None
    content: StrictStr | list[dict[str, Any]]
    """A string, or a list of content blocks."""
    id: StrictStr | None = None
    """Message id (assistant): rows with the same id are one model response."""
    model: StrictStr | None = None
    """Model that answered (assistant)."""
    stop_reason: StrictStr | None = None
    """Why the model stopped (assistant)."""
    usage: AssistantUsage | None = None
    """Token usage (assistant)."""

    def blocks(self) -> list[Block]:
        """The content as typed blocks (a string is one text block); raises ValidationError."""
        if isinstance(self.content, str):
            return [TextBlock(type="text", text=self.content)] if self.content else []
        out: list[Block] = []
        for raw in self.content:
            cls = _BLOCKS.get(str(raw.get("type")))
            if cls is not None:
                out.append(cls.model_validate(raw))
        return out


class Row(_Lenient):
    """One ``user`` or ``assistant`` row of a transcript."""

    type: Literal["user", "assistant"]
    message: Message
    uuid: StrictStr | None = None
    parent_uuid: StrictStr | None = Field(default=None, alias="parentUuid")
    session_id: StrictStr | None = Field(default=None, alias="sessionId")
    timestamp: StrictStr | None = None
    """ISO 8601, UTC."""
    is_sidechain: StrictBool = Field(default=False, alias="isSidechain")
    """True for a subagent's rows."""
    agent_id: StrictStr | None = Field(default=None, alias="agentId")
    """The subagent's id, in a subagent's own file."""
    version: StrictStr | None = None
    """Claude Code version."""
    is_meta: StrictBool = Field(default=False, alias="isMeta")
    """A harness message (hook feedback, caveats), not the user's."""
    tool_use_result: Any = Field(default=None, alias="toolUseResult")
    """Structured tool result (a ``Task`` call's has ``agentId``)."""

    def spawned_agent(self) -> str | None:
        """The subagent id a ``Task`` tool result names, if any."""
        tur = self.tool_use_result
        if isinstance(tur, dict):
            agent = cast(dict[str, Any], tur).get("agentId")
            if isinstance(agent, str) and agent:
                return agent
        return None


CONVERSATION_TYPES = ("user", "assistant")
"""Row types that carry model or tool activity."""


def parse_row(obj: object) -> Row | None:
    """Validate a decoded JSON line: a Row, or None for a row with no conversation in it.

    Raises:
        ValueError: a user or assistant row whose fields have the wrong shape; the message
            names the first bad field.
    """
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object but {type(obj).__name__}")
    kind = cast(dict[str, Any], obj).get("type")
    if kind not in CONVERSATION_TYPES:
        return None
    try:
        row = Row.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(f"malformed {kind} row: {_first_error(exc)}") from None
    try:
        row.message.blocks()
    except ValidationError as exc:
        raise ValueError(f"malformed {kind} row: message.content: {_first_error(exc)}") from None
    return row


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "row"
    return f"{where}: {first['msg']}"
