"""Stale build locks of torch's extension builder, found and removed.

``torch.utils.cpp_extension.load_inline`` serialises the builds of one extension with a lock
file, ``<extensions root>/<name>/lock``: created with ``O_EXCL`` and held open while the build
runs, removed when it ends. A build killed mid-way (a check that ran past its timeout) leaves
the file behind, and every later load of that extension waits for it to vanish: forever, so
each later check of the same source runs into its own timeout. On the H200 (sixteenth device
session) a re-check's pre-build was stopped by its budget and the next two re-checks of
40_LayerNorm both timed out so, without a line of output.

A lock is stale when no live process holds it open. Only locks owned by this process's user are
judged: that user's processes are the ones whose open files this process can read. Except the
non-dumpable ones: the sandbox makes every candidate so, and a process of the same user cannot
read their ``/proc/<pid>/fd``. While another check's candidate of this user lives, no lock is
judged: on the H200 (eighteenth device session) eight checks ran at once, and each candidate,
blind to the others' descriptors, removed the lock of a build another was running; that build's
own removal then failed with ``FileNotFoundError`` and its check failed. Other non-dumpable
processes of the user (an ssh-agent) build nothing and are not waited for.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import time
from pathlib import Path

LOCK_NAME = "lock"
"""The file name torch's ``FileBaton`` uses in an extension's build directory."""


def extensions_root() -> Path:
    """Where ``load_inline`` builds: ``TORCH_EXTENSIONS_DIR``, else torch's default root."""
    configured = os.environ.get("TORCH_EXTENSIONS_DIR")
    if configured:
        return Path(configured)
    from torch.utils.cpp_extension import get_default_build_root

    return Path(get_default_build_root())


def source_extensions_root(source: str, root: Path | None = None) -> Path:
    """The build root of one candidate source's extensions: ``<root>/src-<hash>``.

    ``load_inline`` caches a build by extension name, not by source: two candidates that name
    their extension alike (every attempt of a session, and each variant an ablation builds from
    them) rebuild over each other in one folder, so a source judged again after another with
    the same name is built again, and a parallel pre-build of many such sources leaves only
    the last one built. A folder per source keeps each build: judged again, it is found.
    """
    base = extensions_root() if root is None else root
    return base / f"src-{hashlib.sha256(source.encode()).hexdigest()[:16]}"


BUILDS = "builds"
"""Under the sandbox's cache root: one build folder per candidate source, named by a token."""
REGISTRY = "build-registry"
"""Under the sandbox's cache root: per source (sha256 of its text), the token of its folder."""
_TOKEN = re.compile(r"[0-9a-f]{32}")


def private_build_root(source: str, sandbox: Path, uid: int, gid: int) -> Path:
    """As root: the build folder of one candidate source, which no other candidate can name.

    ``<sandbox>/builds/<token>``, owned by the sandbox user (``uid``, ``gid``: its candidate
    builds there). The token is random, kept in ``<sandbox>/build-registry/<sha256 of the
    source>`` (root's, mode 0700), so a later check of the same source finds its build, while
    ``builds`` is root's with mode 0711 (enter, not list): a candidate that knows another
    source exactly cannot compute where that source builds and plant a library or a compiled
    Triton kernel there (``src-<sha>`` folders, 2026-12-05, could be). Called in the candidate's
    child before it drops to the sandbox user, so the token is only ever in the memory of the
    process that checks this source.
    """
    registry, builds = sandbox / REGISTRY, sandbox / BUILDS
    own_folder(registry, 0o700)
    own_folder(builds, 0o711)
    entry = registry / hashlib.sha256(source.encode()).hexdigest()
    token = _read_token(entry)
    if token is None:
        fresh = entry.with_name(f"{entry.name}.{secrets.token_hex(8)}.tmp")  # one per caller
        fresh.write_text(secrets.token_hex(16))
        fresh.chmod(0o600)
        try:
            os.link(fresh, entry)  # the first of two checks of a new source to get here wins
        except FileExistsError:
            if _read_token(entry) is None:  # damaged (not a token): the source builds afresh
                os.replace(fresh, entry)
        finally:
            fresh.unlink(missing_ok=True)
        token = _read_token(entry)
        if token is None:
            raise OSError(f"unreadable build registry entry {entry}")
    folder = builds / token
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chown(folder, uid, gid)
    return folder


def own_folder(path: Path, mode: int) -> None:
    """Make ``path`` a real folder of this process's user, with ``mode``.

    A link or a file the sandbox user left in its place is removed first, and so is a folder
    another user made: nothing in it can be trusted (a registry entry and a build folder the
    sandbox user planted while the cache root was still its own, as it was before 2026-12-05,
    would hand a known source a library of its choosing). Such a folder is renamed aside
    first, atomically, so its owner cannot keep adding to what is then removed.
    """
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir() and path.stat().st_uid != os.geteuid():
        aside = path.with_name(f".{path.name}.untrusted.{secrets.token_hex(8)}")
        path.rename(aside)
        shutil.rmtree(aside, ignore_errors=True)
    path.mkdir(mode=mode, exist_ok=True)
    os.chown(path, os.geteuid(), os.getegid())
    path.chmod(mode)


def hand_over(folder: Path, uid: int, gid: int) -> None:
    """Give ``folder`` and everything under it to the sandbox user.

    A build made as root, for candidates that must take its lock and run ninja there. The tree
    is walked through folder descriptors and no link is followed (``os.fwalk``), so a link the
    sandbox user puts in place of a folder meanwhile cannot send the walk elsewhere.
    """
    for _, dirnames, filenames, dir_fd in os.fwalk(folder):
        for name in [*dirnames, *filenames]:
            os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
    os.chown(folder, uid, gid, follow_symlinks=False)


def _read_token(entry: Path) -> str | None:
    try:
        token = entry.read_text().strip()
    except FileNotFoundError:
        return None
    return token if _TOKEN.fullmatch(token) else None


def clear_stale_locks(root: Path | None = None, *, settle_s: float = 0.2) -> list[Path]:
    """Remove the build locks under ``root`` that no live process holds; return them.

    Looks two levels down (``<root>/<name>/lock``, torch's default ``<root>/<py_cu>/<name>/lock``
    and a source's own folder, ``<root>/src-<hash>/<name>/lock``). A lock is removed only if it
    is still there and still unheld ``settle_s`` later: a build that has just finished closes
    its lock a moment before removing it.
    """
    base = extensions_root() if root is None else root
    uid = os.getuid()
    locks = [p for p in _locks(base) if _owner(p) == uid]
    if not locks or not Path("/proc").is_dir():
        return []  # no /proc: who holds a file cannot be told, so nothing is judged stale
    held, hidden = _open_files(uid)
    unheld = [p for p in locks if not _held(p, held)]
    if not unheld or hidden:  # a process of this user hides its descriptors: it may hold one
        return []
    time.sleep(settle_s)
    held_now, hidden = _open_files(uid)
    if hidden:
        return []
    removed: list[Path] = []
    for path in unheld:
        if path.exists() and not _held(path, held_now):
            try:
                path.unlink()
            except OSError:  # gone meanwhile, or not ours to remove
                continue
            removed.append(path)
    return removed


def _locks(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [p for pattern in (f"*/{LOCK_NAME}", f"*/*/{LOCK_NAME}") for p in root.glob(pattern)]


def _owner(path: Path) -> int | None:
    try:
        return path.stat().st_uid
    except OSError:
        return None


def _held(path: Path, open_files: set[str]) -> bool:
    return str(path) in open_files or os.path.realpath(path) in open_files


def _open_files(uid: int) -> tuple[set[str], bool]:
    """The descriptors' targets readable in ``/proc/*/fd``, and whether a candidate hid its own.

    The second: another check's candidate of user ``uid`` lives. Candidates are non-dumpable,
    so a process of the same user cannot read their descriptors.
    """
    found: set[str] = set()
    hidden = False
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:  # another user's process, a non-dumpable one, or one that just exited
            hidden = hidden or _is_candidate_of(proc, uid)
            continue
        for fd in fds:
            try:
                found.add(os.readlink(fd))
            except OSError:
                continue
    return found, hidden


def _is_candidate_of(proc: Path, uid: int) -> bool:
    """Whether a process is a check's candidate running with ``uid`` among its user ids.

    A candidate is a child of the candidate zygote, ``python -m upskills.verify.sandbox <mode>
    candidate``. ``/proc/<pid>/status`` and ``cmdline`` are readable where the descriptors are
    not. False when the process has exited.
    """
    try:
        status = (proc / "status").read_text()
        argv = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if b"upskills.verify.sandbox" not in argv or b"candidate" not in argv:
        return False
    for line in status.splitlines():
        if line.startswith("Uid:"):
            return str(uid) in line.split()[1:]
    return False
