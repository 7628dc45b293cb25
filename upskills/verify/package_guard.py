"""upskills' own files, writable by a candidate of the judge's user: snapshot, compare, put back.

A CUDA candidate runs as the judge's user (CUDA IPC does not cross users), and so does any
candidate where the verifier does not run as root. In a checkout or a user install the
package's sources are that user's files: a candidate that rewrote ``upskills/verify/compare.py``
could not change its own verdict (the judge's processes imported it before the candidate ran),
but every verifier started later would load the rewritten judge. So the verifier keeps the
package's files (sources and data) in memory, compares the tree after each candidate, writes
back what changed or disappeared, removes what was added, and fails the verdict (guard
``package_files``). Bytecode caches (``__pycache__``) are written by the judge's own imports
too, so there a new or changed file is only removed (Python recompiles it from the source),
never blamed: a planted ``.pyc`` whose header matches an untouched source is gone before
anything can import it.

What this does not cover: the rest of the Python environment (torch, triton, site-packages)
is as writable; only a candidate user that cannot write the judge's files closes that
(``docs/design/verifier.md``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

BYTECODE_DIR = "__pycache__"


def package_root() -> Path:
    """The folder of the ``upskills`` package."""
    return Path(__file__).resolve().parents[1]


def _scan(root: Path) -> dict[str, tuple[int, int]]:
    """Every file below ``root``: relative path -> (size, mtime in ns)."""
    out: dict[str, tuple[int, int]] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


def _is_bytecode(rel: str) -> bool:
    return BYTECODE_DIR in Path(rel).parts


@dataclass
class PackageSnapshot:
    """The package's files as the verifier last saw them between candidates."""

    root: Path = field(default_factory=package_root)
    stats: dict[str, tuple[int, int]] = field(default_factory=dict[str, tuple[int, int]])
    content: dict[str, bytes] = field(default_factory=dict[str, bytes])
    unrestored: set[str] = field(default_factory=set[str])
    """Files a put-back failed on: their content here is not replaced by what is on disk."""

    def refresh(self) -> None:
        """Take the tree as it is now (before a candidate runs); re-read only what changed."""
        now = _scan(self.root)
        for rel, stat in now.items():
            if _is_bytecode(rel) or rel in self.unrestored or self.stats.get(rel) == stat:
                continue
            try:
                self.content[rel] = (self.root / rel).read_bytes()
            except OSError:
                now.pop(rel, None)
        for rel in set(self.content) - set(now) - self.unrestored:
            del self.content[rel]
        self.stats = now

    def put_back(self) -> list[str]:
        """Undo what changed since :meth:`refresh`; the non-bytecode files that were touched."""
        now = _scan(self.root)
        touched: list[str] = []
        for rel in sorted(set(now) | set(self.stats)):
            if now.get(rel) == self.stats.get(rel):
                continue
            try:
                self._undo(rel, rel in now)
                self.unrestored.discard(rel)
            except OSError as exc:
                if _is_bytecode(rel):
                    continue
                self.unrestored.add(rel)  # its good content stays the reference
                rel = f"{rel} (could not be put back: {exc.strerror})"
            if not _is_bytecode(rel):
                touched.append(rel)
        self.refresh()
        return touched

    def _undo(self, rel: str, exists: bool) -> None:
        path = self.root / rel
        if _is_bytecode(rel):
            if exists:  # added or rewritten: Python makes it again from the source
                path.unlink(missing_ok=True)
            return
        if path.parent.is_dir() and not os.access(path.parent, os.W_OK):
            path.parent.chmod(0o755)  # a candidate of this user can take the write bit away
        # unlinked first: never written through a planted link, nor stopped by a file's mode
        path.unlink(missing_ok=True)
        if rel in self.content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(self.content[rel])
