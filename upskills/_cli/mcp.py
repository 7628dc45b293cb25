"""``upskills mcp``: serve the kernel tools to an MCP client over stdio."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(context_settings={"auto_envvar_prefix": "UPSKILLS"})
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("traces") / "mcp",
    show_default=True,
    help="Folder for session folders (one per start_session).",
)
@click.option("--device", default="auto", show_default=True, help="Verifier device: auto|cpu|cuda.")
@click.option(
    "--agent-name",
    default="mcp-client",
    show_default=True,
    help="Agent name recorded when start_session gives none.",
)
@click.option("--seeds", type=int, default=None, help="Seeds per variant (default: verifier's).")
@click.option(
    "--ceilings",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Ceilings JSON for the profile tool (default: measured on CUDA). Env UPSKILLS_CEILINGS.",
)
def cli(out: Path, device: str, agent_name: str, seeds: int | None, ceilings: Path | None) -> None:
    """Serve start_session, the kernel tools (profile included), note and end_session.

    Example client configuration: command ``upskills``, arguments ``mcp --out traces/mcp``.
    """
    from upskills.agent.mcp_server import serve

    serve(out, device=device, agent_name=agent_name, seeds=seeds, ceilings=ceilings)
