"""Build trace files for tests: real Triton kernels, verdicts from the real verifier or given.

``write_trace`` writes a short but complete trace (run_start, a model call, tool call and tool
result with the full Verdict and kernel source per attempt, run_end) with the event models.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from upskills.trace import TraceWriter
from upskills.trace.events import (
    ModelCall,
    Note,
    RunEnd,
    RunStart,
    ToolCall,
    ToolCallRequest,
    ToolResult,
)
from upskills.verify.verdict import ErrorClass, Verdict

_ROW_SUM = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
{loop}
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        out = torch.empty(M, device=x.device, dtype=x.dtype)
        row_sum_kernel[(M,)](x, out, N, x.stride(0), BLOCK=128)
        return out
"""

ROW_SUM_TAIL_DROPPED = _ROW_SUM.format(
    loop="""    for start in range(0, N - BLOCK + 1, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols)"""
)
"""Row sum over whole blocks only: correct when N is a multiple of 128, wrong on ragged rows."""

ROW_SUM_MASKED = _ROW_SUM.format(
    loop="""    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)"""
)
"""The fix: every block, the tail masked."""

ROW_SUM_TUNED = ROW_SUM_MASKED.replace("BLOCK=128)", "BLOCK=128, num_warps=8)")
"""The masked kernel with a launch-configuration change."""


def khash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def verdict(
    source: str,
    passed: bool,
    *,
    task: str = "row_sum",
    task_hash: str = "0" * 16,
    speedup: float | None = None,
    failing: tuple[str, ...] = ("ragged",),
    checked: tuple[str, ...] = ("small", "ragged"),
    error: ErrorClass = ErrorClass.MISMATCH,
    gpu: str | None = None,
) -> Verdict:
    """A hand-made Verdict, for tests of the distiller's logic (not of the verifier).

    A failing verdict lists a failing trial per ``failing`` variant and a passing one for each
    other ``checked`` variant, as the verifier does.
    """
    from upskills.verify.verdict import VariantResult

    variants = [
        VariantResult(
            variant=v, seed=0, passed=v not in failing, error_class=error if v in failing else None
        )
        for v in sorted(set(checked) | set(failing))
    ]
    return Verdict(
        task=task,
        task_hash=task_hash,
        candidate_hash=khash(source),
        device="cuda" if gpu else "cpu",
        gpu=gpu,
        passed=passed,
        error_class=None if passed else error,
        stage="done" if passed else "correctness",
        message="all variants pass" if passed else "variant ragged: max abs err 31.5 > tol 0.001",
        variants=[] if passed else variants,
        speedup_eager=speedup,
        timing_status="measured" if speedup else "unavailable",
    )


def write_trace(
    path: Path,
    attempts: list[tuple[str, Verdict]],
    *,
    task: str = "row_sum",
    task_hash: str | None = None,
    trace_id: str | None = None,
    outcome: str | None = None,
    notes: dict[int, list[str]] | None = None,
    started: str = "2026-01-01T00:00:00.000000+00:00",
    session_agent: str | None = None,
    task_origin: str | None = None,
) -> str:
    """Write a trace whose agent checks each (source, verdict) in turn; returns the trace id.

    ``notes[i]`` are note events the agent writes just before attempt ``i`` (after the
    previous attempt's verdict), as an external agent explains its next change. ``started``
    stamps every event (it orders sessions of one task); ``session_agent`` makes the trace an
    external agent's ``upskills session`` (else a driven teacher's run); ``task_origin`` is
    the file a task was loaded from (a KernelBench problem), as ``run_start`` records it.
    """
    task_hash = task_hash or (attempts[0][1].task_hash if attempts else "0" * 16)
    ts = started
    with TraceWriter(path, trace_id=trace_id) as w:
        tid = w.trace_id
        w.write(
            RunStart(
                trace_id=tid,
                ts=ts,
                task=task,
                task_hash=task_hash,
                agent_role="external" if session_agent else "teacher",
                agent_name=session_agent or "teacher",
                provider="mock",
                model="scripted-teacher",
                parameters=({"interface": "session"} if session_agent else {})
                | ({"task_origin": task_origin} if task_origin else {}),
            )
        )
        for i, (source, v) in enumerate(attempts):
            for text in (notes or {}).get(i, []):
                w.write(Note(trace_id=tid, ts=ts, text=text))
            call_id = f"c{i}"
            w.write(
                ModelCall(
                    trace_id=tid,
                    ts=ts,
                    provider="mock",
                    model="scripted-teacher",
                    response_text=f"attempt {i}",
                    tool_calls=[
                        ToolCallRequest(id=call_id, name="check", arguments={"source": source})
                    ],
                )
            )
            call = w.write(
                ToolCall(
                    trace_id=tid,
                    ts=ts,
                    tool_name="check",
                    call_id=call_id,
                    arguments={"source": source},
                )
            )
            w.write(
                ToolResult(
                    trace_id=tid,
                    ts=ts,
                    tool_name="check",
                    call_id=call_id,
                    parent_span_id=call.span_id,
                    output="PASS" if v.passed else "FAIL",
                    verdict=v,
                    kernel_source=source,
                    kernel_hash=khash(source),
                )
            )
        best = [(s, v) for s, v in attempts if v.passed]
        final = outcome or ("solved" if best else "unsolved")
        w.write(
            RunEnd(
                trace_id=tid,
                ts=ts,
                outcome=final,
                best_speedup=best[-1][1].speedup_eager if best else None,
                best_kernel_hash=khash(best[-1][0]) if best else None,
                best_kernel_source=best[-1][0] if best else None,
            )
        )
    return tid


ROW_SUM_HINTED = ROW_SUM_MASKED.replace(
    "        cols = start + tl.arange(0, BLOCK)",
    "        cols = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, BLOCK), BLOCK), BLOCK)",
)
"""The masked kernel with alignment/contiguity hints on its offsets (one change)."""

ROW_SUM_HINTED_TUNED = ROW_SUM_HINTED.replace("BLOCK=128)", "BLOCK=128, num_warps=8)")
"""Two separate changes from ``ROW_SUM_MASKED``: the hints and ``num_warps=8``."""
