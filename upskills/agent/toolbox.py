"""The kernel tools an agent uses on one task: read, write, check, benchmark, profile, submit.

``KernelToolbox`` is shared by the driven loop (``run_agent``), the external-agent session
(``upskills session``) and the MCP server, so every kind of agent is judged by the same
verifier and leaves the same trace events. A tool returns a ``ToolOutcome``: concise text for the
model, plus the full Verdict and kernel source for the trace. The toolbox does not write traces.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from upskills.core.hashing import kernel_hash
from upskills.tasks.model import Task
from upskills.verify.verdict import ProfileReport, Verdict

SkillHandler = Callable[[dict[str, Any]], str]
"""Handler of the ``read_skill`` tool: arguments in, text out."""

KERNEL_TOOLS = ("read_task", "write_kernel", "check", "benchmark", "profile", "submit")
"""Tool names every toolbox has; ``read_skill`` is added when skills are attached on demand."""

_SOURCE_PROP = {
    "type": "string",
    "description": "Full Python source of the candidate module (defines class ModelNew).",
}
_TOOL_DEFS: dict[str, tuple[str, dict[str, Any]]] = {
    "read_task": (
        "Read the task: statement, PyTorch reference source, shape variants and the hardware.",
        {"type": "object", "properties": {}},
    ),
    "write_kernel": (
        "Store the full source of your candidate module as the current kernel. Returns its hash.",
        {"type": "object", "properties": {"source": _SOURCE_PROP}, "required": ["source"]},
    ),
    "check": (
        "Check correctness of the current kernel (or of `source`, which becomes the current "
        "kernel) on every shape variant and several seeds. No timing.",
        {"type": "object", "properties": {"source": _SOURCE_PROP}},
    ),
    "benchmark": (
        "Full verdict of the current kernel (or of `source`): correctness, then GPU timing and "
        "speedups against PyTorch eager and torch.compile. Timing is unavailable on CPU.",
        {"type": "object", "properties": {"source": _SOURCE_PROP}},
    ),
    "profile": (
        "Profile the current kernel (or `source`): it must pass; then its GPU time at the main "
        "variant against the roofline (minimum bytes vs measured copy bandwidth, FLOPs vs "
        "matmul peak: memory- or compute-bound, floor time, share achieved) and, where Nsight "
        "Compute runs, memory/compute throughput, occupancy and top warp stalls. On CPU: "
        "bytes, FLOPs and floors only.",
        {"type": "object", "properties": {"source": _SOURCE_PROP}},
    ),
    "submit": (
        "Submit the current kernel: a final check, then the run ends. Submit a kernel that passed.",
        {"type": "object", "properties": {}},
    ),
}


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced.

    Attributes:
        output: concise text for the model.
        verdict: the full Verdict (check, benchmark, profile, submit).
        profile: the ProfileReport (profile, when the kernel passed).
        kernel_source: source of the kernel the tool acted on.
        kernel_hash: its hash.
        error: why the tool itself failed (bad arguments, no kernel yet); None otherwise. A
            failing verdict is not a tool error.
    """

    output: str
    verdict: Verdict | None = None
    profile: ProfileReport | None = None
    kernel_source: str | None = None
    kernel_hash: str | None = None
    error: str | None = None


def summarize_verdict(verdict: Verdict) -> str:
    """A verdict as a few lines for a model: pass/fail, failure class, errors, speedups."""
    head = "PASSED" if verdict.passed else f"FAILED ({verdict.error_class}, stage {verdict.stage})"
    lines = [f"{head} on {verdict.device}" + (f" [{verdict.gpu}]" if verdict.gpu else "")]
    if verdict.message:
        lines.append(verdict.message.strip()[:2000])
    per_variant: dict[str, list[Any]] = {}
    for r in verdict.variants:
        per_variant.setdefault(r.variant, []).append(r)
    for name, results in per_variant.items():
        failed = [r for r in results if not r.passed]
        errs = [r.max_abs_err for r in results if r.max_abs_err is not None]
        rels = [r.max_rel_err for r in results if r.max_rel_err is not None]
        status = "ok" if not failed else f"FAIL {len(failed)}/{len(results)} seeds"
        detail = f"  variant {name}: {status}"
        if errs:
            detail += f", max_abs_err={max(errs):.3g}"
        if rels:
            detail += f", max_rel_err={max(rels):.3g}"
        if failed and failed[0].message and failed[0].message not in verdict.message:
            detail += f" ({failed[0].message.strip()[:300]})"
        lines.append(detail)
    if verdict.timing_status == "measured" and verdict.timing is not None:
        t = verdict.timing
        line = f"timing: {t.median_ms:.4f} ms median (spread {t.spread:.2f})"
        if t.late_calls:
            line += f" ({t.late_calls} of {t.reps} calls enqueued after the GPU's head start"
            line += f", which grew {t.head_start_x}x)" if (t.head_start_x or 1) > 1 else ")"
        if t.persisting_l2_bytes and t.persisting_l2_bytes > (t.persisting_l2_default_bytes or 0):
            default = t.persisting_l2_default_bytes
            line += (
                f" ({t.persisting_l2_bytes / 2**20:.1f} MiB of L2 set aside for persisting lines"
                + (f", above the context's default {default / 2**20:.2f} MiB" if default else "")
                + ": demoted before each call's flush, so nothing persists across calls)"
            )
        for base, speedup in (
            ("eager", verdict.speedup_eager),
            ("compile", verdict.speedup_compile),
        ):
            if speedup is not None:
                line += f"; speedup vs {base} {speedup:.2f}x"
                if base in verdict.baselines:
                    line += f" ({verdict.baselines[base].median_ms:.4f} ms)"
        lines.append(line)
    elif verdict.passed:
        lines.append(f"timing: {verdict.timing_status}")
    return "\n".join(lines)


def describe_task(task: Task, hw: Mapping[str, Any], device: str) -> str:
    """The ``read_task`` text: statement, reference, variants and hardware."""
    parts = [
        f"# {task.name}",
        task.statement,
        "",
        "## Reference",
        "```python",
        task.source.rstrip(),
    ]
    parts += ["```", "", "## Shape variants", format_variants(task), "", "## Hardware"]
    parts.append(format_hardware(hw, device))
    return "\n".join(parts)


def format_variants(task: Task) -> str:
    """One line per shape variant: name, globals, and whether it is timed, ragged, GPU only."""
    lines = []
    for v in task.all_variants():
        marks = (("timed", v.main), ("ragged", v.ragged), ("GPU only", not v.cpu))
        flags = [f for f, on in marks if on]
        sizes = ", ".join(f"{k}={val}" for k, val in v.globals.items()) or "module defaults"
        lines.append(f"- {v.name}: {sizes}" + (f" [{', '.join(flags)}]" if flags else ""))
    return "\n".join(lines)


def format_hardware(hw: Mapping[str, Any], device: str) -> str:
    """Hardware as prompt lines: GPU name, SMs, memory, bandwidth, shared memory, L2."""
    name = hw.get("name", "unknown")
    if name == "cpu" or device == "cpu":
        return (
            "- no GPU: kernels run in Triton's interpreter on the CPU "
            "(correctness only; timing unavailable)"
        )
    lines = [f"- GPU: {name}"]
    if hw.get("compute_capability"):
        lines[0] += f" (compute capability {hw['compute_capability']})"
    labels = (
        ("sm_count", "streaming multiprocessors: {}"),
        ("memory_gb", "memory: {} GB"),
        ("bandwidth_gbs", "memory bandwidth: {} GB/s"),
        ("smem_per_block_kb", "shared memory per block: {} KB"),
        ("l2_cache_mb", "L2 cache: {} MB"),
    )
    lines += [f"- {label.format(hw[key])}" for key, label in labels if hw.get(key) is not None]
    return "\n".join(lines)


class KernelToolbox:
    """The tools for one task, backed by the verifier.

    Args:
        task: the task being solved.
        device: verifier device: ``auto``, ``cpu`` or ``cuda``.
        options: ``CheckOptions`` for ``benchmark`` and ``submit``; ``check`` uses the same
            options with timing and baselines off.
        verifier: a warm ``Verifier`` to reuse; one is created on first use otherwise (and
            closed by ``close``).
        skill_tool: ``(ToolSpec, handler)`` for ``read_skill`` (from
            ``upskills.skills.attach.read_skill_tool``); None when skills are not on demand.
        hardware: the hardware description to report; described on first use otherwise.
        ceilings: ceilings JSON for ``profile``; None reads ``UPSKILLS_CEILINGS``, else they
            are measured on CUDA (see ``upskills.verify.profile``).
    """

    def __init__(
        self,
        task: Task,
        *,
        device: str = "auto",
        options: Any = None,
        verifier: Any = None,
        skill_tool: tuple[Any, SkillHandler] | None = None,
        hardware: Mapping[str, Any] | None = None,
        ceilings: str | Path | None = None,
    ):
        self.task = task
        self.device = device
        self.options = options
        self._verifier = verifier
        self._own_verifier = verifier is None
        self._skill_tool = skill_tool
        self._hardware = dict(hardware) if hardware is not None else None
        self.ceilings = ceilings
        self.current_source: str | None = None
        """Source of the current kernel (the last one written or checked)."""

    @property
    def hardware(self) -> dict[str, Any]:
        """The verifier's description of the device (described once)."""
        if self._hardware is None:
            from upskills.agent.environment import hardware

            self._hardware = hardware(self.device)
        return self._hardware

    def tool_names(self) -> list[str]:
        """Names of the tools this toolbox offers."""
        return [*KERNEL_TOOLS, *(["read_skill"] if self._skill_tool else [])]

    def specs(self) -> list[Any]:
        """Tool specifications (``upskills.llm.base.ToolSpec``) for a model."""
        from upskills.llm.base import ToolSpec

        specs = [
            ToolSpec(name=name, description=desc, parameters=params)
            for name, (desc, params) in _TOOL_DEFS.items()
        ]
        if self._skill_tool:
            specs.append(self._skill_tool[0])
        return specs

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutcome:
        """Run tool ``name`` with ``arguments``; bad names or arguments give an error outcome."""
        args = dict(arguments or {})
        handlers: dict[str, Callable[[dict[str, Any]], ToolOutcome]] = {
            "read_task": self._read_task,
            "write_kernel": self._write_kernel,
            "check": lambda a: self._verify(a, timing=False),
            "benchmark": lambda a: self._verify(a, timing=True),
            "profile": self._profile,
            "submit": self._submit,
        }
        if self._skill_tool:
            handlers["read_skill"] = self._read_skill
        if name not in handlers:
            known = ", ".join(handlers)
            return _error(f"unknown tool {name!r}; the tools are: {known}")
        try:
            return handlers[name](args)
        except _ArgumentError as exc:
            return _error(f"{name}: {exc}")

    def close(self) -> None:
        """Close the verifier if this toolbox created it."""
        if self._own_verifier and self._verifier is not None:
            self._verifier.close()
            self._verifier = None

    def __enter__(self) -> KernelToolbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tools ---------------------------------------------------------------------------------

    def _read_task(self, args: dict[str, Any]) -> ToolOutcome:
        _no_args(args, allowed=())
        return ToolOutcome(output=describe_task(self.task, self.hardware, self.device))

    def _write_kernel(self, args: dict[str, Any]) -> ToolOutcome:
        _no_args(args, allowed=("source",))
        source = _source_arg(args, required=True)
        assert source is not None
        self.current_source = source
        h = kernel_hash(source)
        out = f"stored kernel {h} ({len(source.splitlines())} lines)"
        try:
            ast.parse(source)
        except SyntaxError as exc:
            out += f"\nwarning: it does not parse: line {exc.lineno}: {exc.msg}"
        return ToolOutcome(output=out, kernel_source=source, kernel_hash=h)

    def _verify(self, args: dict[str, Any], *, timing: bool, baselines: bool = True) -> ToolOutcome:
        _no_args(args, allowed=("source",))
        source = _source_arg(args, required=False)
        if source is not None:
            self.current_source = source
        if self.current_source is None:
            return _error("no kernel yet: call write_kernel(source) or pass `source`")
        return self._judge(self.current_source, timing=timing, baselines=baselines)

    def _profile(self, args: dict[str, Any]) -> ToolOutcome:
        from upskills.verify.profile import format_profile, profile_verdict

        judged = self._verify(args, timing=True, baselines=False)
        if judged.verdict is None or not judged.verdict.passed:
            if judged.verdict is None:
                return judged
            return replace(judged, output="profile: the kernel must pass first\n" + judged.output)
        assert judged.kernel_source is not None
        report = profile_verdict(
            self.task, judged.kernel_source, judged.verdict, ceilings=self.ceilings
        )
        return replace(judged, output=format_profile(report), profile=report)

    def _submit(self, args: dict[str, Any]) -> ToolOutcome:
        _no_args(args, allowed=())
        if self.current_source is None:
            return _error("no kernel to submit: call write_kernel(source) first")
        outcome = self._judge(self.current_source, timing=True)
        assert outcome.verdict is not None
        verb = "accepted" if outcome.verdict.passed else "rejected"
        return ToolOutcome(
            output=f"submitted kernel {outcome.kernel_hash}: {verb}\n{outcome.output}",
            verdict=outcome.verdict,
            kernel_source=outcome.kernel_source,
            kernel_hash=outcome.kernel_hash,
        )

    def _read_skill(self, args: dict[str, Any]) -> ToolOutcome:
        assert self._skill_tool is not None
        try:
            return ToolOutcome(output=self._skill_tool[1](args))
        except (KeyError, ValueError, FileNotFoundError, TypeError) as exc:
            detail = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            return _error(f"read_skill: {detail}")

    def _judge(self, source: str, *, timing: bool, baselines: bool = True) -> ToolOutcome:
        verdict = self._check(source, timing=timing, baselines=baselines)
        return ToolOutcome(
            output=summarize_verdict(verdict),
            verdict=verdict,
            kernel_source=source,
            kernel_hash=kernel_hash(source),
        )

    def _check(self, source: str, *, timing: bool, baselines: bool = True) -> Verdict:
        from upskills.verify import CheckOptions, Verifier

        base = self.options or getattr(self._verifier, "options", None) or CheckOptions()
        options = base
        if not timing or not baselines:
            options = base.model_copy(update={"timing": timing, "baselines": False})
        if self._verifier is None:
            self._verifier = Verifier(device=self.device, options=base)
        return self._verifier.check(self.task, source, options=options)


class _ArgumentError(ValueError):
    pass


def _error(message: str) -> ToolOutcome:
    return ToolOutcome(output=f"error: {message}", error=message)


def _no_args(args: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(args) - set(allowed))
    if extra:
        takes = ", ".join(allowed) if allowed else "no arguments"
        raise _ArgumentError(f"unexpected argument(s) {', '.join(extra)}; it takes {takes}")


def _source_arg(args: Mapping[str, Any], *, required: bool) -> str | None:
    source = args.get("source")
    if source is None or source == "":
        if required:
            raise _ArgumentError("missing `source` (the full module source)")
        return None
    if not isinstance(source, str):
        raise _ArgumentError(f"`source` must be a string, got {type(source).__name__}")
    return source
