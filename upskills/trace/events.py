"""Trace events: one pydantic model per line of a trace file, in a union tagged by ``event``.

Field names follow the OpenTelemetry GenAI semantic conventions where one exists: the JSON key
is the OTel attribute name (``gen_ai.tool.name``), the Python attribute is its snake-case form
(``tool_name``). Always serialize with ``by_alias=True`` (``dump_event`` does).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter

from upskills.verify.verdict import ProfileReport, Verdict

SCHEMA_VERSION = 1
"""Current trace schema version."""

PROVIDER_KEY = "gen_ai.provider.name"
"""OTel attribute of the provider; ``gen_ai.system`` (deprecated) is still read."""


class RunOutcome(StrEnum):
    """How a run ended: the one spelling of run outcomes (run_end, sessions, the CLI)."""

    SOLVED = "solved"
    """A submitted kernel passed the verifier."""
    UNSOLVED = "unsolved"
    """The agent stopped without a passing submission."""
    ERROR = "error"
    """The run failed (provider error, crash)."""
    BUDGET = "budget"
    """Out of turns, tokens or time."""
    ABORTED = "aborted"
    """Stopped from outside (a person, a killed session)."""


def now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds (an event's ``ts``)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _uuid() -> str:
    return uuid.uuid4().hex


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_version: Literal[1] = 1
    """Trace schema version."""
    id: str = Field(default_factory=_uuid)
    """Unique id of this event (uuid4 hex)."""
    ts: str = Field(default_factory=now_iso)
    """UTC timestamp, ISO 8601 with microseconds."""
    trace_id: str
    """Id of the trace (one agent solving one task); shared by all its events."""
    span_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    """Id of this event's span."""
    parent_span_id: str | None = None
    """Span this event belongs to (a tool_result's parent is its tool_call)."""


class RunStart(_Event):
    """The agent begins a task."""

    event: Literal["run_start"] = "run_start"
    task: str
    """Task name."""
    task_hash: str
    """Task content hash."""
    agent_role: Literal["teacher", "student", "external"] = Field(
        validation_alias=AliasChoices("agent_role", "upskills.agent.role"),
        serialization_alias="upskills.agent.role",
    )
    """Who is solving: a driven teacher, a student, or an external agent (person, coding agent)."""
    agent_name: str = Field(
        default="upskills-agent",
        validation_alias=AliasChoices("agent_name", "gen_ai.agent.name"),
        serialization_alias="gen_ai.agent.name",
    )
    """Agent name (``upskills-agent``, ``claude-code``, ``external``)."""
    provider: str | None = Field(
        default=None,
        validation_alias=AliasChoices("provider", PROVIDER_KEY, "gen_ai.system"),
        serialization_alias=PROVIDER_KEY,
    )
    """Model provider (``anthropic``, ``openai``, ``transformers``, ``mock``); None if unknown."""
    model: str | None = Field(
        default=None,
        validation_alias=AliasChoices("model", "gen_ai.request.model"),
        serialization_alias="gen_ai.request.model",
    )
    """Model name as requested; None when the agent is external and unknown."""
    parameters: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Sampling parameters and budgets."""
    environment: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Machine and versions: gpu, torch, triton, python, upskills, git_rev, hostname."""
    skills: list[str] = Field(default_factory=list[str])
    """Skills attached (``name@version``), with the mode (inline or on demand) in parameters."""
    prompt_hashes: dict[str, str] = Field(default_factory=dict[str, str])
    """sha256 of each package prompt used (name -> hash)."""


class ToolCallRequest(BaseModel):
    """A tool call requested by a model."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Call id assigned by the provider (or generated)."""
    name: str
    """Tool name."""
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Parsed arguments."""


class Usage(BaseModel):
    """Token usage, normalised across providers."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    input_tokens: int = Field(
        default=0,
        validation_alias=AliasChoices("input_tokens", "gen_ai.usage.input_tokens"),
        serialization_alias="gen_ai.usage.input_tokens",
    )
    """Prompt tokens neither read from nor written to the cache, as the provider counts them.

    OTel's ``gen_ai.usage.input_tokens`` includes cached tokens: that is
    ``total_input_tokens``, which the OTel export writes under this name.
    """
    output_tokens: int = Field(
        default=0,
        validation_alias=AliasChoices("output_tokens", "gen_ai.usage.output_tokens"),
        serialization_alias="gen_ai.usage.output_tokens",
    )
    """Generated tokens."""
    cache_read_tokens: int = Field(
        default=0,
        validation_alias=AliasChoices(
            "cache_read_tokens",
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_read_input_tokens",
        ),
        serialization_alias="gen_ai.usage.cache_read.input_tokens",
    )
    """Prompt tokens read from the provider's cache."""
    cache_write_tokens: int = Field(
        default=0,
        validation_alias=AliasChoices(
            "cache_write_tokens",
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.usage.cache_creation_input_tokens",
        ),
        serialization_alias="gen_ai.usage.cache_creation.input_tokens",
    )
    """Prompt tokens written to the provider's cache."""

    @property
    def total_input_tokens(self) -> int:
        """All prompt tokens, cached ones included (OTel's ``gen_ai.usage.input_tokens``)."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


class ModelCall(_Event):
    """One request to a model and its response."""

    event: Literal["model_call"] = "model_call"
    operation_name: str = Field(
        default="chat",
        validation_alias=AliasChoices("operation_name", "gen_ai.operation.name"),
        serialization_alias="gen_ai.operation.name",
    )
    """OTel operation name (``chat``)."""
    provider: str = Field(
        validation_alias=AliasChoices("provider", PROVIDER_KEY, "gen_ai.system"),
        serialization_alias=PROVIDER_KEY,
    )
    """Provider name."""
    model: str = Field(
        validation_alias=AliasChoices("model", "gen_ai.request.model"),
        serialization_alias="gen_ai.request.model",
    )
    """Model requested."""
    response_model: str | None = Field(
        default=None,
        validation_alias=AliasChoices("response_model", "gen_ai.response.model"),
        serialization_alias="gen_ai.response.model",
    )
    """Model that answered, as the provider reported it."""
    messages: list[dict[str, Any]] | None = None
    """Messages sent since the previous model_call (the new turn), or None if only referenced."""
    messages_ref: str | None = None
    """Reference to the full message list (hash), when not inlined."""
    response_text: str = ""
    """Text content of the response."""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list[ToolCallRequest])
    """Tool calls the model asked for."""
    usage: Usage = Field(default_factory=Usage)
    """Normalised token usage."""
    latency_s: float = 0.0
    """Wall time of the call, retries included."""
    stop_reason: str | None = Field(
        default=None,
        validation_alias=AliasChoices("stop_reason", "gen_ai.response.finish_reasons"),
        serialization_alias="gen_ai.response.finish_reasons",
    )
    """Why generation stopped (``end_turn``, ``tool_use``, ``stop``, ``length``...)."""
    retries: int = 0
    """How many retries the call needed."""
    error: str | None = None
    """Error text if the call failed after retries."""


class ToolCall(_Event):
    """The agent invokes a tool."""

    event: Literal["tool_call"] = "tool_call"
    tool_name: str = Field(
        validation_alias=AliasChoices("tool_name", "gen_ai.tool.name"),
        serialization_alias="gen_ai.tool.name",
    )
    """Tool name (``read_task``, ``write_kernel``, ``check``, ``benchmark``, ``submit``...)."""
    call_id: str = Field(
        validation_alias=AliasChoices("call_id", "gen_ai.tool.call.id"),
        serialization_alias="gen_ai.tool.call.id",
    )
    """Tool call id (matches the model's request when there is one)."""
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Arguments as passed."""


class ToolResult(_Event):
    """What a tool returned."""

    event: Literal["tool_result"] = "tool_result"
    tool_name: str = Field(
        validation_alias=AliasChoices("tool_name", "gen_ai.tool.name"),
        serialization_alias="gen_ai.tool.name",
    )
    """Tool name."""
    call_id: str = Field(
        validation_alias=AliasChoices("call_id", "gen_ai.tool.call.id"),
        serialization_alias="gen_ai.tool.call.id",
    )
    """Id of the tool call this answers."""
    output: str = ""
    """Text returned to the agent."""
    error: str | None = None
    """Error text if the tool itself failed (not a failing verdict)."""
    duration_s: float = 0.0
    """Tool wall time."""
    verdict: Verdict | None = None
    """Full verifier Verdict, for check, benchmark, profile and submit tools."""
    profile: ProfileReport | None = None
    """The roofline/Nsight Compute report, for the profile tool."""
    kernel_source: str | None = None
    """Source of the kernel the tool acted on (write_kernel, check, benchmark, submit)."""
    kernel_hash: str | None = None
    """sha256 (16 hex) of ``kernel_source``."""


class Note(_Event):
    """Free-form note from the agent, the harness or a person."""

    event: Literal["note"] = "note"
    kind: str = "note"
    """Note kind (``note``, ``plan``, ``budget``, ``warning``)."""
    text: str
    """The note."""


class Totals(BaseModel):
    """Totals over a run."""

    model_config = ConfigDict(extra="forbid")

    turns: int = 0
    """Model calls made."""
    tool_calls: int = 0
    """Tool calls made."""
    input_tokens: int = 0
    """Input tokens, cache reads and writes included (sum of ``Usage.total_input_tokens``)."""
    output_tokens: int = 0
    """Output tokens."""
    duration_s: float = 0.0
    """Wall time of the run."""


class RunEnd(_Event):
    """The agent finished (or gave up on) the task."""

    event: Literal["run_end"] = "run_end"
    outcome: RunOutcome
    """solved: a submitted kernel passed; budget: out of turns/tokens/time."""
    best_speedup: float | None = None
    """Best speedup vs eager among passing kernels (GPU only)."""
    best_kernel_hash: str | None = None
    """Hash of the best passing kernel."""
    best_kernel_source: str | None = None
    """Source of the best passing kernel."""
    totals: Totals = Field(default_factory=Totals)
    """Run totals."""
    message: str = ""
    """Why the run ended."""


TraceEvent = Annotated[
    RunStart | ModelCall | ToolCall | ToolResult | Note | RunEnd, Field(discriminator="event")
]
"""Any trace event, tagged by ``event``."""

EVENT_ADAPTER: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)
"""Validates one decoded JSON object into the right event model."""


def dump_event(event: BaseModel) -> str:
    """Serialize an event to one JSON line (OTel aliases, no trailing newline)."""
    return event.model_dump_json(by_alias=True, exclude_none=False)


def parse_event(line: str) -> TraceEvent:
    """Validate one JSON line into an event; raises pydantic.ValidationError."""
    return EVENT_ADAPTER.validate_json(line)
