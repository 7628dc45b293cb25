"""Statistics of a lift experiment: pass@k, speedups, paired lifts with task-clustered intervals.

Everything here is pure numpy over plain numbers, so it is tested against hand-computed values
and, for coverage, by simulation. A lift is a mean of per-case paired differences (arm minus
reference arm, same case, same seeds); its interval treats *tasks* (clusters of cases) as the
units, because cases of one task are not independent (:func:`lift_interval` says which
interval, and why).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 10_000
"""Bootstrap resamples for every confidence interval."""
BOOTSTRAP_SEED = 20240917
"""Fixed seed: the same results give the same interval."""
DEFF_PRIOR_TASKS = 1.0
"""Weight, in tasks, of the conservative design effect ``n / m`` that :func:`newcombe_tasks`
shrinks its estimate toward (chosen by ``benchmarks/lift_interval_coverage.py``: 0 let one
differing case halve the interval; 2 widened data-rich intervals past the t interval's)."""
MIN_BOOTSTRAP_CLUSTERS = 10
"""Below this many clusters the percentile bootstrap undercovers: use an exact/Wilson-type
interval where the data allow one, else keep the bootstrap and say it is unreliable."""
Z95 = 1.959963984540054
"""Normal quantile of a two-sided 95% interval."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct: 1 - C(n-c,k)/C(n,k).

    Args:
        n: samples drawn.
        c: correct samples among them.
        k: budget of attempts.

    Returns:
        The estimate in [0, 1].

    Raises:
        ValueError: ``k > n``, ``c > n`` or negative counts.
    """
    if n < 0 or c < 0 or c > n or k < 1:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and k >= 1, got n={n} c={c} k={k}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def geomean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive values, or None when there are none."""
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return float(math.exp(sum(math.log(v) for v in vals) / len(vals)))


@dataclass(frozen=True)
class PairedLift:
    """A paired difference over cases with its 95% interval (``method``) and paired test."""

    mean: float
    """Mean per-case difference (arm minus reference)."""
    ci_low: float
    """Lower end of the 95% interval (nan when there is none)."""
    ci_high: float
    """Upper end of the 95% interval (nan when there is none)."""
    p_value: float
    """Two-sided sign-flip permutation test p-value (clusters flipped together)."""
    n_cases: int
    """Cases paired."""
    n_clusters: int
    """Distinct tasks among them."""
    better: int
    """Cases whose difference is > 0."""
    worse: int
    """Cases whose difference is < 0."""
    method: str = "bootstrap"
    """How the interval was made: ``newcombe``, ``newcombe-tasks``, ``t``, ``t-few``,
    ``bootstrap``, ``bootstrap-few`` or ``none``."""

    def as_dict(self) -> dict[str, float | int | str | None]:
        """Plain dict for JSON (no interval, one task: ``None`` ends, never NaN)."""
        return {
            "mean": self.mean,
            "ci_low": None if math.isnan(self.ci_low) else self.ci_low,
            "ci_high": None if math.isnan(self.ci_high) else self.ci_high,
            "p_value": self.p_value,
            "n_cases": self.n_cases,
            "n_clusters": self.n_clusters,
            "better": self.better,
            "worse": self.worse,
            "method": self.method,
        }

    def text(self, percent: bool = True) -> str:
        """``+12.5 pp [+3.1, +20.0]`` (a lift is never shown without its interval)."""
        scale, unit = (100.0, " pp") if percent else (1.0, "")
        if math.isnan(self.ci_low):
            return f"{self.mean * scale:+.1f}{unit} [no interval: one task]"
        return (
            f"{self.mean * scale:+.1f}{unit} "
            f"[{self.ci_low * scale:+.1f}, {self.ci_high * scale:+.1f}]"
        )


def _cluster_sums(diffs: np.ndarray, clusters: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    names = sorted(set(clusters))
    index = {name: i for i, name in enumerate(names)}
    sums = np.zeros(len(names))
    counts = np.zeros(len(names))
    for d, c in zip(diffs, clusters, strict=True):
        sums[index[c]] += d
        counts[index[c]] += 1
    return sums, counts


def _clustered_variance(values: np.ndarray, clusters: Sequence[str]) -> tuple[float, float]:
    """The mean of ``values`` and its variance over ``clusters`` (ratio estimator, m - 1 df).

    Needs at least two clusters.
    """
    sums, counts = _cluster_sums(values, clusters)
    m, n = sums.size, counts.sum()
    mean = sums.sum() / n
    return float(mean), m / (m - 1) * float(np.sum((sums - mean * counts) ** 2)) / n**2


def bootstrap_ci(
    diffs: Sequence[float] | np.ndarray,
    clusters: Sequence[str] | None = None,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile CI of the mean difference, resampling clusters (tasks) with replacement.

    Args:
        diffs: per-case differences.
        clusters: cluster id per case (the task); None treats every case as its own cluster.
        resamples: bootstrap resamples.
        seed: RNG seed.
        level: confidence level.

    Returns:
        (low, high).
    """
    d = np.asarray(diffs, dtype=float)
    if d.size == 0:
        return (math.nan, math.nan)
    sums, counts = _cluster_sums(d, clusters or [str(i) for i in range(d.size)])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, sums.size, size=(resamples, sums.size))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def sign_flip_test(
    diffs: Sequence[float] | np.ndarray,
    clusters: Sequence[str] | None = None,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> float:
    """Two-sided paired permutation test: flip the sign of each cluster's differences.

    Exact (all 2^m sign patterns) for up to 16 clusters, Monte Carlo beyond.

    Args:
        diffs: per-case differences.
        clusters: cluster id per case; None means one cluster per case.
        resamples: Monte Carlo draws when not exact.
        seed: RNG seed.

    Returns:
        The p-value (1.0 when every difference is zero).
    """
    d = np.asarray(diffs, dtype=float)
    if d.size == 0 or not np.any(d):
        return 1.0
    sums, _ = _cluster_sums(d, clusters or [str(i) for i in range(d.size)])
    observed = abs(sums.sum())
    m = sums.size
    if m <= 16:
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1) * 2 - 1
    else:
        rng = np.random.default_rng(seed)
        patterns = rng.choice(np.array([-1, 1]), size=(resamples, m))
    stats = np.abs(patterns @ sums)
    hits = int(np.sum(stats >= observed - 1e-12))
    if m <= 16:
        return hits / len(patterns)
    # Monte Carlo: the observed labelling counts as one draw, so p >= 1/(B+1)
    return (hits + 1) / (resamples + 1)


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (nan, nan for n = 0).

    Counts may be fractional, as in an effective sample size (:func:`newcombe_tasks`).
    """
    if n <= 0:
        return (math.nan, math.nan)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def wilson_clustered(outcomes: Sequence[float], clusters: Sequence[str]) -> tuple[float, float]:
    """Wilson interval of a pass rate over cases that come in task clusters.

    The cases of a task are not independent, so the Wilson interval of the cases is too
    narrow when they agree. This one uses Kish's effective sample size ``n / deff``. The design
    effect's estimate is the clustered (ratio-estimator) variance of the rate over the binomial
    one, kept within [1, n / m]; it rests on the tasks of the rarer outcome (those with a pass
    when passes are rarer, else those with a failure), ``k`` of them, and is shrunk toward the
    bound ``n / m`` as in :func:`newcombe_tasks`. A rate of 0 or 1 gives the bound: the task
    count as the sample size. With one case a task it is :func:`wilson_interval`.
    """
    n, m = len(outcomes), len(set(clusters))
    if n == 0:
        return (math.nan, math.nan)
    rate = sum(outcomes) / n
    if m == n:
        return wilson_interval(sum(outcomes), n)
    values = np.asarray(outcomes, dtype=float)
    bound = n / m
    estimate = bound
    binomial = rate * (1 - rate) / n
    if binomial > 0 and m > 1:
        estimate = min(max(_clustered_variance(values, clusters)[1] / binomial, 1.0), bound)
    sums, counts = _cluster_sums(values, clusters)
    rarer = min(int(np.count_nonzero(sums > 0)), int(np.count_nonzero(sums < counts)))
    effective = n / _shrunk(estimate, bound, rarer)
    return wilson_interval(rate * effective, effective)


def _shrunk(estimate: float, bound: float, tasks: int) -> float:
    """A design effect estimated from ``tasks`` tasks, shrunk toward ``bound``.

    The bound weighs :data:`DEFF_PRIOR_TASKS` task.
    """
    return (tasks * estimate + DEFF_PRIOR_TASKS * bound) / (tasks + DEFF_PRIOR_TASKS)


def newcombe_paired(arm: Sequence[float], reference: Sequence[float]) -> tuple[float, float]:
    """Newcombe's (1998, method 10) Wilson-based interval for a difference of paired 0/1 outcomes.

    Args:
        arm: per-case outcome of the arm, each 0 or 1.
        reference: per-case outcome of the reference, each 0 or 1.

    Returns:
        (low, high) of the 95% interval of mean(arm) - mean(reference).
    """
    return _newcombe_counts(*_paired_counts(arm, reference))


def newcombe_tasks(
    arm: Sequence[float], reference: Sequence[float], clusters: Sequence[str]
) -> tuple[float, float]:
    """Newcombe's paired interval on the cases' 2x2 table scaled to Kish's effective size.

    Cases of one task are not independent, so the table's counts are divided by a design
    effect ``deff`` within [1, n / m]. Its estimate from the data is the clustered
    (ratio-estimator) variance of the mean paired difference over the variance the cases would
    give if independent. That estimate rests on the ``k`` tasks where the arms differ, so it
    is shrunk toward the conservative bound ``n / m`` (every task's cases perfectly correlated:
    the task count as the sample size) with the weight of :data:`DEFF_PRIOR_TASKS` task:
    ``deff = (k * estimate + n / m) / (k + 1)``. With no differing case that is ``n / m``; one
    differing case no longer halves the interval, as an estimate from one task did; with many
    it is the estimate. With one case per task it is :func:`newcombe_paired`.
    """
    n, m = len(arm), len(set(clusters))
    diffs = np.asarray(arm, dtype=float) - np.asarray(reference, dtype=float)
    bound = n / m
    differing = len({c for c, d in zip(clusters, diffs, strict=True) if d != 0})
    estimate = bound
    independent = float(np.var(diffs, ddof=1)) / n if n > 1 else 0.0
    if independent > 0 and m > 1:
        estimate = min(max(_clustered_variance(diffs, clusters)[1] / independent, 1.0), bound)
    deff = _shrunk(estimate, bound, differing)
    return _newcombe_counts(*(x / deff for x in _paired_counts(arm, reference)))


def _paired_counts(
    arm: Sequence[float], reference: Sequence[float]
) -> tuple[float, float, float, float]:
    """The paired 2x2 table: (both 1, arm only, reference only, both 0)."""
    pairs = list(zip(arm, reference, strict=True))
    a = sum(1 for x, y in pairs if x and y)
    b = sum(1 for x, y in pairs if x and not y)
    c = sum(1 for x, y in pairs if y and not x)
    return (a, b, c, len(pairs) - a - b - c)


def _newcombe_counts(a: float, b: float, c: float, d: float) -> tuple[float, float]:
    """Newcombe's method 10 on a paired 2x2 table (counts may be fractional)."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n)
    l2, u2 = wilson_interval(a + c, n)
    denom = math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    # Newcombe's recommended correction: shrink ad - bc by n/2 (else tiny tables collapse)
    num = max(a * d - b * c - n / 2, 0.0) if a * d > b * c else a * d - b * c
    phi = num / denom if denom > 0 else 0.0
    delta = p1 - p2
    low = delta - math.sqrt(
        max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    )
    high = delta + math.sqrt(
        max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    )
    return (max(-1.0, low), min(1.0, high))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given; nan stays nan)."""
    idx = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    order = sorted(idx, key=lambda i: p_values[i])
    m = len(order)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
"""Student t 0.975 quantiles for 1..10 degrees of freedom."""


def t975(df: int) -> float:
    """0.975 quantile of Student's t (table to 10 df, Cornish-Fisher expansion beyond)."""
    if df <= len(_T975):
        return _T975[max(df, 1) - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def cluster_t_interval(diffs: np.ndarray, clusters: Sequence[str]) -> tuple[float, float]:
    """95% t interval of a mean over clustered cases (ratio estimator, m - 1 df)."""
    mean, var = _clustered_variance(diffs, clusters)
    half = t975(len(set(clusters)) - 1) * math.sqrt(var)
    return (float(mean - half), float(mean + half))


def lift_interval(
    diffs_arm: np.ndarray,
    diffs_ref: np.ndarray,
    clusters: Sequence[str] | None,
    rates: bool = True,
) -> tuple[float, float, str]:
    """The 95% interval a paired lift can honestly claim, and the method used.

    One cluster: no interval (``none``). Binary outcomes with one case per cluster: Newcombe's
    paired Wilson interval (``newcombe``), good at any size. Binary outcomes with several cases
    per cluster: the same on the table scaled to Kish's effective sample size
    (``newcombe-tasks``, :func:`newcombe_tasks`): in simulation it covered at least as well as
    the t interval over clusters, which undercovers with rare flips (0.92 at 21-30 tasks), and
    it never collapses to a point when no case differs. Other scores: a t interval over task
    clusters (``t``; the percentile bootstrap undercovered in simulation: ~0.88 at 30 tasks),
    flagged ``t-few`` below :data:`MIN_BOOTSTRAP_CLUSTERS` clusters, where it leans on
    normality; a t interval of a difference of rates is clipped to [-1, 1], where the
    difference lies. All-equal differences of other scores fall back to the bootstrap (a
    degenerate point: every case moved by the same amount).
    """
    names = clusters or [str(i) for i in range(diffs_arm.size)]
    m = len(set(names))
    if m < 2:
        return (math.nan, math.nan, "none")
    binary = rates and all(v in (0.0, 1.0) for v in (*diffs_arm.tolist(), *diffs_ref.tolist()))
    if binary and m == diffs_arm.size:
        low, high = newcombe_paired(diffs_arm.tolist(), diffs_ref.tolist())
        return (low, high, "newcombe")
    if binary:
        low, high = newcombe_tasks(diffs_arm.tolist(), diffs_ref.tolist(), names)
        return (low, high, "newcombe-tasks")
    diffs = diffs_arm - diffs_ref
    if not np.any(diffs - diffs.mean()):
        low, high = bootstrap_ci(diffs, clusters)  # no spread: a t interval would be a point
        return (low, high, "bootstrap" if m >= MIN_BOOTSTRAP_CLUSTERS else "bootstrap-few")
    low, high = cluster_t_interval(diffs, names)
    if rates and all(0.0 <= v <= 1.0 for v in (*diffs_arm.tolist(), *diffs_ref.tolist())):
        low, high = max(low, -1.0), min(high, 1.0)  # a difference of rates lies in [-1, 1]
    return (low, high, "t" if m >= MIN_BOOTSTRAP_CLUSTERS else "t-few")


def paired_lift(
    arm: Sequence[float],
    reference: Sequence[float],
    clusters: Sequence[str] | None = None,
    rates: bool = True,
) -> PairedLift:
    """Paired lift of ``arm`` over ``reference`` (same cases, same order).

    Args:
        arm: per-case score of the arm (e.g. pass rate).
        reference: per-case score of the reference arm (baseline, placebo, excerpt).
        clusters: task of each case, for the clustered bootstrap and test.
        rates: the scores are rates in [0, 1] (an interval of their difference is clipped to
            [-1, 1]); False for unbounded scores such as log-likelihood margins.

    Returns:
        The mean difference, its 95% CI, p-value and counts of better/worse cases.
    """
    a = np.asarray(arm, dtype=float)
    r = np.asarray(reference, dtype=float)
    if a.shape != r.shape:
        raise ValueError(f"paired_lift needs equal lengths, got {a.size} and {r.size}")
    diffs = a - r
    low, high, method = (
        lift_interval(a, r, clusters, rates) if diffs.size else (math.nan,) * 2 + ("none",)
    )
    return PairedLift(
        mean=float(diffs.mean()) if diffs.size else math.nan,
        ci_low=low,
        ci_high=high,
        p_value=sign_flip_test(diffs, clusters),
        n_cases=int(diffs.size),
        n_clusters=len(set(clusters)) if clusters else int(diffs.size),
        better=int((diffs > 0).sum()),
        worse=int((diffs < 0).sum()),
        method=method,
    )


def flips(arm_solved: Sequence[bool], reference_solved: Sequence[bool]) -> tuple[int, int]:
    """Repairs (unsolved -> solved) and regressions (solved -> unsolved) between two arms."""
    repairs = sum(1 for a, r in zip(arm_solved, reference_solved, strict=True) if a and not r)
    regressions = sum(1 for a, r in zip(arm_solved, reference_solved, strict=True) if r and not a)
    return repairs, regressions
