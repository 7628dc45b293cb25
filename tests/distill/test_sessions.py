"""A later session on the same task starts from the last one's kernel: that change is a lesson."""

from __future__ import annotations

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TUNED, verdict, write_trace
from upskills.distill import DistillConfig, distill
from upskills.distill.episodes import link_sessions, summarize_trace
from upskills.distill.lessons import mine_trace

GPU = "NVIDIA H200"


def _sessions(tmp_path, second_kernel=ROW_SUM_TUNED, second_speedup=1.5, agent="coder"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    first = tmp_path / "s1.jsonl"
    second = tmp_path / "s2.jsonl"
    write_trace(
        first,
        [(ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=1.0, gpu=GPU))],
        started="2026-11-30T20:00:00.000000+00:00",
        session_agent=agent,
    )
    write_trace(
        second,
        [(second_kernel, verdict(second_kernel, True, speedup=second_speedup, gpu=GPU))],
        notes={0: ["Session 1 measured 1.00x; one change: num_warps=8 for more loads in flight."]},
        started="2026-11-30T22:00:00.000000+00:00",
        session_agent=agent,
    )
    return first, second


def test_the_second_session_is_read_as_a_change_to_the_first_ones_kernel(tmp_path):
    first, second = _sessions(tmp_path)
    s2, s1 = summarize_trace(second), summarize_trace(first)
    assert link_sessions([s2, s1]) == 1  # ordered by run_start, not by the list
    assert s1.prior is None and s2.prior is not None and s2.prior_trace == s1.trace_id
    perf = [x for x in mine_trace(s2) if x.kind == "perf"]
    assert len(perf) == 1
    effect = perf[0].effect
    assert (effect.speedup_before, effect.speedup_after) == (1.0, 1.5)
    assert effect.attribution == "isolated" and "num_warps" in (perf[0].example or "")
    assert "previous session" in effect.note and s1.trace_id in effect.note
    assert perf[0].sources[0].trace_id == s2.trace_id
    assert mine_trace(s1) and not [x for x in mine_trace(s1) if x.kind == "perf"]


def test_the_same_kernel_checked_again_links_nothing(tmp_path):
    first, second = _sessions(tmp_path, second_kernel=ROW_SUM_MASKED, second_speedup=1.02)
    s1, s2 = summarize_trace(first), summarize_trace(second)
    assert link_sessions([s1, s2]) == 0 and s2.prior is None


def test_independent_runs_on_one_task_are_not_chained(tmp_path):
    """Driven teacher runs (or students) are samples: one never continues another."""
    first, second = _sessions(tmp_path, agent=None)
    s1, s2 = summarize_trace(first), summarize_trace(second)
    assert link_sessions([s1, s2]) == 0 and s2.prior is None


def test_distill_counts_and_renders_the_cross_session_lesson(tmp_path):
    _sessions(tmp_path / "traces")
    result = distill([tmp_path / "traces"], tmp_path / "skills", None, DistillConfig())
    assert result.cross_session == 1
    lessons = "\n".join(p.read_text() for p in (tmp_path / "skills").rglob("lessons.md"))
    assert "1.00x -> 1.50x eager" in lessons and "previous session" in lessons


def test_a_change_that_rewrites_the_kernel_credits_no_technique(tmp_path):
    """One hunk that replaces most of the kernel is a rewrite: confounded, not 'launch config'."""
    from upskills.distill.changeset import split_changes
    from upskills.distill.perf import _rewrites

    head, _ = ROW_SUM_MASKED.split("@triton.jit", 1)
    rewritten = head + (
        "@triton.jit\n"
        "def row_sum_v2(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):\n"
        "    r = tl.program_id(0)\n"
        "    cols = tl.arange(0, BLOCK)\n"
        "    total = tl.zeros([BLOCK], dtype=tl.float32)\n"
        "    for s in range(0, N, BLOCK):\n"
        "        m = s + cols < N\n"
        "        total += tl.load(x_ptr + r * stride + s + cols, mask=m, other=0.0)\n"
        "    tl.store(out_ptr + r, tl.sum(total, axis=0))\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, t: torch.Tensor) -> torch.Tensor:\n"
        "        t = t.contiguous()\n"
        "        rows, n = t.shape\n"
        "        y = torch.empty(rows, device=t.device, dtype=t.dtype)\n"
        "        row_sum_v2[(rows,)](t, y, n, t.stride(0), BLOCK=256, num_warps=8)\n"
        "        return y\n"
    )
    changes = split_changes(ROW_SUM_MASKED, rewritten)
    assert len(changes) == 1 and _rewrites(ROW_SUM_MASKED, changes[0].removed)
    assert not _rewrites(ROW_SUM_MASKED, ("        row_sum_kernel[(M,)](x, out)",))
    path = tmp_path / "t.jsonl"
    write_trace(
        path,
        [
            (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True, speedup=1.0, gpu=GPU)),
            (rewritten, verdict(rewritten, True, speedup=1.6, gpu=GPU)),
        ],
    )
    perf = [x for x in mine_trace(summarize_trace(path)) if x.kind == "perf"]
    assert [x.technique for x in perf] == ["confounded"], [x.technique for x in perf]
    assert "rewrites most of the kernel" in perf[0].effect.note


def test_a_session_is_linked_to_the_earlier_final_it_changed_not_the_latest(tmp_path):
    """Two variants of one kernel tried side by side: each is a change to that kernel.

    Session 2 changes session 1's kernel one way (num_warps on the launch line), session 3
    another way (an eviction hint on the load), both written from session 1's final; session
    3's "before" is session 1's kernel, not session 2's, so its lesson is one change, not two.
    """
    first, second = _sessions(tmp_path)
    third = tmp_path / "s3.jsonl"
    hinted = ROW_SUM_MASKED.replace("other=0.0)", 'other=0.0, eviction_policy="evict_first")')
    assert hinted != ROW_SUM_MASKED
    write_trace(
        third,
        [(hinted, verdict(hinted, True, speedup=1.3, gpu=GPU))],
        notes={0: ["Session 1 measured 1.00x; beside session 2, one change: evict_first."]},
        started="2026-11-30T23:00:00.000000+00:00",
        session_agent="coder",
    )
    s1, s2, s3 = (summarize_trace(p) for p in (first, second, third))
    assert link_sessions([s1, s2, s3]) == 2
    assert s2.prior_trace == s1.trace_id and s3.prior_trace == s1.trace_id
    perf = [x for x in mine_trace(s3) if x.kind == "perf"]
    assert len(perf) == 1 and perf[0].effect.attribution == "isolated"
    example = perf[0].example or ""
    assert "evict_first" in example and "num_warps" not in example, example
