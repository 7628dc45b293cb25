"""Replay the teacher corpus through traced sessions, one trace per task, verdicts on this machine.

For each task in ``manifest.yaml`` this opens an external-teacher session (the same machinery
as ``upskills session start|call|note|end``) and, per attempt in order: writes the teacher's
``intent`` as a note, ``write_kernel`` with the attempt's source, ``check`` (correctness), and,
when the check passes, ``benchmark`` (timing and speedups). After the last attempt it
re-selects the fastest passing attempt (by measured eager speedup), notes why, submits it, and
ends the session. Every verdict is computed here by the verifier, so run it on the GPU that
the traces should describe (the H200).

Resumable: a task whose session folder has ended is skipped; a half-finished folder is moved
aside to ``<task>.partial-N`` and the task starts again.

Usage (on the GPU machine)::

    python benchmarks/corpus/replay.py --out traces/corpus-h200 --device cuda \
        --provider anthropic --model MODEL_ID [TASK ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from check_cpu import Attempt, load_manifest  # noqa: E402


def _ended(folder: Path) -> bool:
    state = folder / "state.json"
    if not state.is_file():
        return False
    return bool(json.loads(state.read_text(encoding="utf-8")).get("ended"))


def _move_aside(folder: Path) -> Path:
    n = 1
    while (target := folder.with_name(f"{folder.name}.partial-{n}")).exists():
        n += 1
    folder.rename(target)
    return target


def replay_task(
    task: str, attempts: list[Attempt], folder: Path, args: argparse.Namespace, verifier
):
    """Run one task's attempts in a new session at ``folder``; return the run_end event."""
    from upskills.agent.session import Session

    session = Session.start(
        task,
        folder,
        agent_name=args.agent_name,
        provider=args.provider,
        model=args.model,
        device=args.device,
    )
    session.call("read_task", {}, verifier=verifier)
    best: tuple[float, Attempt] | None = None
    for a in attempts:
        session.note(a.intent, kind="note")
        source = a.file.read_text(encoding="utf-8")
        session.call("write_kernel", {"source": source}, verifier=verifier)
        checked = session.call("check", {}, verifier=verifier)
        verdict = checked.verdict
        line = f"  {a.file.name:34} check: {'pass' if verdict and verdict.passed else 'FAIL'}"
        if verdict is not None and not verdict.passed:
            line += f" ({verdict.error_class})"
        if verdict is not None and verdict.passed:
            timed = session.call("benchmark", {}, verifier=verifier)
            speedup = timed.verdict.speedup_eager if timed.verdict else None
            line += f"  speedup vs eager: {speedup if speedup is not None else 'n/a'}"
            if timed.verdict and timed.verdict.passed and speedup is not None:
                if best is None or speedup > best[0]:
                    best = (speedup, a)
        print(line, flush=True)
    if best is not None and best[1] is not attempts[-1]:
        speedup, a = best
        session.note(
            f"Measured: {a.file.name} was the fastest passing attempt ({speedup:.2f}x eager); "
            "submitting it rather than the last one.",
            kind="note",
        )
        session.call(
            "write_kernel", {"source": a.file.read_text(encoding="utf-8")}, verifier=verifier
        )
    session.call("submit", {}, verifier=verifier)
    return session.end()


def main(argv: list[str] | None = None) -> int:
    """Replay the manifest; return the process exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", help="only these tasks (default: all)")
    parser.add_argument("--out", type=Path, required=True, help="folder of session folders")
    parser.add_argument("--device", default="cuda", help="auto|cpu|cuda (default cuda)")
    parser.add_argument("--seeds", type=int, default=3, help="input seeds per variant")
    parser.add_argument("--agent-name", default="upskills-corpus-teacher")
    parser.add_argument("--provider", default=None, help="the teacher's provider, if known")
    parser.add_argument("--model", default=None, help="the teacher's model id, if known")
    args = parser.parse_args(argv)

    from upskills.verify import CheckOptions, Verifier

    attempts = load_manifest()
    by_task: dict[str, list[Attempt]] = {}
    for a in attempts:
        by_task.setdefault(a.task, []).append(a)
    unknown = sorted(set(args.tasks) - set(by_task))
    if unknown:
        print(f"not in the manifest: {', '.join(unknown)}", file=sys.stderr)
        return 2
    tasks = args.tasks or list(by_task)
    args.out.mkdir(parents=True, exist_ok=True)
    options = CheckOptions(seeds=args.seeds)
    with Verifier(device=args.device, options=options) as verifier:
        for task in tasks:
            folder = args.out / task
            if _ended(folder):
                print(f"{task}: already replayed, skipping", flush=True)
                continue
            if folder.exists():
                print(f"{task}: unfinished session moved to {_move_aside(folder)}", flush=True)
            print(f"{task}:", flush=True)
            end = replay_task(task, by_task[task], folder, args, verifier)
            print(f"  -> {end.outcome}, best speedup {end.best_speedup}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
