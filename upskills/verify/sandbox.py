"""Processes of a check: two warm "zygotes", one for the judge and one for candidates.

A zygote (``python -m upskills.verify.sandbox DEVICE ROLE``) starts with the environment of its
device (``TRITON_INTERPRET=1`` and no visible GPU for ``cpu``, set before ``triton`` is
imported), imports torch, triton and the verifier once, and then forks one fresh child per job.
Forking a warm process costs milliseconds instead of the seconds a new interpreter needs to
import torch; the zygote never touches CUDA itself, so every child gets a clean context.

- The **judge** zygote's children run :func:`upskills.verify.worker.run_job` (a judge, a
  baseline, a hardware probe) and hand their result back through a pipe the zygote created for
  that child alone: no file a candidate could forge.
- The **candidate** zygote's children run the candidate (:mod:`upskills.verify.candidate_host`).
  Such a child starts its own session, drops to the ``nobody`` user when the zygote runs as root
  (``UPSKILLS_SANDBOX_USER``; on a GPU as well as on CPU: the judge's CUDA buffers are VMM
  memory, which maps across users), and is killed with its whole process group at its time
  limit. It returns nothing but its exit status and the tail of its output (for messages).

The judge's processes mark themselves non-dumpable, so a candidate running as the same user
cannot read their memory or file descriptors through ``/proc``. This isolates the judge from
the candidate; it is not a security sandbox against hostile native code (the candidate can
still use the GPU, the network and the files its user can reach).
"""

from __future__ import annotations

import ctypes
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

from upskills.verify.build_locks import own_folder, private_build_root, source_extensions_root

READY = "upskills-zygote-ready"
"""Line the zygote prints once its imports are done."""

START_TIMEOUT_S = 300.0
"""How long the parent waits for a zygote to become ready (cold imports can be slow)."""

ROLES = ("judge", "candidate")


@dataclass
class JobOutcome:
    """How a forked job ended."""

    result: dict[str, Any] | None
    """The job's return value (judge role), or None when the child died or timed out."""
    timed_out: bool
    """The child was killed at its time limit."""
    exit_code: int | None
    """Exit status (negative: killed by that signal)."""
    log_tail: str
    """The last part of what the child wrote to stdout/stderr (faulthandler's traceback)."""
    elapsed_s: float
    """Wall time of the child."""


def sandbox_cache_root() -> Path:
    """Compile caches of candidates (Triton, torch extensions), shared across checks."""
    return Path(tempfile.gettempdir()) / f"upskills-sandbox-{os.getuid()}"


def child_env(mode: str, role: str = "judge") -> dict[str, str]:
    """The environment of a zygote for ``mode`` (``cpu`` or ``cuda``) and ``role``."""
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

    def __init__(self, mode: str, role: str = "judge") -> None:
        if mode not in ("cpu", "cuda"):
            raise ValueError(f"sandbox mode must be 'cpu' or 'cuda', not {mode!r}")
        if role not in ROLES:
            raise ValueError(f"sandbox role must be one of {ROLES}, not {role!r}")
        self.mode = mode
        self.role = role
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix=f"upskills-{role}-")
        self.child_pid: int | None = None
        """The running job's child (candidate role), so another thread can stop it."""

    def _start(self) -> subprocess.Popen[str]:
        log_path = Path(self._tmp.name) / "zygote.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                # its jobs' folder in ours: removed by close(), which kills the zygote
                [
                    sys.executable,
                    "-m",
                    "upskills.verify.sandbox",
                    self.mode,
                    self.role,
                    self._tmp.name,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=child_env(self.mode, self.role),
                text=True,
                start_new_session=True,
            )
        line = _readline(proc, START_TIMEOUT_S)
        if line is None or line.strip() != READY:
            _kill(proc)
            tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(
                f"the verifier's {self.mode} {self.role} worker failed to start (got {line!r}); "
                "check that torch and triton import in this environment:\n" + "\n".join(tail)
            )
        return proc

    def _ready(self) -> subprocess.Popen[str]:
        """The running zygote, (re)started if need be (call with the lock held)."""
        if self._proc is not None and self._proc.poll() is not None:
            _kill(self._proc)  # died (killed, out of memory): reap it, close its pipes
            self._proc = None
        if self._proc is None:
            self._proc = self._start()
        return self._proc

    def pid(self) -> int:
        """The zygote's pid (started if need be): every job's child is its child."""
        with self._lock:
            return self._ready().pid

    def run(self, kind: str, payload: dict[str, Any], timeout_s: float) -> JobOutcome:
        """Run one job in a fresh forked child and wait at most ``timeout_s`` for it."""
        with self._lock:
            proc = self._ready()
            request = {"kind": kind, "payload": payload, "timeout_s": timeout_s}
            assert proc.stdin is not None
            reply: dict[str, Any] | None = None
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
                deadline = time.monotonic() + timeout_s + 60.0
                while True:
                    line = _readline(proc, max(0.0, deadline - time.monotonic()))
                    if line is None:
                        break
                    message = json.loads(line)
                    if "pid" in message:
                        self.child_pid = int(message["pid"])
                        continue
                    reply = message
                    break
            except (BrokenPipeError, OSError, ValueError):
                reply = None
            finally:
                self.child_pid = None
            if reply is None:
                _kill(proc)
                self._proc = None
                reply = {"timed_out": True, "exit_code": None, "elapsed": timeout_s}
            return JobOutcome(
                reply.get("result"),
                bool(reply.get("timed_out")),
                reply.get("exit_code"),
                str(reply.get("log", "")),
                float(reply.get("elapsed", 0.0)),
            )

    def stop_child(self, dump_first: bool = True) -> None:
        """Kill the running child's process group (after asking it where it is)."""
        pid = self.child_pid
        if pid is None:
            return
        if dump_first:
            try:
                os.killpg(pid, signal.SIGUSR1)
                time.sleep(0.3)
            except (ProcessLookupError, PermissionError):
                pass
        _killgroup(pid)

    def close(self) -> None:
        """Stop the zygote (and a job in flight in another thread) and remove its files."""
        self.stop_child(dump_first=False)  # a child in its own session outlives its zygote
        proc = self._proc
        if proc is not None:  # killed first: a thread blocked on it returns at once
            _kill(proc)
        got = self._lock.acquire(timeout=30.0)
        try:
            self._proc = None
            self._tmp.cleanup()
        finally:
            if got:
                self._lock.release()


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


def _non_dumpable() -> None:
    """PR_SET_DUMPABLE 0: no ptrace, no /proc/<pid>/mem or fd access by same-user processes."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def _redirect(log_path: str) -> None:
    os.setsid()
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)


def _judge_child(request: dict[str, Any], result_fd: int, log_path: str) -> None:
    """Body of a forked judge child: run the job, write the result to the pipe, exit."""
    code = 0
    try:
        _redirect(log_path)
        import faulthandler

        faulthandler.enable(file=sys.stderr, all_threads=False)
        from upskills.verify.worker import format_internal_error, run_job

        try:
            result = run_job(request["kind"], request["payload"])
        except Exception as exc:  # noqa: BLE001 - reported as the verifier's own error
            result = {"internal_error": format_internal_error(exc)}
        data = json.dumps(result).encode()
        view = memoryview(data)
        while view:
            written = os.write(result_fd, view)
            view = view[written:]
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


def _candidate_child(
    request: dict[str, Any], log_path: str, workdir: str, root: Path | None
) -> None:
    """Body of a forked candidate child: drop privileges, then serve the judge."""
    code = 0
    try:
        _redirect(log_path)
        import faulthandler

        faulthandler.enable(file=sys.stderr, all_threads=False)
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)
        limit = float(request["timeout_s"])
        faulthandler.dump_traceback_later(max(limit - 1.0, limit * 0.9), exit=False)
        from upskills.verify.candidate_host import drop_privileges, serve_candidate

        payload = request["payload"]
        if root is not None:
            _use_private_builds(payload["source"], root)
        drop_privileges(workdir)  # on a GPU too: the judge's buffers are VMM memory
        # another check's candidate (the same user) cannot open this one's /proc/<pid>/fd,
        # where the judge's buffers sit while a request is served, nor its memory; dropping
        # to nobody does this too where fs.suid_dumpable is 0, not everywhere
        _non_dumpable()
        os.chdir(workdir)
        serve_candidate(
            payload["source"], payload["display"], payload["device"], payload["address"], workdir
        )
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


def _wait(pid: int, timeout_s: float, result_fd: int | None) -> tuple[bool, int | None, bytes]:
    """Wait for the child (draining its result pipe); kill its process group at the deadline."""
    start = time.monotonic()
    chunks: list[bytes] = []
    status = None
    timed_out = False
    while True:
        if result_fd is not None:
            ready, _, _ = select.select([result_fd], [], [], 0.01)
            if ready:
                chunk = os.read(result_fd, 1 << 20)
                if chunk:
                    chunks.append(chunk)
                    continue
                os.close(result_fd)
                result_fd = None
        else:
            time.sleep(0.005)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout_s:
            timed_out = True
            _killgroup(pid)
            _, status = os.waitpid(pid, 0)
            break
    if result_fd is not None:
        while True:
            chunk = os.read(result_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(result_fd)
    _killgroup(pid)  # grandchildren the child left behind
    code = os.waitstatus_to_exitcode(status)
    return timed_out, code, b"".join(chunks)


def _killgroup(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def sandbox_user_differs() -> bool:
    """True when candidates run as another user (root drops them to ``nobody``).

    Not where the sandbox user is switched off (``UPSKILLS_SANDBOX_USER=none``), nor where
    Python itself is not readable by others (it lives under ``/root``): they keep the user.
    """
    if os.geteuid() != 0 or os.environ.get("UPSKILLS_SANDBOX_USER", "nobody") == "none":
        return False
    from upskills.verify.candidate_host import runtime_readable_by_others

    return runtime_readable_by_others()


def sandbox_ids() -> tuple[int, int] | None:
    """The sandbox user's ``(uid, gid)``; None where that user does not exist."""
    import pwd

    try:
        entry = pwd.getpwnam(os.environ.get("UPSKILLS_SANDBOX_USER", "nobody"))
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def _prepare_candidate_root() -> Path | None:
    """As root: the candidates' cache root, kept across checks.

    The root itself is root's (mode 0711), so a candidate cannot rename or replace what is in
    it. So is ``work`` (0711): each check's folder in it is the sandbox user's, under a random
    name that no other candidate can list, so a candidate cannot find another check's folder
    and rewrite its file before that check imports it. Each source's compile caches go in a
    folder of its own under ``builds`` (``build_locks.private_build_root``).
    """
    ids = sandbox_ids() if sandbox_user_differs() else None
    if ids is None:
        return None
    root = sandbox_cache_root()
    own_folder(root, 0o711)
    own_folder(root / "work", 0o711)
    return root


def check_build_folder(source: str) -> tuple[Path, tuple[int, int] | None]:
    """Where a check of ``source`` builds its extensions, and to whom root's build there goes.

    As root with a sandbox user: in the source's private folder (``private_build_root``), with
    the sandbox user's ids; otherwise under ``TORCH_EXTENSIONS_DIR`` and None (the checks run
    as this user). For pre-builds and tests that must find a check's build.
    """
    root = _prepare_candidate_root()
    ids = sandbox_ids() if root is not None else None
    if root is None or ids is None:
        return source_extensions_root(source), None
    return source_extensions_root(source, private_build_root(source, root, *ids)), ids


def _use_private_builds(source: str, root: Path) -> None:
    """As root, in a candidate's child: its source's own build folder for load_inline and Triton.

    Handed to the sandbox user before the child drops to it.
    """
    ids = sandbox_ids()
    if ids is None:
        return
    folder = private_build_root(source, root, *ids)
    triton = folder / "triton"
    triton.mkdir(mode=0o700, exist_ok=True)
    # the folder is the sandbox user's: what is at this name may be a link it left (to /etc):
    # change the entry itself, never what it points to
    os.chown(triton, *ids, follow_symlinks=False)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(folder)
    os.environ["TRITON_CACHE_DIR"] = str(triton)


def serve(mode: str, role: str, under: str | None = None) -> None:
    """The zygote's loop: preload, then fork a child per request line until stdin closes.

    ``under``: where its jobs' folder goes (the parent's folder, which the parent removes; a
    zygote is killed, so it cannot remove its own). Default: the temp folder.
    """
    if mode == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    if role == "judge":
        _non_dumpable()
    import torch  # noqa: F401 - preloaded so children fork warm  # pyright: ignore[reportUnusedImport]

    try:  # importing torch._dynamo later would patch torch functions mid-check
        import torch._dynamo  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        pass
    try:
        import triton  # noqa: F401  # pyright: ignore[reportMissingTypeStubs, reportUnusedImport]
        import triton.language  # noqa: F401  # pyright: ignore[reportMissingTypeStubs, reportUnusedImport]
    except ImportError:
        pass
    import torch.utils.cpp_extension  # noqa: F401  # pyright: ignore[reportUnusedImport]

    import upskills.verify.worker  # noqa: F401  # pyright: ignore[reportUnusedImport]

    if role == "judge":
        import upskills.verify.judge  # noqa: F401  # pyright: ignore[reportUnusedImport]
        import upskills.verify.judge_timing  # noqa: F401  # pyright: ignore[reportUnusedImport]
        from upskills.verify.libraries import installed_prefixes

        installed_prefixes()  # read before any candidate runs: one cannot add a folder to it
    else:
        import upskills.verify.candidate_host  # noqa: F401  # pyright: ignore[reportUnusedImport]
        from upskills.verify.guards import launcher_code_roots

        launcher_code_roots()  # read before any candidate runs: one cannot add a folder to it
    # the unprivileged candidates' folders; each child sets its source's compile caches
    root = _prepare_candidate_root() if role == "candidate" else None
    jobs = Path(tempfile.mkdtemp(prefix=f"upskills-{role}-jobs-", dir=under))
    out = sys.stdout
    out.write(READY + "\n")
    out.flush()
    count = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        count += 1
        log_path = str(jobs / f"log{count}.txt")
        out.flush()
        sys.stderr.flush()
        pid, result_fd, workdir = _fork_job(role, request, log_path, jobs, root)
        start = time.monotonic()
        timed_out, code, data = _wait(pid, float(request["timeout_s"]), result_fd)
        result = None
        if data:
            try:
                result = json.loads(data)
            except ValueError:
                result = None
        log = ""
        try:
            log = Path(log_path).read_text(errors="replace")[-6000:]
            os.unlink(log_path)
        except OSError:
            pass
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        reply = {
            "timed_out": timed_out,
            "exit_code": code,
            "elapsed": time.monotonic() - start,
            "result": result,
            "log": log,
        }
        out.write(json.dumps(reply) + "\n")
        out.flush()
    shutil.rmtree(jobs, ignore_errors=True)


def _fork_job(
    role: str, request: dict[str, Any], log_path: str, jobs: Path, root: Path | None
) -> tuple[int, int | None, str]:
    """Fork the job's child: ``(pid, result pipe or None, candidate workdir or '')``."""
    if role == "judge":
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _judge_child(request, write_fd, log_path)
        os.close(write_fd)
        return pid, read_fd, ""
    workdir = tempfile.mkdtemp(prefix="c", dir=(root / "work") if root else jobs)
    ids = sandbox_ids() if root is not None else None
    if ids is not None:
        os.chown(workdir, *ids)
    pid = os.fork()
    if pid == 0:
        _candidate_child(request, log_path, workdir, root)
    sys.stdout.write(json.dumps({"pid": pid}) + "\n")
    sys.stdout.flush()
    return pid, None, workdir


if __name__ == "__main__":
    serve(
        sys.argv[1] if len(sys.argv) > 1 else "cpu",
        sys.argv[2] if len(sys.argv) > 2 else "judge",
        sys.argv[3] if len(sys.argv) > 3 else None,
    )
