"""AgentConfig: budgets, device, sampling parameters and skills mode of one agent run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from upskills.llm.base import GenParams


class AgentConfig(BaseModel):
    """How an agent run is budgeted and what it sees (teacher and student runs alike)."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=30, ge=1)
    """Most model calls in one run; the run ends with outcome ``budget`` when reached."""
    max_tokens: int | None = Field(default=2_000_000, ge=1)
    """Most tokens (input, cache and output, summed over all calls); None for no limit."""
    max_wall_s: float | None = Field(default=3600.0, gt=0)
    """Most wall-clock seconds for the run; None for no limit."""
    device: str = "auto"
    """Where the verifier runs kernels: ``auto``, ``cpu`` (Triton interpreter) or ``cuda``."""
    params: GenParams = Field(default_factory=GenParams)
    """Sampling parameters of every model call."""
    skills_mode: Literal["none", "inline", "on_demand"] = "none"
    """How attached skills reach the model: not at all, whole in the system prompt, or on demand."""
    compact_skills: bool = False
    """Inline the compact variant of each skill (for small students)."""
    role: Literal["teacher", "student"] = "teacher"
    """Who the run's model is, as recorded in the trace."""
    check_seeds: int | None = None
    """Seeds per variant for the check tools; None means the verifier's default."""
    check_timeout_s: float | None = None
    """Time limit of one verdict in seconds; None means the verifier's default."""
    agent_name: str = "upskills-agent"
    """Agent name recorded in the trace."""
    submit_on_pass: bool = False
    """A limit for students: the first kernel a check passes is submitted at once (a teacher
    goes on to benchmark and improve it)."""
