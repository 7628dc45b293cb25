"""A zygote's files live in its parent's folder, so closing the parent removes them all.

A zygote is stopped with SIGKILL (``Zygote.close``), so it never removes its own jobs'
folder; until 2026-12-06 that folder was made in the temp folder and every check left two
empty ``upskills-*-jobs-*`` folders there (1100 on the development machine).
"""

from __future__ import annotations

from pathlib import Path

from upskills.verify.sandbox import Zygote


def test_a_closed_zygote_leaves_no_folder_behind():
    zygote = Zygote("cpu", "judge")
    folder = Path(zygote._tmp.name)  # pyright: ignore[reportPrivateUsage]
    try:
        zygote.pid()  # started: its jobs' folder is made before it says it is ready
        jobs = list(folder.glob("upskills-judge-jobs-*"))
        assert len(jobs) == 1 and jobs[0].is_dir(), sorted(p.name for p in folder.iterdir())
    finally:
        zygote.close()
    assert not folder.exists()
