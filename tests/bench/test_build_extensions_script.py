"""The pre-build script (benchmarks/corpus_live/build_extensions.py): stopped by its budget, it
kills its builds and removes the locks they held, so the checks that follow do not wait on them
(as they did in the sixteenth device session), with whatever else the killed builds wrote. With
``--ablation`` it builds the CUDA kernels the ablation still has to judge."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.distill.tracegen import ROW_SUM_HINTED_TUNED, ROW_SUM_MASKED, verdict, write_trace
from upskills.verify.sandbox import check_build_folder

ROOT = Path(__file__).resolve().parents[2]

# A "kernel" whose import takes torch's build lock, as load_inline does, and then builds for a
# minute. The comment names load_inline so the script counts it as an extension to build.
SLOW_BUILD = """
import os, time  # stands in for load_inline
from torch.utils.file_baton import FileBaton
lock = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "slow_ext", "lock")
os.makedirs(os.path.dirname(lock), exist_ok=True)
assert FileBaton(lock).try_acquire()
time.sleep(60)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the lock sweep needs /proc")
def test_stopped_by_its_budget_it_kills_its_builds_and_removes_their_locks(tmp_path, monkeypatch):
    folder = tmp_path / "sessions" / "slow-s1"
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"current_source": SLOW_BUILD}))
    ext = tmp_path / "ext"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(ext))
    built = check_build_folder(SLOW_BUILD)[0]  # where a check builds (as root: a private folder)
    lock = built / "slow_ext" / "lock"
    shutil.rmtree(built, ignore_errors=True)  # a private folder outlives the test: start empty
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "corpus_live" / "build_extensions.py"),
            str(folder),
        ],
        env=dict(os.environ, TORCH_EXTENSIONS_DIR=str(ext)),
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not lock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert lock.exists(), "the build never started"
    proc.send_signal(signal.SIGTERM)  # what timeout(1) sends when the budget runs out
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 124, out
    assert "builds killed" in out
    assert not lock.exists(), "the killed build's lock was left for the checks to wait on"
    # and nothing it half wrote: ninja could take a library a killed linker left as built
    assert not built.exists()


def test_the_ablation_mode_builds_the_cuda_kernels_the_ablation_still_has_to_judge(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks" / "corpus_live"))
    import build_extensions as be  # pyright: ignore[reportMissingImports]

    cuda = [s + "# built with load_inline\n" for s in (ROW_SUM_MASKED, ROW_SUM_HINTED_TUNED)]
    write_trace(
        tmp_path / "traces" / "t.jsonl",
        [
            (s, verdict(s, True, speedup=x, gpu="NVIDIA H200"))
            for s, x in zip(cuda, (2.0, 5.0), strict=True)
        ],
        task_origin="builtin",
    )
    got = be.ablation_sources(tmp_path / "traces", tmp_path / "no-cache.jsonl")
    sources = [s for _, s in got]
    assert sources[:2] == cuda and len(sources) > 2  # before, after, then each change alone
    assert all(name.startswith("row_sum-") for name, _ in got)
    assert len({name for name, _ in got}) == len(got)
