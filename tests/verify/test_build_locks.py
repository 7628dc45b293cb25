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


_HIDE_AND_HOLD = """
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0, as the sandbox makes candidates
if sys.argv[1] != "-":
    fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL)  # torch's FileBaton.try_acquire
print("held", flush=True)
time.sleep(60)
"""

_CLEAR = """
import importlib.util, json, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("build_locks", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps([str(p) for p in module.clear_stale_locks(Path(sys.argv[1]))]))
"""


def _nobody_python() -> tuple[str, object] | None:
    """An interpreter the user ``nobody`` can run, and a ``preexec_fn`` that becomes nobody."""
    import pwd
    import shutil

    if os.getuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return None

    def drop() -> None:
        os.setgroups([])
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)

    for python in (sys.executable, shutil.which("python3") or "python3", "/usr/bin/python3"):
        try:
            ran = subprocess.run([python, "-c", "pass"], preexec_fn=drop, cwd="/")
        except OSError:  # not executable by nobody (a Python under /root)
            continue
        if ran.returncode == 0:
            return python, drop
    return None


NOBODY = _nobody_python()


@pytest.mark.skipif(NOBODY is None, reason="needs root and a Python the user nobody can run")
def test_a_lock_held_by_another_checks_hidden_candidate_is_kept():
    """Candidates are non-dumpable, so a candidate cannot read another's ``/proc/<pid>/fd``.
    Eight checks at once on the H200 removed each other's live build locks so (every such
    build then failed with FileNotFoundError). While another check's candidate of the same
    user lives, no lock is judged; a non-dumpable process that is no candidate (an agent of
    the user's) does not stop a stale lock's removal."""
    import json
    import pwd
    import shutil
    import tempfile
    from pathlib import Path

    import upskills.verify.build_locks as build_locks

    assert NOBODY is not None
    python, drop = NOBODY
    entry = pwd.getpwnam("nobody")
    root = Path(tempfile.mkdtemp(prefix="upskills-locks-"))
    root.chmod(0o755)
    module = root / "build_locks.py"  # readable by nobody wherever the checkout is
    shutil.copy(build_locks.__file__, module)
    module.chmod(0o644)
    building, killed = root / "building_ext", root / "killed_ext"
    for d in (building, killed):
        d.mkdir()
        os.chown(d, entry.pw_uid, entry.pw_gid)
    stale = killed / "lock"
    stale.write_text("")  # a build of nobody's, killed mid-way
    os.chown(stale, entry.pw_uid, entry.pw_gid)

    def spawn(lock: str, *argv: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [python, "-c", _HIDE_AND_HOLD, lock, *argv],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=drop,  # type: ignore[arg-type]
            cwd="/",
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return proc

    def clear() -> list[str]:
        out = subprocess.run(
            [python, "-c", _CLEAR, str(root), str(module)],
            capture_output=True,
            text=True,
            preexec_fn=drop,  # type: ignore[arg-type]
            cwd="/",
            check=True,
        )
        return json.loads(out.stdout)

    candidate = spawn(str(building / "lock"), "upskills.verify.sandbox", "cuda", "candidate")
    agent = spawn("-")  # non-dumpable, holds nothing, no candidate
    try:
        assert clear() == []
        assert (building / "lock").exists(), "another check's live build lock was removed"
        assert stale.exists()
        _stop(candidate)
        (building / "lock").unlink()  # its build ended
        assert clear() == [str(stale)]  # the agent alone does not stop the removal
        assert not stale.exists()
    finally:
        for proc in (candidate, agent):
            if proc.poll() is None:
                _stop(proc)
        shutil.rmtree(root)
