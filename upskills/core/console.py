"""The rich console every table is printed on: terminal width on a terminal, unbounded in a pipe.

Rich falls back to 80 columns when stdout is not a terminal, which folds task names and
paths in ``upskills traces stats | less`` or a CI log. Here a console that is not writing to a
terminal is as wide as its content (``COLUMNS``, when set, still wins).
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPE_WIDTH = 1000
"""Width used when the output is not a terminal: tables take their content's width."""


def make_console(stderr: bool = False) -> Console:
    """A Console for ``stdout`` (or ``stderr``) that never truncates tables in a pipe.

    Make it where it prints (not at import), so it sees the stream of the moment.
    """
    stream = sys.stderr if stderr else sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    width = None if is_tty or os.environ.get("COLUMNS") else PIPE_WIDTH
    return Console(stderr=stderr, width=width)
