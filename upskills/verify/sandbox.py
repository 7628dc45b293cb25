"""Child-process isolation: a warm "zygote" process that forks one fresh child per job.

The zygote (``python -m upskills.verify.sandbox MODE``) starts with the right environment for
its device (``TRITON_INTERPRET=1`` and no visible GPU for ``cpu``, set before ``triton`` is
imported), imports torch, triton and the verifier once, and then, for every job, forks a child
that runs the job and writes its result to a file. Forking a warm process costs milliseconds
instead of the seconds a fresh interpreter needs to import torch; the zygote itself never runs
torch ops or touches CUDA, so every child starts clean (its own CUDA context), and a child
that hangs, segfaults, aborts or corrupts its CUDA context dies alone: the zygote kills its
whole process group on timeout and reports how it ended.

The parent talks to the zygote over pipes, one JSON line per job each way. If the zygote
itself stops answering, the parent kills it and starts another.

This isolates failures; it is not a security sandbox (the child runs with the user's rights).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

READY = "upskills-zygote-ready"
"""Line the zygote prints once its imports are done."""

START_TIMEOUT_S = 300.0
"""How long the parent waits for a zygote to become ready (cold imports can be slow)."""


@dataclass
class JobOutcome:
    """How a forked job ended."""

    result: dict[str, Any] | None
    """The job's return value, or None when the child died or timed out."""
    timed_out: bool
    """The child was killed at its time limit."""
    exit_code: int | None
    """Exit status (negative: killed by that signal)."""
    log_tail: str
    """The last part of what the child wrote to stdout/stderr (faulthandler's traceback)."""
    elapsed_s: float
    """Wall time of the child."""


def child_env(mode: str) -> dict[str, str]:
    """The environment of a zygote for ``mode`` (``cpu`` or ``cuda``)."""
    env = dict(os.environ)
    if mode == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("TRITON_INTERPRET", None)
        # the zygote forks after importing torch: never let a CUDA query initialise the driver
        env.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


class Zygote:
    """Parent-side handle of one zygote process (one job at a time, thread-safe)."""

    def __init__(self, mode: str) -> None:
        if mode not in ("cpu", "cuda"):
            raise ValueError(f"sandbox mode must be 'cpu' or 'cuda', not {mode!r}")
        self.mode = mode
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="upskills-verify-")
        self._jobs = 0

    def _start(self) -> subprocess.Popen[str]:
        log_path = Path(self._tmp.name) / "zygote.log"
        with log_path.open("w") as log:
            proc = self._spawn(log)
        line = _readline(proc, START_TIMEOUT_S)
        if line is None or line.strip() != READY:
            _kill(proc)
            tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(
                f"the verifier's {self.mode} worker failed to start (got {line!r}); "
                "check that torch and triton import in this environment:\n" + "\n".join(tail)
            )
        return proc

    def _spawn(self, log: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "upskills.verify.sandbox", self.mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=child_env(self.mode),
            text=True,
            start_new_session=True,
        )

    def run(self, kind: str, payload: dict[str, Any], timeout_s: float) -> JobOutcome:
        """Run one job in a fresh forked child and wait at most ``timeout_s`` for it."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is not None:
                _kill(self._proc)  # died (killed, out of memory): reap it, close its pipes
                self._proc = None
            if self._proc is None:
                self._proc = self._start()
            self._jobs += 1
            job_dir = Path(self._tmp.name) / f"job{self._jobs}"
            job_dir.mkdir()
            payload_path = job_dir / "payload.json"
            payload_path.write_text(json.dumps(payload))
            request = {
                "kind": kind,
                "payload": str(payload_path),
                "result": str(job_dir / "result.json"),
                "log": str(job_dir / "log.txt"),
                "timeout_s": timeout_s,
            }
            proc = self._proc
            assert proc.stdin is not None
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
                line = _readline(proc, timeout_s + 60.0)
            except (BrokenPipeError, OSError):
                line = None
            if line is None:
                _kill(proc)
                self._proc = None
                reply: dict[str, Any] = {"timed_out": True, "exit_code": None, "elapsed": timeout_s}
            else:
                reply = json.loads(line)
            return _outcome(job_dir, reply)

    def close(self) -> None:
        """Stop the zygote and remove job files."""
        with self._lock:
            if self._proc is not None:
                _kill(self._proc)
                self._proc = None
            self._tmp.cleanup()


def _outcome(job_dir: Path, reply: dict[str, Any]) -> JobOutcome:
    result_path = job_dir / "result.json"
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    log_path = job_dir / "log.txt"
    log = log_path.read_text(errors="replace")[-6000:] if log_path.exists() else ""
    shutil.rmtree(job_dir, ignore_errors=True)
    return JobOutcome(
        result,
        bool(reply.get("timed_out")),
        reply.get("exit_code"),
        log,
        float(reply.get("elapsed", 0.0)),
    )


def _readline(proc: subprocess.Popen[str], timeout_s: float) -> str | None:
    """One line from the zygote, or None if it does not come within ``timeout_s``."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    if not ready:
        return None
    line = proc.stdout.readline()
    return line or None


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


# --------------------------------------------------------------------------- zygote side


def _child(request: dict[str, Any]) -> None:
    """Body of a forked child: run the job, write the result, exit without cleanup."""
    code = 0
    try:
        os.setsid()
        log_fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        import faulthandler

        faulthandler.enable(file=sys.stderr, all_threads=False)
        limit = float(request["timeout_s"])
        # just before the zygote kills us at the limit, say where we are (for the verdict)
        faulthandler.dump_traceback_later(max(limit - 1.0, limit * 0.9), exit=False)
        from upskills.verify.worker import format_internal_error, run_job

        payload = json.loads(Path(request["payload"]).read_text())
        try:
            result = run_job(request["kind"], payload)
        except Exception as exc:  # noqa: BLE001 - reported as the verifier's own error
            result = {"internal_error": format_internal_error(exc)}
        tmp = request["result"] + ".tmp"
        Path(tmp).write_text(json.dumps(result))
        os.replace(tmp, request["result"])
    except BaseException:  # noqa: BLE001 - whatever happens, the child must exit here
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout_s: float) -> tuple[bool, int | None, float]:
    """Wait for the child; kill its process group at the deadline."""
    start = time.monotonic()
    delay = 0.002
    status = None
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout_s:
            timed_out = True
            _killgroup(pid)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(delay)
        delay = min(delay * 1.5, 0.05)
    _killgroup(pid)  # grandchildren the candidate left behind
    code = os.waitstatus_to_exitcode(status) if status is not None else None
    return timed_out, code, time.monotonic() - start


def _killgroup(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def serve(mode: str) -> None:
    """The zygote's loop: preload, then fork a child per request line until stdin closes."""
    if mode == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch  # noqa: F401 - preloaded so children fork warm

    try:  # importing torch._dynamo later would patch torch functions mid-check
        import torch._dynamo  # noqa: F401
    except ImportError:
        pass

    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except ImportError:
        pass
    import torch.utils.cpp_extension  # noqa: F401

    import upskills.verify.trials  # noqa: F401
    import upskills.verify.worker  # noqa: F401

    out = sys.stdout
    out.write(READY + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        out.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        timed_out, code, elapsed = _wait(pid, float(request["timeout_s"]))
        out.write(
            json.dumps({"timed_out": timed_out, "exit_code": code, "elapsed": elapsed}) + "\n"
        )
        out.flush()


if __name__ == "__main__":
    serve(sys.argv[1] if len(sys.argv) > 1 else "cpu")
