"""Statistics that do not overclaim: p floor, Holm, Wilson/Newcombe, and coverage by simulation."""

import math

import numpy as np

from upskills.lift.stats import (
    cluster_t_interval,
    holm,
    newcombe_paired,
    newcombe_tasks,
    paired_lift,
    sign_flip_test,
    wilson_clustered,
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


def test_clustered_binary_lifts_with_no_differing_case_get_an_interval_not_a_point():
    # 88 cases of 25 tasks, the same 12 solved in both arms: the lift is 0, not known to be 0
    names = [f"t{i % 25}" for i in range(88)]
    solved = [1.0 if i < 12 else 0.0 for i in range(88)]
    lift = paired_lift(solved, solved, names)
    assert lift.method == "newcombe-tasks" and lift.mean == 0.0
    assert lift.ci_low < -0.05 and lift.ci_high > 0.05

    # about as wide as 25 independent cases would give (3.4 of them solved), wider than 88 would
    def width(iv: tuple[float, float]) -> float:
        return iv[1] - iv[0]

    width_25 = width(newcombe_paired([1] * 3 + [0] * 22, [1] * 3 + [0] * 22))
    assert abs(width((lift.ci_low, lift.ci_high)) - width_25) < 0.03
    assert width((lift.ci_low, lift.ci_high)) > width(newcombe_paired(solved, solved)) + 0.05
    # one case a task: the plain Newcombe interval, which the scaled table reduces to
    one = [f"t{i}" for i in range(20)]
    arm, ref = [1.0] * 8 + [0.0] * 12, [1.0] * 8 + [0.0] * 12
    assert newcombe_tasks(arm, ref, one) == newcombe_paired(arm, ref)
    assert paired_lift(arm, ref, one).method == "newcombe"
    # every case better: still an interval, below 1 and above 0
    up = paired_lift([1.0] * 12, [0.0] * 12, [f"t{i % 4}" for i in range(12)])
    assert up.method == "newcombe-tasks" and 0.0 < up.ci_low < up.ci_high <= 1.0


def test_clustered_binary_lift_intervals_cover_by_simulation():
    """Tasks of 3 correlated cases, a rare flip between arms: the interval paired_lift picks
    (newcombe-tasks, whether or not a case differs) covers the true lift >= 93% of runs."""
    rng = np.random.default_rng(7)
    tasks, per = 20, 3
    names = [f"t{i}" for i in range(tasks) for _ in range(per)]
    for up, down in [(0.0, 0.0), (0.02, 0.0), (0.03, 0.01)]:
        hits = trials = 0
        methods: set[str] = set()
        for _ in range(600):
            easy = np.repeat(rng.random(tasks) < 0.4, per)  # a task's cases fail or pass together
            ref = (easy & (rng.random(tasks * per) < 0.9)).astype(float)
            arm = ref.copy()
            flip = rng.random(tasks * per)
            arm[(ref == 0) & (flip < up)] = 1.0
            arm[(ref == 1) & (flip < down)] = 0.0
            truth = up * (1 - ref.mean()) - down * ref.mean()  # expected lift given ref
            lift = paired_lift(arm.tolist(), ref.tolist(), names)
            methods.add(lift.method)
            hits += lift.ci_low - 1e-9 <= truth <= lift.ci_high + 1e-9
            trials += 1
        assert methods == {"newcombe-tasks"}
        assert hits / trials >= 0.93, (up, down, hits / trials)


def test_a_pass_rate_over_clustered_cases_is_widened_by_the_design_effect():
    # one case a task: the plain Wilson interval
    one = [f"t{i}" for i in range(20)]
    outcomes = [1.0] * 7 + [0.0] * 13
    assert wilson_clustered(outcomes, one) == wilson_interval(7, 20)
    # 3 cases a task that always agree: as wide as 7 independent tasks, not 21 cases
    names = [f"t{i}" for i in range(7) for _ in range(3)]
    agree = [1.0 if i < 3 else 0.0 for i in range(7) for _ in range(3)]
    low, high = wilson_clustered(agree, names)
    plain7 = wilson_interval(3, 7)
    assert abs(low - plain7[0]) < 1e-9 and abs(high - plain7[1]) < 1e-9
    # cases of a task that disagree as much as independent ones: the estimate is 1, shrunk
    # toward 3 (n / m) with one task's weight against the 7 tasks of the rarer outcome
    mixed = [1.0, 0.0, 0.0] * 7
    deff = (7 * 1.0 + 3.0) / 8
    low, high = wilson_clustered(mixed, names)
    expected = wilson_interval(7 / deff, 21 / deff)
    assert abs(low - expected[0]) < 1e-9 and abs(high - expected[1]) < 1e-9
    assert high - low < 1.15 * (wilson_interval(7, 21)[1] - wilson_interval(7, 21)[0])
    # nothing passed: no spread to estimate from, so the task count is the sample size
    assert wilson_clustered([0.0] * 21, names) == wilson_interval(0, 7)
    # one task of several cases: the interval of one observation, not a division by zero
    assert wilson_clustered([1.0, 0.0, 1.0], ["t", "t", "t"]) == wilson_interval(2 / 3, 1)


def test_the_clustered_pass_rate_interval_covers_by_simulation():
    """Tasks of 3 cases sharing a latent difficulty: the plain Wilson interval over cases
    undercovers, the clustered one covers >= 93%."""
    rng = np.random.default_rng(11)
    tasks, per, truth = 21, 3, 0.4
    names = [f"t{i}" for i in range(tasks) for _ in range(per)]
    plain_hits = clustered_hits = 0
    trials = 1000
    for _ in range(trials):
        p_task = rng.beta(0.8, 1.2, size=tasks)  # mean 0.4, strongly varying between tasks
        outcomes = (rng.random((tasks, per)) < p_task[:, None]).astype(float).ravel()
        low, high = wilson_interval(outcomes.sum(), outcomes.size)
        plain_hits += low <= truth <= high
        low, high = wilson_clustered(outcomes.tolist(), names)
        clustered_hits += low <= truth <= high
    assert clustered_hits / trials >= 0.93
    assert plain_hits / trials < 0.9  # what the cases alone claimed


def test_one_differing_case_does_not_halve_the_clustered_interval():
    # 21 tasks of 3 cases, 30 solved in both arms; then 1, 2, 3 cases flipped in other tasks.
    # An estimate of the design effect from one task would call the cases independent and
    # halve the interval the no-difference case gets; shrunk toward n / m it does not.
    names = [f"t{i}" for i in range(21) for _ in range(3)]
    ref = [1.0 if i < 30 else 0.0 for i in range(63)]
    widths = []
    for flips in range(4):
        arm = list(ref)
        for j in range(flips):
            arm[31 + 3 * j] = 1.0
        low, high = newcombe_tasks(arm, ref, names)
        assert low < flips / 63 < high
        widths.append(high - low)
    assert min(widths[1:]) > 0.8 * widths[0]
