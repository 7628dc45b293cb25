"""Finding and loading tasks: the built-in suite, single KernelBench files, whole folders.

Task files are read, never executed: :func:`upskills.tasks.source.inspect_source` checks them
with :mod:`ast`. Metadata comes from ``suite.yaml`` (the built-in suite, or any folder that has
one), from a sidecar ``<name>.yaml`` beside a file, or is inferred: the statement from the
module docstring or the file name, tags from the file name, dtypes from the source.
"""

from __future__ import annotations

import difflib
import functools
import re
from pathlib import Path

from upskills.tasks.meta import TaskMeta, read_sidecar, read_suite
from upskills.tasks.model import CATEGORIES, Task
from upskills.tasks.source import SourceInfo, TaskError, inspect_source

BUILTIN_DIR = Path(__file__).parent / "builtin"
"""Folder of the built-in task files and their ``suite.yaml``."""

SUITE_FILE = "suite.yaml"
"""Name of a folder's metadata file."""

_TAG_PATTERNS: tuple[tuple[str, str], ...] = (
    ("softmax", r"softmax"),
    ("attention", r"attention"),
    ("gemm", r"matmul|matrix|gemm|gemv|bmm|linear"),
    ("conv", r"conv"),
    ("norm", r"norm"),
    ("loss", r"loss|cross_?entropy"),
    ("reduction", r"reduction|argmax|argmin|loss|cross_?entropy"),
    ("scan", r"cumsum|cumprod|scan"),
    ("elementwise", r"relu|gelu|elu|sigmoid|tanh|swish|silu|softplus|softsign|mish|scalar"),
    ("transpose", r"transpose|permute"),
    ("copy", r"copy|cast"),
    ("gather", r"embedding|gather"),
    ("atomics", r"scatter|histogram|bincount"),
)
"""Tag -> regex over the lower-cased file stem (KernelBench naming: ``23_Softmax``)."""


def infer_tags(stem: str) -> list[str]:
    """Category tags suggested by a problem's file name, in ``CATEGORIES`` order.

    ``"47_Sum_reduction_over_a_dimension"`` -> ``["reduction"]``; ``"23_Softmax"`` ->
    ``["softmax"]``. A multiplication by a scalar is elementwise, not a GEMM, and a GEMM
    with transposed operands is not a transpose task.
    """
    name = stem.lower()
    tags = {tag for tag, pattern in _TAG_PATTERNS if re.search(pattern, name)}
    if "scalar" in name:
        tags.discard("gemm")
    if "gemm" in tags:
        tags.discard("transpose")
    return [t for t in CATEGORIES if t in tags]


def natural_key(name: str) -> list[int | str]:
    """Sort key that orders ``2_x`` before ``10_x`` (numbers compared as numbers)."""
    parts = re.split(r"(\d+)", name)
    return [int(p) if p.isdigit() else p.lower() for p in parts]


@functools.cache
def _builtin_meta() -> dict[str, TaskMeta]:
    return read_suite(BUILTIN_DIR / SUITE_FILE)


def builtin_names() -> list[str]:
    """Names of the built-in tasks, in suite order."""
    return list(_builtin_meta())


def builtin_tasks() -> list[Task]:
    """All built-in tasks, in suite order.

    Raises:
        TaskError: the packaged suite is inconsistent (a file without an entry or the reverse).
    """
    meta = _builtin_meta()
    files = {p.stem for p in BUILTIN_DIR.glob("*.py") if p.name != "__init__.py"}
    extra = sorted(files - set(meta))
    if extra:
        raise TaskError(f"task files without a suite entry: {', '.join(extra)}", BUILTIN_DIR)
    return [_load_builtin(name) for name in meta]


def _load_builtin(name: str) -> Task:
    path = BUILTIN_DIR / f"{name}.py"
    if not path.is_file():
        raise TaskError(f"suite entry {name!r} has no file {path.name}", BUILTIN_DIR / SUITE_FILE)
    return _make_task(path, _builtin_meta()[name], origin="builtin")


def load_task(ref: str | Path) -> Task:
    """Load a task by built-in name or from a KernelBench-format ``.py`` file.

    Args:
        ref: a built-in name (``softmax_rows``) or a path to a problem file; a sidecar
            ``<name>.yaml`` beside the file, if present, supplies metadata and variants.

    Returns:
        The task.

    Raises:
        TaskError: unknown name, missing file, or a malformed file (naming file and line).
    """
    text = str(ref)
    is_path = isinstance(ref, Path) or text.endswith(".py") or "/" in text or "\\" in text
    if not is_path and text in _builtin_meta():
        return _load_builtin(text)
    path = Path(ref)
    if is_path or path.is_file():
        return load_file(path)
    close = difflib.get_close_matches(text, builtin_names(), n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise TaskError(
        f"unknown task {text!r}: not a built-in task name nor a .py file.{hint} "
        "Run `upskills tasks list` to see the built-in tasks."
    )


def load_file(path: str | Path, meta: TaskMeta | None = None) -> Task:
    """Load one KernelBench-format problem file.

    Args:
        path: the ``.py`` file.
        meta: metadata to use; by default the sidecar ``<stem>.yaml`` if present, else the
            file's entry in a ``suite.yaml`` beside it, else inferred.

    Raises:
        TaskError: the file is missing, not ``.py``, or malformed.
    """
    path = Path(path)
    if path.suffix != ".py":
        raise TaskError("a task file must be a Python (.py) file", path)
    if not path.is_file():
        raise TaskError("no such task file", path)
    if meta is None:
        meta = _file_meta(path)
    return _make_task(path, meta, origin=str(path))


def _file_meta(path: Path) -> TaskMeta:
    """Metadata for a file loaded on its own: sidecar, else its folder's suite entry."""
    sidecar = path.with_suffix(".yaml")
    if sidecar.is_file():
        return read_sidecar(sidecar)
    suite_path = path.parent / SUITE_FILE
    if suite_path.is_file():
        builtin = path.resolve().parent == BUILTIN_DIR.resolve()
        suite = _builtin_meta() if builtin else read_suite(suite_path)
        if path.stem in suite:
            return suite[path.stem]
    return TaskMeta()


def load_folder(path: str | Path) -> list[Task]:
    """Load every ``*.py`` problem file of a folder, in natural order (``2_`` before ``10_``).

    A KernelBench ``level1`` checkout loads unchanged (one ``default`` variant per task).
    Metadata comes from the folder's ``suite.yaml`` if any, else each file's sidecar.

    Args:
        path: the folder (not searched recursively; ``__init__.py`` is skipped).

    Raises:
        TaskError: not a folder, no task files, or malformed files (every bad file listed).
    """
    folder = Path(path)
    if not folder.is_dir():
        raise TaskError("not a folder of task files", folder)
    suite = read_suite(folder / SUITE_FILE) if (folder / SUITE_FILE).is_file() else {}
    files = sorted(
        (p for p in folder.glob("*.py") if p.name != "__init__.py"),
        key=lambda p: natural_key(p.name),
    )
    if not files:
        raise TaskError("no *.py task files in this folder", folder)
    missing = sorted(set(suite) - {p.stem for p in files})
    if missing:
        raise TaskError(f"entries without a .py file: {', '.join(missing)}", folder / SUITE_FILE)
    tasks: list[Task] = []
    errors: list[TaskError] = []
    for file in files:
        try:
            if file.stem in suite and file.with_suffix(".yaml").is_file():
                raise TaskError(
                    f"metadata given twice: in {SUITE_FILE} and in {file.stem}.yaml", file
                )
            tasks.append(load_file(file, suite.get(file.stem)))
        except TaskError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        listing = "\n".join(f"  {e}" for e in errors)
        raise TaskError(f"{len(errors)} malformed task files:\n{listing}", folder)
    return tasks


def _make_task(path: Path, meta: TaskMeta, origin: str) -> Task:
    """Build a Task from a file and its metadata, checking the variants against the source."""
    source = path.read_text(encoding="utf-8")
    info = inspect_source(source, path)
    for variant in meta.variants:
        unknown = sorted(set(variant.globals) - set(info.globals))
        if unknown:
            raise TaskError(
                f"variant {variant.name!r} re-binds {', '.join(unknown)}, which the module "
                f"does not define at top level (defined: {', '.join(info.globals) or 'none'})",
                path,
            )
    dtypes = meta.dtypes or _default_dtypes(info)
    return Task(
        name=path.stem,
        statement=meta.statement or _default_statement(path.stem, info, dtypes),
        tags=meta.tags if meta.tags is not None else infer_tags(path.stem),
        dtypes=dtypes,
        source=source,
        variants=list(meta.variants),
        origin=origin,
        atol=meta.atol,
        rtol=meta.rtol,
        domains=list(meta.domains),
        ranges=dict(meta.ranges),
    )


_FLOAT_DTYPES = {"float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"}


def _default_dtypes(info: SourceInfo) -> list[str]:
    """Dtypes the source names, plus ``float32`` (``torch.randn``'s default) if no float."""
    dtypes = list(info.dtypes)
    if not _FLOAT_DTYPES.intersection(dtypes):
        dtypes.insert(0, "float32")
    return dtypes


def _default_statement(stem: str, info: SourceInfo, dtypes: list[str]) -> str:
    """First line of the module docstring, else the file name made readable, with dtypes."""
    if info.docstring:
        first = info.docstring.strip().splitlines()[0].strip()
        if first:
            return first
    title = re.sub(r"^\d+_", "", stem).replace("_", " ").strip() or stem
    return f"{title} ({', '.join(dtypes)})"
