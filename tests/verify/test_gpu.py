"""GPU tests of the verifier: a kernel passing on CUDA with timing and baselines, illegal
memory access not leaking, timing guards, hardware description. Run: pytest -m gpu tests/verify
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.verify.conftest import GOOD_ADD, GOOD_ROW_SUM
from upskills.verify.verdict import ErrorClass

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cuda_verifier(tmp_path_factory):
    from upskills.verify import CheckOptions, Verifier

    cache = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("UPSKILLS_CACHE_DIR", str(cache))
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300)) as verifier:
        yield verifier
    mp.undo()


def test_kernel_passes_on_cuda_with_timing_and_speedups(cuda_verifier, add_task):
    v = cuda_verifier.check(add_task, GOOD_ADD)
    assert v.passed, v.message
    assert v.device == "cuda" and v.gpu and v.env.get("gpu") == v.gpu
    # every variant runs on GPU, including the cpu=False main one
    assert {r.variant for r in v.variants} == {"main", "small", "ragged", "random"}
    assert v.timing_status == "measured" and v.timing is not None
    assert v.timing.median_ms > 0 and v.timing.reps >= 50
    assert v.timing.p10_ms <= v.timing.median_ms <= v.timing.p90_ms
    assert set(v.baselines) == {"eager", "compile"}
    assert v.speedup_eager == pytest.approx(
        v.baselines["eager"].median_ms / v.timing.median_ms, rel=1e-3
    )
    assert v.speedup_compile is not None and v.speedup_compile > 0
    # a vector add is bandwidth-bound: a correct Triton kernel is within 3x of eager either way
    assert 0.33 < v.speedup_eager < 3.0


def test_baselines_are_cached_per_gpu_torch_and_task(cuda_verifier, add_task):
    from upskills.verify.baselines import lookup_baseline

    first = cuda_verifier.check(add_task, GOOD_ADD)
    entry = lookup_baseline(first.gpu or "", first.env["torch"], add_task.hash)
    assert entry is not None and entry.eager is not None
    second = cuda_verifier.check(add_task, GOOD_ADD)
    assert second.baselines["eager"] == first.baselines["eager"]  # same cached measurement


def test_fresh_baselines_are_timed_beside_the_kernel_and_not_cached(cuda_verifier, add_task):
    from upskills.verify import CheckOptions
    from upskills.verify.baselines import lookup_baseline

    first = cuda_verifier.check(add_task, GOOD_ADD)
    cached = lookup_baseline(first.gpu or "", first.env["torch"], add_task.hash)
    options = CheckOptions(seeds=1, timeout_s=300, fresh_baselines=True)
    fresh = cuda_verifier.check(add_task, GOOD_ADD, options)
    assert fresh.passed, fresh.message
    assert "baselines timed in this check" in fresh.message
    assert fresh.timing is not None and fresh.baselines["eager"].median_ms > 0
    assert fresh.speedup_eager == pytest.approx(
        fresh.baselines["eager"].median_ms / fresh.timing.median_ms, rel=1e-3
    )
    # the cache keeps the first measurement
    assert lookup_baseline(first.gpu or "", first.env["torch"], add_task.hash) == cached


def test_a_read_flush_is_recorded_and_its_baselines_cached_apart(cuda_verifier, add_task):
    from upskills.verify import CheckOptions
    from upskills.verify.baselines import lookup_baseline

    write = cuda_verifier.check(add_task, GOOD_ADD)
    read = cuda_verifier.check(
        add_task, GOOD_ADD, CheckOptions(seeds=1, timeout_s=300, flush="read")
    )
    assert write.passed and read.passed, (write.message, read.message)
    assert write.timing is not None and write.timing.flush == "write"
    assert read.timing is not None and read.timing.flush == "read"
    assert "flushed by a read" in read.message and "flushed by a" not in write.message
    assert read.baselines["eager"].flush == "read" == read.baselines["compile"].flush
    gpu, torch_version = read.gpu or "", read.env["torch"]
    cached = lookup_baseline(gpu, torch_version, add_task.hash, flush="read")
    assert cached is not None and cached.eager == read.baselines["eager"]
    assert lookup_baseline(gpu, torch_version, add_task.hash) != cached


# a correct add only in a process that is not root's: it passes where the judge (root) ran it
# as another user, and fails where the candidate shared the judge's user
ADD_ONLY_AS_ANOTHER_USER = GOOD_ADD.replace(
    "tl.store(out_ptr + offs, x + y, mask=mask)",
    "tl.store(out_ptr + offs, x + y * SIGN, mask=mask)",
).replace(
    "add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)",
    "add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, SIGN=_SIGN)",
).replace("BLOCK: tl.constexpr):", "BLOCK: tl.constexpr, SIGN: tl.constexpr):") + (
    "\nimport os\n_SIGN = 1 if os.geteuid() != 0 else -1\n"
)


def test_a_cuda_candidate_runs_as_another_user(cuda_verifier, add_task):
    """As root, CUDA candidates drop to ``nobody`` like CPU ones: the judge's buffers are VMM
    memory whose descriptors cross users (CUDA IPC handles did not), so a candidate can no
    longer write the judge's files (baseline caches of other judges among them)."""
    from upskills.verify.sandbox import sandbox_user_differs

    if not sandbox_user_differs():
        pytest.skip("not root (or UPSKILLS_SANDBOX_USER=none): candidates keep the user")
    v = cuda_verifier.check(add_task, ADD_ONLY_AS_ANOTHER_USER)
    assert v.passed, v.message
    assert v.timing_status == "measured"


def test_row_sum_kernel_passes_on_cuda(cuda_verifier, row_sum_task):
    v = cuda_verifier.check(row_sum_task, GOOD_ROW_SUM)
    assert v.passed, v.message
    assert v.timing_status == "measured"


def test_illegal_memory_access_does_not_leak(cuda_verifier, add_task):
    wild = GOOD_ADD.replace(
        "tl.store(out_ptr + offs, x + y, mask=mask)",
        "tl.store(out_ptr + offs + (1 << 40), x + y, mask=mask)",
    )
    v = cuda_verifier.check(add_task, wild)
    assert not v.passed and v.error_class == ErrorClass.CRASH, v.message
    assert "candidate.py" in v.message
    after = cuda_verifier.check(add_task, GOOD_ADD)
    assert after.passed, f"the crash leaked into the next verdict: {after.message}"


def test_candidate_that_cheats_only_when_timed(cuda_verifier, add_task):
    cheat = GOOD_ADD.replace(
        "    def forward(self, x, y):\n",
        "    calls = 0\n\n    def forward(self, x, y):\n        ModelNew.calls += 1\n"
        "        if ModelNew.calls > 40:\n"
        "            out = torch.zeros_like(x)\n"
        "            add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n"
        "            return out\n",
    )
    v = cuda_verifier.check(add_task, cheat)
    assert v.error_class == ErrorClass.GUARD and v.stage == "timing", v.message
    assert "returned a wrong result" in v.message


def test_timing_is_stable_across_checks(cuda_verifier, add_task):
    timings = [cuda_verifier.check(add_task, GOOD_ADD).timing for _ in range(3)]
    medians = [t.median_ms for t in timings if t is not None]
    assert len(medians) == 3, timings
    assert max(medians) / min(medians) - 1 < 0.25, timings


def test_a_forward_slow_on_the_host_is_counted_late():
    """``Timing.late_calls`` on the GPU: a forward that sleeps 3 ms on the host before its
    launch outlasts even the largest head start (~0.8 ms of spin, and the flush) on every timed
    call; the same add without the sleep is enqueued in time on most of them."""
    import time

    import torch

    from upskills.verify.timing import time_cuda

    x = torch.zeros(1 << 20, device="cuda")

    def slow() -> torch.Tensor:
        time.sleep(0.003)
        return x.add_(1)

    late, _ = time_cuda(slow, target_s=0.05, max_reps=40)
    fast, _ = time_cuda(lambda: x.add_(1), target_s=0.05, max_reps=40)
    assert late.late_calls == late.reps, late
    assert fast.late_calls is not None and fast.late_calls <= fast.reps // 2, fast


def test_a_host_slower_than_the_first_head_start_is_not_timed_after_a_few_calls():
    """A forward that sleeps 0.3 ms on the host before its launch: longer than the first head
    start (~0.1 ms of spin and the flush), shorter than the head start after two doublings. It
    is late on its first timed calls only, and its median is the add's own GPU time, timed side
    by side with the plain add; with a fixed head start it was the host's ~0.1 ms too."""
    import time

    import torch

    from upskills.verify.timing import time_cuda

    x = torch.zeros(1 << 20, device="cuda")

    def slow() -> torch.Tensor:
        time.sleep(0.0003)
        return x.add_(1)

    fast, _ = time_cuda(lambda: x.add_(1), target_s=0.05, max_reps=200)
    late, _ = time_cuda(slow, target_s=0.05, max_reps=200)
    assert late.late_calls is not None and late.late_calls <= late.reps // 4, late
    assert late.median_ms <= 1.5 * fast.median_ms + 0.002, (late, fast)


def test_no_timing_option(cuda_verifier, add_task):
    from upskills.verify import CheckOptions

    v = cuda_verifier.check(add_task, GOOD_ADD, CheckOptions(seeds=1, timing=False))
    assert v.passed and v.timing_status == "skipped" and v.timing is None


def test_describe_hardware_cuda():
    from upskills.verify import describe_hardware

    info = describe_hardware("cuda")
    assert info["sm_count"] > 0 and info["memory_gb"] > 1
    assert info["compute_capability"].count(".") == 1
    assert info["smem_per_block_kb"] and info["smem_per_block_kb"] >= 48
    if "H200" in info["name"]:
        assert info["bandwidth_gbs"] == 4800.0 and info["sm_count"] == 132


def test_baselines_script_writes_as_it_goes(tmp_path):
    out = tmp_path / "baselines.json"
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "baselines.py"),
        "--out",
        str(out),
        "--tasks",
        "vector_add",
        "relu",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    entries = json.loads(out.read_text())["entries"]
    assert {e["task"] for e in entries.values()} == {"vector_add", "relu"}
    assert all(e["eager"]["median_ms"] > 0 for e in entries.values())
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert again.stdout.count("already measured") == 2
