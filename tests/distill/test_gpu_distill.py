"""GPU: a trace recorded with real timed verdicts on CUDA distills into measured numbers."""

from __future__ import annotations

import pytest

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, ROW_SUM_TUNED, write_trace
from upskills.distill import DistillConfig, distill
from upskills.skills.pack import load_pack


@pytest.mark.gpu
def test_gpu_trace_gives_measured_speedups_and_a_template_that_passes_on_cuda(tmp_path):
    from upskills.verify import CheckOptions, Verifier

    with Verifier(device="cuda", options=CheckOptions(seeds=1)) as verifier:
        bad = verifier.check("row_sum", ROW_SUM_TAIL_DROPPED)
        good = verifier.check("row_sum", ROW_SUM_MASKED)
        tuned = verifier.check("row_sum", ROW_SUM_TUNED)
        assert not bad.passed and bad.error_class == "mismatch"
        assert good.passed and tuned.passed, (good.message, tuned.message)
        assert good.speedup_eager and tuned.speedup_eager and good.gpu
        trace_id = write_trace(
            tmp_path / "traces" / "row_sum.jsonl",
            [(ROW_SUM_TAIL_DROPPED, bad), (ROW_SUM_MASKED, good), (ROW_SUM_TUNED, tuned)],
        )
        distill([tmp_path / "traces"], tmp_path / "skills", None, DistillConfig(min_prevalence=1))
        pack = load_pack(tmp_path / "skills" / "gpu-memory-access")
        assert f"measured on: {good.gpu}" in pack.body
        assert f"pass ({good.speedup_eager:.2f}x eager)" in pack.body
        assert f"trace `{trace_id}`" in pack.body
        # the run's best kernel (run_end) is the tuned one: its speed is the practice effect
        assert f"Final kernels using it: {tuned.speedup_eager:.2f}x eager" in pack.body
        script = pack.path / "scripts" / "row_sum_kernel.py"
        verdict = verifier.check("row_sum", script.read_text())
        assert verdict.passed and verdict.timing_status == "measured", verdict.message
