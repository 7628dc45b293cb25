"""Statistics that do not overclaim: p floor, Holm, Wilson/Newcombe, and coverage by simulation."""

import math

import numpy as np

from upskills.lift.stats import (
    cluster_t_interval,
    holm,
    newcombe_paired,
    paired_lift,
    sign_flip_test,
    wilson_interval,
)


def test_monte_carlo_p_value_is_floored_at_one_over_b_plus_one():
    diffs = [1.0] * 40  # every sign pattern but one gives a smaller statistic
    p = sign_flip_test(diffs, resamples=999)
    assert p >= 1 / 1000
    assert p <= 2 / 1000


def test_holm_matches_hand_computation():
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert math.isnan(holm([math.nan, 0.5])[0])


def test_wilson_known_values():
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and abs(high - 0.2775) < 1e-3
    low, high = wilson_interval(5, 10)
    assert abs(low - 0.2366) < 1e-3 and abs(high - 0.7634) < 1e-3


def test_one_task_gets_no_interval_and_few_binary_tasks_get_newcombe():
    one = paired_lift([1.0, 1.0], [0.0, 0.0], ["t", "t"])
    assert math.isnan(one.ci_low) and one.method == "none"
    few = paired_lift([1, 1, 0, 1], [0, 1, 0, 0], ["a", "b", "c", "d"])
    assert few.method == "newcombe"
    assert few.ci_low < 0 < few.ci_high  # 4 tasks cannot exclude zero here
    assert few.ci_high - few.ci_low > 0.5


def test_paired_wilson_interval_never_collapses_on_tiny_concordant_tables():
    low, high = newcombe_paired([1, 0], [1, 0])
    assert low < 0 < high


def _coverage(n_tasks: int, p_ref: float, p_arm: float, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    truth = p_arm - p_ref
    hits = 0
    for _ in range(trials):
        u = rng.random(n_tasks)  # correlated pairs: a shared latent difficulty
        ref = (u < p_ref).astype(float)
        arm = (u < p_arm).astype(float)
        flip = rng.random(n_tasks) < 0.2
        arm[flip] = (rng.random(flip.sum()) < p_arm).astype(float)
        low, high = newcombe_paired(arm.tolist(), ref.tolist())
        hits += low <= truth <= high
    return hits / trials


def test_newcombe_interval_covers_at_least_nominal_by_simulation():
    for n, p_ref, p_arm in [(5, 0.5, 0.5), (20, 0.4, 0.6), (25, 0.3, 0.3), (40, 0.5, 0.7)]:
        cov = _coverage(n, p_ref, p_arm, trials=800, seed=n)
        assert cov >= 0.93, (n, p_ref, p_arm, cov)


def test_clustered_interval_covers_near_nominal_with_many_tasks():
    rng = np.random.default_rng(1)
    names = [str(i) for i in range(30)]
    assert paired_lift(rng.normal(0.1, 0.3, size=30).tolist(), [0.0] * 30, names).method == "t"
    hits, trials = 0, 2000
    for _ in range(trials):
        low, high = cluster_t_interval(rng.normal(0.1, 0.3, size=30), names)
        hits += low <= 0.1 <= high
    assert hits / trials >= 0.93
