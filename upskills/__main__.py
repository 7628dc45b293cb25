"""``python -m upskills``: the same as the ``upskills`` command."""

from upskills._cli.main import main

main(prog_name="upskills")
