"""Stale build locks of torch's extension builder: a build killed mid-way must not make every
later load of that extension wait forever."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from torch.utils.file_baton import FileBaton

from upskills.verify.build_locks import clear_stale_locks

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")

_HOLD = """
import os, sys, time
from torch.utils.file_baton import FileBaton
baton = FileBaton(sys.argv[1])
assert baton.try_acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder(lock) -> subprocess.Popen[str]:
    """A process that takes the lock as torch's builder does and keeps it (a build running)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(lock)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def test_a_lock_left_by_a_killed_build_is_removed_and_one_held_is_kept(tmp_path):
    left = tmp_path / "py311_cpu" / "killed_ext" / "lock"
    held = tmp_path / "py311_cpu" / "building_ext" / "lock"
    left.parent.mkdir(parents=True)
    held.parent.mkdir(parents=True)
    killed = _holder(left)
    _stop(killed)  # a check's timeout: the build dies with its lock file in place
    building = _holder(held)
    try:
        assert left.exists()
        # what every later load does: wait while the file exists (here: a bounded wait)
        waiter = threading.Thread(target=FileBaton(str(left), wait_seconds=0.01).wait, daemon=True)
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive(), "a stale lock should block a load until it is removed"
        assert clear_stale_locks(tmp_path) == [left]
        waiter.join(5.0)
        assert not waiter.is_alive()
        assert held.exists(), "the lock of a build still running was removed"
    finally:
        _stop(building)


def test_no_locks_means_nothing_to_do(tmp_path):
    assert clear_stale_locks(tmp_path) == []
    assert clear_stale_locks(tmp_path / "missing") == []


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a file another user owns")
def test_a_lock_of_another_user_is_not_judged(tmp_path):
    """Whether another user's build holds it cannot be seen from here: left alone."""
    import pwd

    lock = tmp_path / "ext" / "lock"
    lock.parent.mkdir()
    lock.write_text("")
    nobody = pwd.getpwnam("nobody")
    os.chown(lock, nobody.pw_uid, nobody.pw_gid)
    assert clear_stale_locks(tmp_path) == []
    assert lock.exists()
