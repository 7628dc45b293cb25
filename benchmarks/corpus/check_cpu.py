"""Check every attempt of the teacher corpus on CPU (Triton interpreter) against its manifest.

Each attempt in ``manifest.yaml`` says what the verifier should conclude: ``passed: true``, or
``passed: false`` with the error class of its deliberate flaw. This script runs every attempt
through :func:`upskills.verify.check` on the CPU variants, prints one row per attempt (task,
attempt, passed, error class, expected, ok) and exits non-zero when any verdict differs from
its expectation, or when a task's final attempt does not pass. It measures no speed: timings
come only from the GPU replay (``upskills session``), never from here.

Usage::

    python benchmarks/corpus/check_cpu.py                 # every task
    python benchmarks/corpus/check_cpu.py gemm_fp16 ...   # some tasks
    python benchmarks/corpus/check_cpu.py --seeds 3 --json results.jsonl   # more seeds
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.yaml"


@dataclass
class Attempt:
    """One manifest entry: a candidate file and the verdict it should get."""

    task: str
    file: Path
    intent: str
    expect_passed: bool
    expect_error: str | None


class ManifestError(ValueError):
    """The manifest is malformed; the message names the task and field."""


def load_manifest(path: Path = MANIFEST) -> list[Attempt]:
    """Read and validate the manifest.

    Args:
        path: The manifest YAML file.

    Returns:
        Every attempt, task by task, in manifest order.

    Raises:
        ManifestError: A task or attempt lacks a field, or names a file that does not exist.
    """
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), dict):
        raise ManifestError(f"{path}: expected a mapping with a 'tasks' mapping")
    attempts: list[Attempt] = []
    for task, entry in data["tasks"].items():
        items = entry.get("attempts") if isinstance(entry, dict) else None
        if not items:
            raise ManifestError(f"{path}: task {task!r}: 'attempts' is missing or empty")
        for i, item in enumerate(items):
            where = f"{path}: task {task!r}, attempt {i + 1}"
            extra = set(item) - {"file", "intent", "expect"}
            if extra:
                raise ManifestError(f"{where}: unknown field(s) {sorted(extra)}")
            for field in ("file", "intent", "expect"):
                if field not in item:
                    raise ManifestError(f"{where}: missing field {field!r}")
            expect = item["expect"]
            if not isinstance(expect, dict) or not isinstance(expect.get("passed"), bool):
                raise ManifestError(f"{where}: 'expect' must be {{passed: bool, error_class?}}")
            if not expect["passed"] and not expect.get("error_class"):
                raise ManifestError(f"{where}: a failing attempt needs expect.error_class")
            file = HERE / task / item["file"]
            if not file.is_file():
                raise ManifestError(f"{where}: file {file.relative_to(HERE)} does not exist")
            attempts.append(
                Attempt(task, file, item["intent"], expect["passed"], expect.get("error_class"))
            )
        if not attempts[-1].expect_passed:
            raise ManifestError(
                f"{path}: task {task!r}: the final attempt must be expected to pass"
            )
    return attempts


def main(argv: list[str] | None = None) -> int:
    """Run the check; return the process exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", help="only these tasks (default: all)")
    parser.add_argument("--seeds", type=int, default=1, help="input seeds per variant")
    parser.add_argument("--json", type=Path, help="append one JSON verdict per line here")
    args = parser.parse_args(argv)

    from upskills.verify import CheckOptions, Verifier

    attempts = load_manifest()
    known = {a.task for a in attempts}
    unknown = sorted(set(args.tasks) - known)
    if unknown:
        print(f"not in the manifest: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.tasks:
        attempts = [a for a in attempts if a.task in args.tasks]
    options = CheckOptions(seeds=args.seeds, timing=False, baselines=False)
    header = f"{'task':20} {'attempt':34} {'passed':6} {'error':9} {'expected':9} ok"
    print(header)
    print("-" * len(header))
    failures = 0
    start = time.monotonic()
    with Verifier(device="cpu", options=options) as verifier:
        for a in attempts:
            verdict = verifier.check(a.task, a.file)
            got = verdict.error_class.value if verdict.error_class else "-"
            want = "-" if a.expect_passed else str(a.expect_error)
            ok = verdict.passed == a.expect_passed and (a.expect_passed or got == want)
            failures += not ok
            print(
                f"{a.task:20} {a.file.name:34} {str(verdict.passed):6} {got:9} {want:9} "
                f"{'ok' if ok else 'UNEXPECTED'}",
                flush=True,
            )
            if not ok:
                print(f"    {verdict.message[:400]}", flush=True)
            if args.json:
                with args.json.open("a") as fh:
                    fh.write(
                        json.dumps(
                            {
                                "file": f"{a.task}/{a.file.name}",
                                "ok": ok,
                                "verdict": verdict.model_dump(mode="json"),
                            }
                        )
                        + "\n"
                    )
    print(f"{len(attempts)} attempts, {failures} unexpected, {time.monotonic() - start:.0f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
