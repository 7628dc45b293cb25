"""Each candidate source's compile caches in a folder no other candidate can name.

As root with a sandbox user, a check's child asks ``private_build_root`` for its source's folder
before it drops to that user. The tests below stand in for a hostile candidate: a child process
that has dropped to the sandbox user and tries to find or fill another source's folder.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from upskills.verify.build_locks import BUILDS, REGISTRY, private_build_root
from upskills.verify.sandbox import sandbox_ids

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or sandbox_ids() is None,
    reason="needs root and a sandbox user to drop to",
)

SOURCE_A = "import torch\n# kernel A\n"
SOURCE_B = "import torch\n# kernel B\n"


@pytest.fixture
def sandbox() -> Iterator[Path]:
    """A cache root the sandbox user can enter, as ``/tmp/upskills-sandbox-0`` is."""
    root = Path(tempfile.mkdtemp(prefix="upskills-test-sandbox-", dir="/tmp"))
    root.chmod(0o711)
    yield root
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def _as_sandbox_user(action: Callable[[], None]) -> int:
    """Run ``action`` in a child that dropped to the sandbox user: 0 if it raised nothing, 13
    if it was refused (``PermissionError``), 1 on any other error."""
    ids = sandbox_ids()
    assert ids is not None
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgid(ids[1])
            os.setuid(ids[0])
            action()
            code = 0
        except PermissionError:
            code = 13
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_source_finds_its_own_folder_again_and_another_source_gets_another(sandbox):
    ids = sandbox_ids()
    assert ids is not None
    a = private_build_root(SOURCE_A, sandbox, *ids)
    assert private_build_root(SOURCE_A, sandbox, *ids) == a  # a re-check finds its build
    b = private_build_root(SOURCE_B, sandbox, *ids)
    assert b != a and a.parent == b.parent == sandbox / BUILDS
    assert (a.stat().st_uid, b.stat().st_uid) == (ids[0], ids[0])  # its candidate builds there
    # the name is not computable from the source (the src-<sha256> folders were)
    digest = hashlib.sha256(SOURCE_A.encode()).hexdigest()
    assert digest[:16] not in a.name and len(a.name) == 32


def test_the_sandbox_user_cannot_list_the_builds_nor_read_the_registry(sandbox):
    ids = sandbox_ids()
    assert ids is not None
    a = private_build_root(SOURCE_A, sandbox, *ids)
    builds, registry = sandbox / BUILDS, sandbox / REGISTRY
    assert stat.S_IMODE(builds.stat().st_mode) == 0o711 and builds.stat().st_uid == 0
    assert stat.S_IMODE(registry.stat().st_mode) == 0o700 and registry.stat().st_uid == 0
    assert _as_sandbox_user(lambda: print(os.listdir(builds))) == 13
    assert _as_sandbox_user(lambda: print(os.listdir(registry))) == 13
    assert _as_sandbox_user(lambda: (builds / "planted").mkdir()) == 13
    # its own folder, by the name its check was given, it can use
    assert _as_sandbox_user(lambda: (a / "built.so").write_bytes(b"\x7fELF")) == 0


def test_a_link_left_in_place_of_the_builds_folder_is_replaced(sandbox, tmp_path):
    """A sandbox root from before this change was the sandbox user's: what it left there is
    not trusted."""
    ids = sandbox_ids()
    assert ids is not None
    elsewhere = tmp_path / "theirs"
    elsewhere.mkdir()
    (sandbox / BUILDS).symlink_to(elsewhere)
    folder = private_build_root(SOURCE_A, sandbox, *ids)
    assert not (sandbox / BUILDS).is_symlink() and folder.parent == sandbox / BUILDS
    assert not any(elsewhere.iterdir())


def test_callers_racing_for_a_new_source_all_get_one_folder(sandbox):
    """The pre-build runs a thread per kernel, and two checks of one new source may start
    together: the first entry written is the one every caller reads."""
    from concurrent.futures import ThreadPoolExecutor

    ids = sandbox_ids()
    assert ids is not None
    with ThreadPoolExecutor(8) as pool:
        folders = set(pool.map(lambda _: private_build_root(SOURCE_A, sandbox, *ids), range(32)))
    assert len(folders) == 1
    assert [p.name for p in (sandbox / REGISTRY).iterdir()] == [
        hashlib.sha256(SOURCE_A.encode()).hexdigest()
    ]  # no temporary entry left behind


def test_a_link_the_candidate_left_in_its_folder_does_not_give_it_the_target(sandbox, tmp_path):
    """The source's folder is the sandbox user's, so its next check (as root) must not follow
    what the last one left there: a ``triton`` link to a folder of root's would be handed to the
    sandbox user, and so would whatever a built tree links to."""
    from upskills.verify.build_locks import hand_over
    from upskills.verify.sandbox import _use_private_builds  # pyright: ignore[reportPrivateUsage]

    ids = sandbox_ids()
    assert ids is not None
    roots = tmp_path / "roots"
    roots.mkdir()
    (roots / "file").write_text("root's")
    folder = private_build_root(SOURCE_A, sandbox, *ids)
    (folder / "triton").symlink_to(roots)
    (folder / "built").mkdir()
    (folder / "built" / "out").symlink_to(roots / "file")
    _use_private_builds(SOURCE_A, sandbox)
    hand_over(folder, *ids)
    assert roots.stat().st_uid == 0 and (roots / "file").stat().st_uid == 0
    assert (folder / "built").stat().st_uid == ids[0]  # the real tree was handed over


def test_a_candidate_cannot_list_the_other_checks_folders(sandbox, monkeypatch):
    """Every check's folder (its candidate's file, written then imported) is the sandbox user's,
    as is every candidate: listing ``work`` would let one rewrite another check's file between
    its write and its import. ``work`` is root's and cannot be listed; a check's own folder,
    by the name it was given, is its candidate's."""
    from upskills.verify import sandbox as sb

    monkeypatch.setattr(sb, "sandbox_cache_root", lambda: sandbox)
    monkeypatch.setattr(sb, "sandbox_user_differs", lambda: True)
    root = sb._prepare_candidate_root()  # pyright: ignore[reportPrivateUsage]
    assert root == sandbox
    work = sandbox / "work"
    mine = Path(tempfile.mkdtemp(prefix="c", dir=work))
    ids = sandbox_ids()
    assert ids is not None
    os.chown(mine, *ids)  # as _fork_job does
    assert _as_sandbox_user(lambda: print(os.listdir(work))) == 13
    assert _as_sandbox_user(lambda: (mine / "candidate.py").write_text("x = 1\n")) == 0


def test_a_damaged_registry_entry_gives_the_source_a_new_folder(sandbox):
    ids = sandbox_ids()
    assert ids is not None
    first = private_build_root(SOURCE_A, sandbox, *ids)
    entry = sandbox / REGISTRY / hashlib.sha256(SOURCE_A.encode()).hexdigest()
    entry.write_text("not a token\n")
    again = private_build_root(SOURCE_A, sandbox, *ids)
    assert again != first and again.parent == first.parent  # built afresh, not refused
    assert private_build_root(SOURCE_A, sandbox, *ids) == again


def test_a_registry_the_sandbox_user_planted_before_the_root_was_roots_is_not_trusted(sandbox):
    # Before 2026-12-05 the cache root was the sandbox user's: a candidate could make the
    # registry itself, with an entry for a source it knows and a build folder of its own.
    ids = sandbox_ids()
    assert ids is not None
    os.chown(sandbox, *ids)
    token = "ab" * 16

    def plant() -> None:
        (sandbox / REGISTRY).mkdir()
        (sandbox / REGISTRY / hashlib.sha256(SOURCE_A.encode()).hexdigest()).write_text(token)
        (sandbox / BUILDS / token).mkdir(parents=True)
        (sandbox / BUILDS / token / "planted.so").write_text("not the source's build")

    assert _as_sandbox_user(plant) == 0
    os.chown(sandbox, 0, 0)  # the root taken over, as _prepare_candidate_root does
    folder = private_build_root(SOURCE_A, sandbox, *ids)
    assert folder.name != token and not (folder / "planted.so").exists()
    for sub in (REGISTRY, BUILDS):
        assert (sandbox / sub).stat().st_uid == os.geteuid()
