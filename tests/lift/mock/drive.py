"""Run the ``upskills`` CLI with the ``replay`` test provider registered (tests only)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import replay  # noqa: E402

from upskills._cli.main import main  # noqa: E402
from upskills.llm import register_provider  # noqa: E402

register_provider("replay", replay.provider)

if __name__ == "__main__":
    main()
