"""Take a device call's results into the checkout: a round, its sessions, a re-check, the ablation.

After ``single.sh`` the files a call wrote under ``$OUT`` lie, read-only, in one folder here.
Each device session did the same steps by hand; this script does them, and refuses what would
lose or falsify something:

- ``round.txt`` / ``round.log`` -> ``benchmarks/results/corpus_live/round<N>.*`` (``--round N``;
  an existing file is never overwritten);
- ``sessions.tgz`` unpacked over the checkout: only regular files and folders under
  ``traces/``, none absolute or with ``..``, no link; the build locks the sessions left
  (``.lock``) are skipped; a trace here is replaced only by one that begins with it;
- ``recheck.jsonl`` -> ``benchmarks/results/recheck_h200_run<N>.jsonl`` (``--recheck-run N``);
  a re-check whose rows name another GPU (``"gpu"``) is kept under that GPU's name
  (``recheck_h100_run<N>.jsonl``) and is not added to the reports, whose bars are the H200's;
  rows of two GPUs are refused (one run is one machine);
- ``ceilings.json`` -> ``benchmarks/results/ceilings_<gpu>_session<N>.json`` (``--session N``);
  an H200's with a ``copy_by_size`` becomes the write flush's report's ``--copy-by-size``;
- ``ablations.jsonl`` over ``benchmarks/results/ablations_<gpu>.jsonl`` (``--ablations``), the
  GPU its rows name (``ablations_h200.jsonl`` for an H200's, ``ablations_h100.jsonl`` for an
  H100's; the nvcc prescreen's rows name none), only when the committed cache's lines are its
  first lines: the device appends to the cache it was carried, so anything else is a cache from
  another checkout; when it grew, the calls' ``ablate.log`` (a line a kernel judged) is appended
  to ``ablations_<gpu>.log``;
- the device's paths in every file written here replaced by names that hold anywhere: its
  checkout by ``<checkout>``, ``$OUT`` by ``$OUT``, the test suite's temporary folders by
  ``/tmp/upskills-tests.XXXX`` (no absolute path of a machine is committed). The checkout is
  found in the files themselves, as the folder that holds this repository's own paths
  (``traces/corpus-live/``, ``upskills/verify/``, ...), or given with ``--device-root``.

It then prints the commands that re-make the reports and the skills (``--remake`` runs them).

    python benchmarks/device/take_round.py FILES_AT --round 36 [--recheck-run 32] [--ablations]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
REPORTS = ("reports/teacher-corpus.md", "reports/teacher-corpus-read-flush.md")
NO_GPU = "none: nvcc on a CPU machine"
"""The GPU name of the nvcc prescreen's rows (``upskills.distill.ablate.PRESCREEN_GPU``)."""


def distill_command(root: Path = ROOT) -> str:
    """The skills' distill command: the H200's ablation cache, and any other GPU's, read."""
    results = root / RESULTS.relative_to(ROOT)
    cmd = "python -m upskills distill traces/ --ablation-cache "
    cmd += "benchmarks/results/ablations_h200.jsonl"
    for other in sorted(results.glob("ablations_*.jsonl")):
        if other.name != "ablations_h200.jsonl":
            cmd += f" --ablation-read benchmarks/results/{other.name}"
    return cmd


DEVICE_PATHS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"/tmp/upskills-tests\.[A-Za-z0-9_]+"), "/tmp/upskills-tests.XXXX"),
    (re.compile(r"/root/out\b"), "$OUT"),
)
"""The device's paths and what replaces each (``$OUT`` as lent in 2026-12)."""
REPO_PATH = re.compile(
    r"(/[\w.+-]+(?:/[\w.+-]+)*?)/(?:traces/corpus-live|benchmarks/corpus_live|benchmarks/device"
    r"|upskills/verify|upskills/distill|tests/verify)/"
)
"""An absolute path into this repository: group 1 is the checkout that holds it."""
PYTEST_ROOT = re.compile(r"^rootdir: (/[\w.+/-]+?)/?$", re.MULTILINE)
"""pytest's header line naming the folder it ran in (a GPU test log's only path, often)."""


class TakeError(Exception):
    """A result that cannot be taken as it is (said why; nothing was written for it).

    ``taken``: what was taken before it, a line each.
    """

    def __init__(self, message: str, taken: list[str] | None = None) -> None:
        super().__init__(message)
        self.taken = taken or []


def find_checkout(texts: list[str]) -> str | None:
    """The device's checkout: the commonest folder holding this repository's paths in ``texts``.

    Folders under ``/tmp`` (the test suite's copies, the sandbox's) are not the checkout.
    """
    found: dict[str, int] = {}
    for text in texts:
        for match in (*REPO_PATH.finditer(text), *PYTEST_ROOT.finditer(text)):
            root = match[1]
            if not root.startswith("/tmp/"):
                found[root] = found.get(root, 0) + 1
    return max(found, key=lambda r: found[r]) if found else None


def redact(text: str, checkout: str | None = None) -> str:
    """``text`` with the device's paths replaced (``DEVICE_PATHS``, and ``checkout``)."""
    for pattern, name in DEVICE_PATHS:
        text = pattern.sub(name, text)
    if checkout:
        text = re.sub(re.escape(checkout) + r"(?![\w.+-])", "<checkout>", text)
    return text


def copy_redacted(src: Path, dst: Path, checkout: str | None = None) -> Path:
    """Copy a text file, its device paths replaced; refuse to overwrite.

    ``checkout``: the device's checkout; found in the file itself (:func:`find_checkout`) when
    not given (the fortieth session's GPU test logs kept it in pytest's ``rootdir:`` line).
    """
    if dst.exists():
        raise TakeError(f"{dst} exists already: not overwritten")
    text = src.read_text(encoding="utf-8")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(redact(text, checkout or find_checkout([text])), encoding="utf-8")
    return dst


def read_sessions(archive: Path) -> dict[str, bytes | None]:
    """The archive's entries to unpack, by name (a folder's is None), every one checked first.

    Only plain files and folders under ``traces/``, none absolute or with ``..``; the build
    locks the sessions left (``.lock``) are left out.
    """
    entries: dict[str, bytes | None] = {}
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            parts = Path(m.name).parts
            if m.name.startswith("/") or ".." in parts or not parts or parts[0] != "traces":
                raise TakeError(f"sessions.tgz: {m.name!r} is not a path under traces/")
            if not (m.isfile() or m.isdir()):
                raise TakeError(f"sessions.tgz: {m.name!r} is not a plain file or folder")
        for m in members:
            if Path(m.name).name == ".lock":
                continue
            handle = tar.extractfile(m) if m.isfile() else None
            if m.isfile() and handle is None:
                raise TakeError(f"sessions.tgz: {m.name!r} cannot be read")
            entries[m.name] = handle.read() if handle is not None else None
    return entries


def write_sessions(
    entries: dict[str, bytes | None], root: Path = ROOT, checkout: str | None = None
) -> list[Path]:
    """Write the sessions a round judged over the checkout, redacted; the files written.

    A trace here (``.jsonl``) is replaced only by one that begins with it: the device appends
    the round's events to the trace it was carried, so a trace that does not is another
    session's, or this checkout's has events written since the call (which would be lost).
    Everything is checked before anything is written.
    """
    contents: dict[str, bytes] = {}
    for name, data in entries.items():
        if data is None:
            continue
        try:
            data = redact(data.decode("utf-8"), checkout).encode("utf-8")
        except UnicodeDecodeError:
            pass
        target = root / name
        if name.endswith(".jsonl") and target.is_file():
            if not data.startswith(target.read_bytes()):
                raise TakeError(
                    f"sessions.tgz: {name} does not begin with the trace here: not replaced "
                    "(events written here since the call would be lost)"
                )
        contents[name] = data
    written = []
    for name, data in entries.items():
        target = root / name
        if data is None:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(contents[name])
        written.append(target)
    return written


def take_ablations(src: Path, cache: Path, checkout: str | None = None) -> int:
    """Put the device's ablation cache over the committed one; the number of new lines."""
    old = cache.read_text(encoding="utf-8").splitlines() if cache.exists() else []
    # compared as committed, the device's paths replaced (a cache taken twice is the same)
    new = redact(src.read_text(encoding="utf-8"), checkout).splitlines()
    if new[: len(old)] != old:
        raise TakeError(
            f"{src.name}: its first lines are not {cache.name}'s: a cache from another "
            "checkout, not taken"
        )
    cache.write_text("\n".join(new) + "\n", encoding="utf-8")
    return len(new) - len(old)


def gpu_tag(gpu: str) -> str:
    """A GPU's name as a file-name tag: ``NVIDIA H100 80GB HBM3`` -> ``h100``."""
    found = re.search(r"\b([A-Z]\d{2,4}[A-Za-z]?)\b", gpu)
    return found[1].lower() if found else re.sub(r"\W+", "_", gpu.lower()).strip("_")


def take_ceilings(
    out: Path, session: int, root: Path = ROOT, checkout: str | None = None
) -> tuple[str, str | None]:
    """``ceilings.json`` -> ``benchmarks/results/ceilings_<gpu>_session<N>.json``.

    Returns:
        What was taken, and the file (relative to ``root``) when it is an H200's with a
        ``copy_by_size``: the reports then read their second reading from it.

    Raises:
        TakeError: no ceilings file here, it is not a JSON object, or its name is taken.
    """
    src = out / "ceilings.json"
    try:
        data = json.loads(src.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TakeError(f"--session: no readable ceilings.json here ({exc})") from None
    if not isinstance(data, dict):
        raise TakeError("ceilings.json: not a JSON object")
    tag = gpu_tag(str(data.get("gpu") or "")) or "unnamed"
    dst = root / RESULTS.relative_to(ROOT) / f"ceilings_{tag}_session{session}.json"
    copy_redacted(src, dst, checkout)
    name = dst.relative_to(root).as_posix()
    if tag == "h200" and data.get("copy_by_size"):
        return f"{name} (its copy_by_size goes to the write flush's report)", name
    return name, None


def recheck_gpu(path: Path, skip: tuple[str, ...] = ()) -> str:
    """The GPU a re-check (or an ablation cache) ran on, as a file-name tag: ``h200``, ``h100``.

    Read from its rows' ``"gpu"`` (``NVIDIA H100 80GB HBM3`` -> ``h100``); rows without one
    (a check that failed before it knew the GPU) or with one of ``skip`` say nothing, and a file
    where none says is taken as the H200's, the machine these runs are for.

    Raises:
        TakeError: rows name two GPUs, or a row is not a JSON object.
    """
    tags: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TakeError(f"{path.name}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise TakeError(f"{path.name}:{n}: not a JSON object")
        gpu = row.get("gpu")
        if isinstance(gpu, str) and gpu.strip() and gpu not in skip:
            tags.add(gpu_tag(gpu))
    if len(tags) > 1:
        raise TakeError(f"{path.name}: rows of more than one GPU ({', '.join(sorted(tags))})")
    return tags.pop() if tags else "h200"


def report_commands(
    new_recheck: str | None, root: Path = ROOT, copy_by_size: str | None = None
) -> list[str]:
    """Each report's own command (its third line), the new re-check added to the write flush's.

    ``copy_by_size``: a ceilings file whose copy at several sizes the write flush's report
    reads from now on (``--copy-by-size``, an earlier one replaced). Not the read flush's:
    ``ceilings.py`` times those copies after the timer's default write flush.
    """
    commands = []
    for report in REPORTS:
        line = (root / report).read_text(encoding="utf-8").splitlines()[2]
        match = re.fullmatch(r"- Command: `(.+)`", line)
        if match is None:
            raise TakeError(f"{report}: line 3 is not '- Command: `...`'")
        command = match[1]
        if copy_by_size is not None and "read-flush" not in report:
            command = re.sub(r" --copy-by-size \S+", "", command)
            command = command.replace(" --out ", f" --copy-by-size {copy_by_size} --out ", 1)
        if new_recheck is not None and "read-flush" not in report:
            command = command.replace(" --out ", f" --recheck {new_recheck} --out ", 1)
        commands.append(command)
    return commands


def _texts(out: Path, sessions: dict[str, bytes | None]) -> list[str]:
    """The text of every file taken from ``out``, the sessions' included."""
    texts = []
    for name in ("round.txt", "round.log", "recheck.jsonl", "ablations.jsonl"):
        if (out / name).is_file():
            texts.append((out / name).read_text(encoding="utf-8", errors="replace"))
    texts += [data.decode("utf-8", errors="replace") for data in sessions.values() if data]
    return texts


def take(
    out: Path,
    root: Path = ROOT,
    *,
    round_no: int | None = None,
    recheck_run: int | None = None,
    ablations: bool = False,
    device_root: str | None = None,
) -> tuple[list[str], str | None]:
    """Take what ``out`` holds into the checkout at ``root``.

    ``device_root``: the device's checkout, replaced by ``<checkout>``; found in the files
    (:func:`find_checkout`) when not given.

    Returns:
        What was taken (a line each) and the new re-check file (relative to ``root``), if any.

    Raises:
        TakeError: a file cannot be taken as it is; ``taken`` on the error says what was.
    """
    results = root / RESULTS.relative_to(ROOT)
    taken: list[str] = []
    new_recheck: str | None = None
    try:
        archive = out / "sessions.tgz"
        sessions = read_sessions(archive) if archive.exists() else {}
        checkout = device_root or find_checkout(_texts(out, sessions))
        if (out / "round.txt").exists():
            if round_no is None:
                raise TakeError("round.txt is here: say its round number (--round N)")
            for suffix in ("txt", "log"):
                if (out / f"round.{suffix}").exists():
                    dst = results / "corpus_live" / f"round{round_no}.{suffix}"
                    copy_redacted(out / f"round.{suffix}", dst, checkout)
                    taken.append(dst.relative_to(root).as_posix())
        if archive.exists():
            files = write_sessions(sessions, root, checkout)
            taken.append(f"{len(files)} session files from sessions.tgz")
        if (out / "recheck.jsonl").exists():
            if recheck_run is None:
                raise TakeError("recheck.jsonl is here: say its run number (--recheck-run N)")
            tag = recheck_gpu(out / "recheck.jsonl")
            dst = results / f"recheck_{tag}_run{recheck_run}.jsonl"
            copy_redacted(out / "recheck.jsonl", dst, checkout)
            if tag == "h200":
                new_recheck = dst.relative_to(root).as_posix()
                taken.append(new_recheck)
            else:
                taken.append(
                    f"{dst.relative_to(root).as_posix()} (an {tag.upper()} run: not added to the "
                    "reports, whose bars are the H200's)"
                )
        if ablations:
            if not (out / "ablations.jsonl").exists():
                raise TakeError("--ablations: no ablations.jsonl here")
            tag = recheck_gpu(out / "ablations.jsonl", skip=(NO_GPU,))
            cache = results / f"ablations_{tag}.jsonl"
            added = take_ablations(out / "ablations.jsonl", cache, checkout)
            taken.append(f"{cache.name}: {added} new measurement line(s)")
            if added and (out / "ablate.log").exists():
                log = cache.with_suffix(".log")
                raw = (out / "ablate.log").read_text(encoding="utf-8", errors="replace")
                text = redact(raw, checkout)
                with log.open("a", encoding="utf-8") as fh:
                    fh.write(text if text.endswith("\n") else text + "\n")
                taken.append(f"{log.name}: the calls' log appended")
    except (TakeError, OSError, tarfile.TarError) as exc:
        raise TakeError(str(exc), taken) from exc
    return taken, new_recheck


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("files_at", type=Path, help="the folder the call's $OUT files lie in")
    parser.add_argument("--round", type=int, help="the round number of round.txt / round.log")
    parser.add_argument("--recheck-run", type=int, help="the re-check run of recheck.jsonl")
    parser.add_argument("--ablations", action="store_true", help="take ablations.jsonl")
    parser.add_argument(
        "--session",
        type=int,
        help="take ceilings.json as ceilings_<gpu>_session<N>.json (an H200's copy_by_size "
        "then goes to the write flush's report)",
    )
    parser.add_argument("--remake", action="store_true", help="run the printed commands")
    parser.add_argument(
        "--device-root", help="the device's checkout (default: found in the files themselves)"
    )
    args = parser.parse_args(argv)
    if not args.files_at.is_dir():
        print(f"error: no folder at {args.files_at}", file=sys.stderr)
        return 2
    try:
        taken, new_recheck = take(
            args.files_at,
            ROOT,
            round_no=args.round,
            recheck_run=args.recheck_run,
            ablations=args.ablations,
            device_root=args.device_root,
        )
        by_size = None
        if args.session is not None:
            try:
                line, by_size = take_ceilings(args.files_at, args.session, ROOT, args.device_root)
            except TakeError as exc:  # what take() wrote stays, and is said
                raise TakeError(str(exc), taken) from exc
            taken.append(line)
        elif (args.files_at / "ceilings.json").exists():
            taken.append("not ceilings.json: --session N takes it")
        commands = [*report_commands(new_recheck, ROOT, copy_by_size=by_size), distill_command()]
    except TakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for line in exc.taken:
            print(f"taken before it: {line}", file=sys.stderr)
        return 1
    for line in taken:
        print(f"taken: {line}")
    print("then, to re-make the reports and the skills:")
    for command in commands:
        print(f"  {command}")
        if args.remake:
            words = shlex.split(command)
            words = [sys.executable, "-m", "upskills", *words[words.index("upskills") + 1 :]]
            subprocess.run(words, cwd=ROOT, check=True)  # noqa: S603 - the reports' own commands
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
