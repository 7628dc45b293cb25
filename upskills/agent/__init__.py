"""The tool-using agent: kernel tools, the agent loop, teach, external sessions, MCP server.

Importing this package loads no torch, triton or model SDK; the verifier and providers load
when a tool or a model is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from upskills._lazy import lazy_face

if TYPE_CHECKING:
    from upskills.agent.config import AgentConfig
    from upskills.agent.loop import extract_code_block, run_agent
    from upskills.agent.session import Session, SessionError, SessionState
    from upskills.agent.teach import teach
    from upskills.agent.toolbox import KernelToolbox, ToolOutcome, summarize_verdict
    from upskills.core.hashing import kernel_hash

__all__ = [
    "AgentConfig",
    "KernelToolbox",
    "Session",
    "SessionError",
    "SessionState",
    "ToolOutcome",
    "extract_code_block",
    "kernel_hash",
    "run_agent",
    "summarize_verdict",
    "teach",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "AgentConfig": "upskills.agent.config",
        "extract_code_block": "upskills.agent.loop",
        "run_agent": "upskills.agent.loop",
        "Session": "upskills.agent.session",
        "SessionError": "upskills.agent.session",
        "SessionState": "upskills.agent.session",
        "teach": "upskills.agent.teach",
        "KernelToolbox": "upskills.agent.toolbox",
        "ToolOutcome": "upskills.agent.toolbox",
        "kernel_hash": "upskills.core.hashing",
        "summarize_verdict": "upskills.agent.toolbox",
    },
)
