"""An MCP stdio server exposing the kernel tools to any MCP client (Claude Code, an IDE agent).

The server is a thin shell over ``Session``: ``start_session`` creates a session folder under
the output folder, the kernel tools act on it, ``end_session`` writes ``run_end``. The traces are
the same as those of ``upskills session``. One session is open at a time per server process.
Verifier calls run in a worker thread so the server keeps answering while a kernel is checked.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from upskills.agent.session import Session, SessionError
from upskills.tasks import TaskError

INSTRUCTIONS = (
    "Tools to write and verify GPU kernels for a PyTorch reference task, traced for upskills. "
    "Call start_session(task) first, then write_kernel/check/benchmark/profile, then submit, then "
    "end_session. A kernel is a Python module defining class ModelNew (same signatures as the "
    "reference Model) that launches its own Triton or CUDA kernels."
)


def _server_classes() -> tuple[Any, type[Exception]]:
    """The server class and the exception whose message reaches the client (mcp 2.x or 1.x)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # mcp 1.x
        try:
            from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore
            from mcp.server.fastmcp.exceptions import ToolError  # type: ignore
        except ImportError as exc:
            raise ImportError(
                "the MCP server needs the mcp package: pip install 'upskills[mcp]'"
            ) from exc
    return MCPServer, ToolError


class SessionHost:
    """Holds the open session and a warm verifier for the server's tools."""

    def __init__(
        self,
        out_dir: str | Path,
        *,
        device: str = "auto",
        agent_name: str = "mcp-client",
        seeds: int | None = None,
        ceilings: str | Path | None = None,
    ):
        self.out_dir = Path(out_dir)
        self.ceilings = ceilings
        self.device = device
        self.agent_name = agent_name
        self.seeds = seeds
        self.session: Session | None = None
        self._verifier: Any = None

    def start(
        self, task: str, agent_name: str | None, model: str | None, provider: str | None
    ) -> str:
        """Start a session on ``task``; returns the session folder and the task description."""
        if self.session is not None and not self.session.state.ended:
            raise SessionError(
                f"a session is open in {self.session.folder}; call end_session first"
            )
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        from upskills.tasks import load_task

        loaded = load_task(task)
        folder = self.out_dir / f"{loaded.name}-{stamp}-{secrets.token_hex(3)}"
        self.session = Session.start(
            loaded,
            folder,
            agent_name=agent_name or self.agent_name,
            provider=provider,
            model=model,
            device=self.device,
        )
        return f"session folder: {folder}\n\n" + self.call("read_task", {})

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Run a kernel tool in the open session; a tool error raises (MCP marks it isError)."""
        session = self._open()
        if tool in ("check", "benchmark", "profile", "submit") and self._verifier is None:
            from upskills.verify import CheckOptions, Verifier

            options = CheckOptions(seeds=self.seeds) if self.seeds else None
            self._verifier = Verifier(device=self.device, options=options)
        outcome = session.call(tool, arguments, verifier=self._verifier, ceilings=self.ceilings)
        if outcome.error is not None:
            raise SessionError(outcome.error)
        return outcome.output

    def note(self, text: str) -> str:
        """Add a note to the open session's trace."""
        self._open().note(text)
        return "noted"

    def end(self, outcome: str | None) -> str:
        """End the open session; returns a one-line summary."""
        session = self._open()
        end = session.end(outcome)  # type: ignore[arg-type]
        best = end.best_kernel_hash or "none"
        return (
            f"session ended: {end.outcome}; best passing kernel {best}; trace {session.trace_path}"
        )

    def close(self) -> None:
        """Close the verifier."""
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None

    def _open(self) -> Session:
        if self.session is None:
            raise SessionError("no session: call start_session(task) first")
        if self.session.state.ended:
            raise SessionError("the session has ended: call start_session(task) for a new one")
        return self.session


def build_server(host: SessionHost) -> Any:
    """An MCP server whose tools act on ``host``'s session."""
    import anyio.to_thread

    server_class, tool_error = _server_classes()
    server = server_class("upskills", instructions=INSTRUCTIONS)

    def guarded(fn: Any, *args: Any) -> str:
        try:
            return fn(*args)
        except (SessionError, TaskError, FileNotFoundError, ValueError) as exc:
            raise tool_error(str(exc)) from exc

    async def run(fn: Any, *args: Any) -> str:
        return await anyio.to_thread.run_sync(guarded, fn, *args)

    @server.tool()
    async def start_session(
        task: str,
        agent_name: str | None = None,
        model: str | None = None,
        provider: str | None = None,
    ) -> str:
        """Start a traced session on a task (a built-in name such as softmax_rows, or a path)."""
        return await run(host.start, task, agent_name, model, provider)

    @server.tool()
    async def read_task() -> str:
        """The task: statement, PyTorch reference source, shape variants, hardware."""
        return await run(host.call, "read_task", {})

    @server.tool()
    async def write_kernel(source: str) -> str:
        """Store the full source of the candidate module (class ModelNew) as the current kernel."""
        return await run(host.call, "write_kernel", {"source": source})

    @server.tool()
    async def check(source: str | None = None) -> str:
        """Check correctness of the current kernel (or of `source`) on all variants; no timing."""
        return await run(host.call, "check", {"source": source} if source else {})

    @server.tool()
    async def benchmark(source: str | None = None) -> str:
        """Correctness, then GPU timing and speedups vs eager and torch.compile."""
        return await run(host.call, "benchmark", {"source": source} if source else {})

    @server.tool()
    async def profile(source: str | None = None) -> str:
        """GPU time vs the roofline (bandwidth/FLOP share, floor), plus ncu counters if present."""
        return await run(host.call, "profile", {"source": source} if source else {})

    @server.tool()
    async def submit() -> str:
        """Final check of the current kernel; then call end_session."""
        return await run(host.call, "submit", {})

    @server.tool()
    async def note(text: str) -> str:
        """Record a note (a plan, an observation) in the session's trace."""
        return await run(host.note, text)

    @server.tool()
    async def end_session(outcome: str | None = None) -> str:
        """End the session (outcome defaults to solved if the submitted kernel passed)."""
        return await run(host.end, outcome)

    return server


def serve(
    out_dir: str | Path,
    *,
    device: str = "auto",
    agent_name: str = "mcp-client",
    seeds: int | None = None,
    ceilings: str | Path | None = None,
) -> None:
    """Serve the tools over stdio until the client disconnects."""
    host = SessionHost(
        out_dir, device=device, agent_name=agent_name, seeds=seeds, ceilings=ceilings
    )
    try:
        build_server(host).run("stdio")
    finally:
        host.close()
