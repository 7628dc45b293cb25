"""Baseline timings (eager PyTorch and ``torch.compile``) and their cache.

A baseline is keyed by (GPU name, torch version, task hash): the same reference on the same
GPU and torch takes the same time, so it is measured once. Lookups consult the data shipped
with the package (``upskills/verify/data/baselines.json``) first, then the user's cache file
(``$UPSKILLS_CACHE_DIR``, else ``$XDG_CACHE_HOME/upskills``, else ``~/.cache/upskills``, file
``baselines.json``). :func:`measure_baselines` runs in a verifier child on the GPU and times
both baselines exactly as candidates are timed (:func:`upskills.verify.timing.time_cuda`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from upskills.verify.verdict import FlushMode, Timing


class BaselineEntry(BaseModel):
    """Baseline timings of one task's main variant on one GPU and torch version."""

    model_config = ConfigDict(extra="forbid")

    task: str
    """Task name."""
    task_hash: str
    """Task content hash (``Task.hash``)."""
    gpu: str
    """GPU name as torch reports it."""
    torch: str
    """torch version."""
    variant: str = "main"
    """The variant timed."""
    eager: Timing | None = None
    """The reference ``Model`` run eagerly."""
    compile: Timing | None = None
    """The reference under ``torch.compile`` (mode default)."""
    error: str = ""
    """Why a baseline is missing (e.g. torch.compile failed)."""
    measured_at: str = ""
    """UTC time of the measurement (ISO 8601)."""
    flush: FlushMode = "write"
    """How L2 was flushed before each timed call (part of the cache key when ``read``)."""


class BaselineFile(BaseModel):
    """A file of baseline entries keyed by :func:`baseline_key`."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this file's layout."""
    entries: dict[str, BaselineEntry] = Field(default_factory=dict)
    """``gpu|torch|task_hash`` -> entry."""


def baseline_key(gpu: str, torch_version: str, task_hash: str, flush: FlushMode = "write") -> str:
    """The cache key of a baseline.

    The write flush's keys are those from before there was a choice, so the entries already
    cached stay valid; a read flush's carry ``|flush=read``.
    """
    key = f"{gpu}|{torch_version}|{task_hash}"
    return key if flush == "write" else f"{key}|flush={flush}"


def user_cache_path() -> Path:
    """Where measured baselines are cached for this user."""
    root = os.environ.get("UPSKILLS_CACHE_DIR")
    if root:
        return Path(root) / "baselines.json"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "upskills" / "baselines.json"


def read_baseline_file(path: Path) -> BaselineFile:
    """Read a baseline file; a missing file is empty, a malformed one an error naming it."""
    if not path.exists():
        return BaselineFile()
    try:
        return BaselineFile.model_validate_json(path.read_text())
    except (ValidationError, ValueError) as exc:
        raise ValueError(f"{path}: not a valid baselines file: {exc}") from exc


def _package_file() -> Path | None:
    """Where the package's baselines file lives on disk (None inside a zip)."""
    ref = resources.files("upskills.verify") / "data" / "baselines.json"
    return ref if isinstance(ref, Path) else None


def shipped_path() -> Path | None:
    """The package's baselines file, when it is a file on disk."""
    path = _package_file()
    return path if path is not None and path.is_file() else None


def shipped_baselines(text: str | None = None) -> BaselineFile:
    """The baselines shipped with the package (``text``: that file's text as read earlier)."""
    if text is None:
        path = shipped_path()
        text = path.read_text() if path is not None else ""
    return BaselineFile.model_validate_json(text) if text else BaselineFile()


@dataclass
class CacheSnapshot:
    """Both baseline files as a judge read them before a candidate ran.

    Both are files the candidate's process can write (same user; the package's own file too,
    in a checkout), so a check reads its speedup baselines from this snapshot, not from disk.
    """

    shipped: str
    """Text of the package's baselines file ("" when there is none)."""
    user: BaselineFile
    """The user cache (empty when missing or malformed)."""


def lookup_baseline(
    gpu: str,
    torch_version: str,
    task_hash: str,
    cached: CacheSnapshot | None = None,
    flush: FlushMode = "write",
) -> BaselineEntry | None:
    """The shipped entry for this key, else the user-cached one, else None.

    ``cached``: both files as a snapshot took them earlier, read instead of the files now.
    ``flush``: the L2 flush the baselines must have been timed with.
    """
    key = baseline_key(gpu, torch_version, task_hash, flush)
    entry = shipped_baselines(cached.shipped if cached else None).entries.get(key)
    if entry is not None:
        return entry
    if cached is not None:
        return cached.user.entries.get(key)
    try:
        return read_baseline_file(user_cache_path()).entries.get(key)
    except ValueError:
        return None


def _user_cache() -> BaselineFile:
    """The user cache as it is now (empty when missing or malformed)."""
    try:
        return read_baseline_file(user_cache_path())
    except ValueError:
        return BaselineFile()


def snapshot_cache() -> CacheSnapshot:
    """Both baseline files as they are now."""
    path = shipped_path()
    return CacheSnapshot(path.read_text() if path is not None else "", _user_cache())


def restore_rewritten(before: CacheSnapshot) -> list[str]:
    """Put back the user-cache entries that changed since ``before``; returns their keys.

    Judges only add entries to the user cache (:func:`store_baseline` runs on a miss), so an
    entry that changed while a candidate ran was changed by the candidate. Entries added since
    are kept (another judge may have measured them): a judge reads its snapshot, not them, for
    the check at hand and re-measures its own misses. The package's own file is put back with
    the rest of the package (:mod:`upskills.verify.package_guard`).
    """
    put_back: list[str] = []
    if before.user.entries:
        now = _user_cache()
        changed = [k for k, e in before.user.entries.items() if now.entries.get(k) != e]
        if changed:
            for key in changed:
                now.entries[key] = before.user.entries[key]
            _write(user_cache_path(), now)
        put_back += changed
    return put_back


def store_baseline(entry: BaselineEntry, path: Path | None = None) -> Path:
    """Add ``entry`` to a baselines file (the user cache by default), atomically."""
    path = path or user_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = read_baseline_file(path)
    except ValueError:
        data = BaselineFile()
    # a judge stores only on a miss: an entry that was already in its snapshot is not
    # rewritten by judges (two judges missing the same key at once is the one race)
    data.entries[baseline_key(entry.gpu, entry.torch, entry.task_hash, entry.flush)] = entry
    _write(path, data)
    return path


def _write(path: Path, data: BaselineFile) -> None:
    """Replace ``path`` with ``data`` atomically."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def measure_baselines(payload: dict[str, Any]) -> dict[str, Any]:
    """Time the reference eagerly and under ``torch.compile`` (runs in a CUDA child).

    Args:
        payload: ``task`` (a Task dict), ``variant`` (the main variant's name) and optionally
            ``flush`` (``write`` or ``read``: :data:`upskills.verify.verdict.FlushMode`).

    Returns:
        A :class:`BaselineEntry` as a dict.
    """
    import torch

    from upskills.tasks.model import Task
    from upskills.tasks.runtime import build_init_inputs, build_inputs, build_module, load_reference
    from upskills.verify.timing import time_cuda

    task = Task.model_validate(payload["task"])
    variant = payload["variant"]
    flush = payload.get("flush", "write")
    module = load_reference(task, variant)
    init_inputs = build_init_inputs(module, "cuda", 0)
    model = build_module(module.Model, init_inputs, "cuda", 0)
    inputs = build_inputs(module, "cuda", 0)
    entry = BaselineEntry(
        task=task.name,
        task_hash=task.hash,
        gpu=torch.cuda.get_device_name(),
        torch=torch.__version__,
        variant=variant,
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        flush=flush,
    )
    with torch.no_grad():
        entry.eager = time_cuda(lambda: model(*inputs), flush_mode=flush)[0]
        try:
            compiled = torch.compile(model)  # pyright: ignore[reportUnknownMemberType]
            entry.compile = time_cuda(lambda: compiled(*inputs), warmup=5, flush_mode=flush)[0]
        except Exception as exc:  # noqa: BLE001 - a compile failure loses one baseline only
            entry.error = f"torch.compile failed: {type(exc).__name__}: {str(exc)[:500]}"
    return entry.model_dump(mode="json")
