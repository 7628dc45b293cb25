"""The distiller's side of ablation: which judge, which cache, and what each episode got.

``Attribution`` is what ``mine_trace`` calls for a perf episode whose diff holds several
changes. With ``--ablate`` it runs ``ablate_episode`` with the production judge
(``VerifierJudge`` on ``--device``), or with a judge handed in by a caller (tests inject a
labelled test double here, and everything after the judge is the production code path).
Without ``--ablate`` it only reads an ablation cache made earlier (e.g. on a GPU machine), and
an episode nobody measured is confounded.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from upskills.distill.ablate import AblationCache, EpisodeAblation, Judge, ablate_episode
from upskills.distill.changeset import split_changes
from upskills.distill.episodes import Attempt, TraceSummary
from upskills.tasks.source import TaskError

if TYPE_CHECKING:
    from upskills.distill.pipeline import DistillConfig

NOT_MEASURED = "not measured one change at a time (run `upskills distill --ablate --device cuda`)"
"""Why an episode is confounded when no ablation ran."""


def _judged_task(trace: TraceSummary) -> str:
    """What the judge loads: the file a task came from, or a built-in task's name.

    A session records ``task_origin`` as ``builtin`` for a built-in task; handing that to the
    judge as a task name made every built-in episode unjudgeable (``unknown task 'builtin'``),
    found on 2026-12-04 when 77 of the 261 kernels still to ablate named ``builtin``.
    """
    origin = trace.task_origin
    return origin if origin and origin != "builtin" else trace.task


class Attribution:
    """Attributes multi-change perf episodes (a context manager: closes its verifier)."""

    def __init__(self, config: DistillConfig, judge: Judge | None = None) -> None:
        """Use ``judge`` (else a ``VerifierJudge`` on ``config.device``, started on first use)."""
        self.ablate = config.ablate
        self.device = config.device
        # the production judge's progress on stderr; a judge handed in (a test's, the plan's
        # recorder) judges nothing worth a line
        self.cache = AblationCache(
            config.ablation_cache, config.ablation_read, progress=config.ablate and judge is None
        )
        self._judge = judge
        self._own_judge: Any = None
        self.counts: Counter[str] = Counter()
        """Episodes by status (``ablated``, ``confounded``)."""

    def judge(self) -> Judge:
        """The judge (the production verifier unless one was handed in)."""
        if self._judge is None:
            from upskills.distill.ablate import VerifierJudge

            self._own_judge = VerifierJudge(self.device)
            self._judge = self._own_judge
        return self._judge

    def __call__(self, trace: TraceSummary, b: Attempt, a: Attempt) -> EpisodeAblation | None:
        """The attribution of one perf episode; None when its diff is a single change."""
        if len(split_changes(b.kernel_source, a.kernel_source)) <= 1:
            return None
        if not self.ablate and not self.cache.rows:
            out = EpisodeAblation(task=trace.task, status="confounded", reason=NOT_MEASURED)
        else:
            try:
                out = ablate_episode(
                    _judged_task(trace),
                    trace.task_hash,
                    b.kernel_source,
                    a.kernel_source,
                    self.judge() if self.ablate else None,
                    self.cache,
                )
                out.task = trace.task  # the name, also for a task loaded from a file
            except (ValueError, KeyError, OSError, TaskError) as exc:  # task cannot be loaded
                out = EpisodeAblation(
                    task=trace.task, status="confounded", reason=f"cannot judge {trace.task}: {exc}"
                )
        self.counts[out.status] += 1
        alone = sum(1 for eff in out.changes if eff.credited)
        if alone and out.status != "ablated":
            self.counts["with changes timed alone"] += 1
        return out

    def close(self) -> None:
        """Stop the verifier this object started (not one handed in), and the progress bar."""
        self.cache.close()
        if self._own_judge is not None:
            self._own_judge.close()
            self._own_judge = None

    def __enter__(self) -> Attribution:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
