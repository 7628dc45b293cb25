"""The ``--executor`` / ``--ray-address`` options shared by the commands that judge in bulk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


def executor_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--executor`` and ``--ray-address`` (env UPSKILLS_EXECUTOR, UPSKILLS_RAY_ADDRESS)."""
    fn = click.option(
        "--ray-address",
        envvar="UPSKILLS_RAY_ADDRESS",
        default=None,
        help="Ray cluster: auto, HOST:PORT or ray://HOST:PORT (default: start a local one).",
    )(fn)
    return click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        envvar="UPSKILLS_EXECUTOR",
        default="local",
        show_default=True,
        help="Where verdicts run: warm workers on this host, or actors on a Ray cluster.",
    )(fn)


def executor_config(executor: str, ray_address: str | None, workers: int | None = None) -> Any:
    """The ExecutorConfig the options name (``--ray-address`` needs ``--executor ray``)."""
    from upskills.executor import ExecutorConfig

    if ray_address and executor != "ray":
        raise click.UsageError("--ray-address needs --executor ray")
    return ExecutorConfig(name=executor, workers=workers, ray_address=ray_address)  # type: ignore[arg-type]


def start_executor(config: Any, device: str) -> Any:
    """Start the executor, turning a missing extra or a cluster error into a CLI error."""
    from upskills.executor import ExecutorError, make_executor

    try:
        return make_executor(config, device)
    except ExecutorError as exc:
        raise click.ClickException(str(exc)) from exc
