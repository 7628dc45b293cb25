"""The ``upskills`` command: a click group that loads each command module on first use."""

from __future__ import annotations

import importlib

import click

from upskills import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "tasks": ("upskills._cli.tasks", "List and show kernel tasks."),
    "check": ("upskills._cli.check", "Verify a candidate kernel against a task."),
    "teach": ("upskills._cli.teach", "Run a teacher model on tasks, writing traces."),
    "traces": ("upskills._cli.traces", "List, show, summarise, export and import traces."),
    "session": ("upskills._cli.session", "Drive a traced session as an external teacher."),
    "mcp": ("upskills._cli.mcp", "Serve the teacher tools over MCP (stdio)."),
    "distill": ("upskills._cli.distill", "Distill traces into skill packs and test cases."),
    "refine": ("upskills._cli.refine", "Refine a skill pack from its students' failures."),
    "skills": ("upskills._cli.skills", "List, show, validate, diff and install skill packs."),
    "cases": ("upskills._cli.cases", "List, show and check test cases."),
    "lift": ("upskills._cli.lift", "Measure the lift of skills on student models."),
    "report": ("upskills._cli.report", "Write the report of a lift run."),
    "demo": ("upskills._cli.demo", "Run the whole pipeline on the embedded default, offline."),
}
"""Command name -> (module defining a click command named ``cli``, one-line help)."""


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked (keeps ``--help`` fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """All known command names, sorted."""
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import the module for ``cmd_name`` and return its ``cli`` command."""
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[cmd_name][0])
        command = module.cli
        command.name = cmd_name
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List commands with their help lines without importing them."""
        rows = [(name, help_) for name, (_, help_) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"auto_envvar_prefix": "UPSKILLS"})
@click.version_option(__version__, prog_name="upskills")
def main() -> None:
    """upskills: distill GPU-kernel skills from teacher traces; measure their lift on students."""


if __name__ == "__main__":
    main()
