import math

import pytest

from upskills.lift.stats import (
    bootstrap_ci,
    flips,
    geomean,
    paired_lift,
    pass_at_k,
    sign_flip_test,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),  # 1 - C(3,1)/C(5,1) = 1 - 3/5
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (4, 1, 3, 0.75),  # 1 - C(3,3)/C(4,3) = 1 - 1/4
        (3, 0, 1, 0.0),
        (3, 3, 3, 1.0),
        (10, 9, 2, 1.0),  # n - c < k: every draw of 2 holds a correct one
    ],
)
def test_pass_at_k_matches_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_1_is_the_fraction_correct():
    assert pass_at_k(7, 3, 1) == pytest.approx(3 / 7)


def test_pass_at_k_rejects_bad_counts():
    with pytest.raises(ValueError, match="at least 3 samples"):
        pass_at_k(2, 1, 3)
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


def test_geomean():
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert geomean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert geomean([]) is None


def test_sign_flip_exact_p_values():
    assert sign_flip_test([1, 1, 1]) == pytest.approx(2 / 8)
    assert sign_flip_test([1, 1, 1, 1, 1]) == pytest.approx(2 / 32)
    assert sign_flip_test([0, 0, 0]) == 1.0
    # clustered: two cases of task a flip together: sums (2, 1) -> |3|,|1|,|1|,|3|
    assert sign_flip_test([1, 1, 1], ["a", "a", "b"]) == pytest.approx(0.5)


def test_bootstrap_ci_constant_and_two_point():
    assert bootstrap_ci([0.5, 0.5, 0.5, 0.5]) == (0.5, 0.5)
    low, high = bootstrap_ci([0.0, 1.0])  # means 0, .5, 1 with prob 1/4, 1/2, 1/4
    assert (low, high) == (0.0, 1.0)


def test_bootstrap_resamples_clusters_not_cases():
    # both cases belong to one task: every resample draws that task -> the interval collapses
    assert bootstrap_ci([1.0, 0.0], ["t", "t"]) == (0.5, 0.5)
    assert bootstrap_ci([1.0, 0.0], ["t", "u"]) == (0.0, 1.0)


def test_bootstrap_is_deterministic_and_covers_the_mean():
    diffs = [0.0, 0.33, 1.0, 0.67, 0.0, 0.33, 1.0, 0.0, 0.67, 0.33]
    a = bootstrap_ci(diffs)
    assert a == bootstrap_ci(diffs)
    mean = sum(diffs) / len(diffs)
    assert a[0] < mean < a[1]
    assert 0.0 <= a[0] and a[1] <= 1.0


def test_paired_lift_counts_and_mean():
    lift = paired_lift([1.0, 0.5, 0.0, 1.0], [0.0, 0.5, 0.5, 0.0], ["a", "b", "c", "d"])
    assert lift.mean == pytest.approx((1 + 0 - 0.5 + 1) / 4)
    assert (lift.better, lift.worse, lift.n_cases, lift.n_clusters) == (2, 1, 4, 4)
    assert lift.ci_low <= lift.mean <= lift.ci_high
    # sums (1, 0, -.5, 1): |sum| >= 1.5 for patterns (+,.,+,+) and negation, x2 for case b
    # over 16 patterns: flips of b change nothing; of the 8 patterns over (a, c, d)
    # |±1 ±.5 ±1| >= 1.5 holds for (+,-,+), (-,+,-), (+,+,+), (-,-,-) -> 4/8
    assert lift.p_value == pytest.approx(0.5)
    assert "pp [" in lift.text()


def test_paired_lift_needs_equal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_lift([1.0], [1.0, 0.0])


def test_flips():
    assert flips([True, False, True, True], [False, True, True, False]) == (2, 1)


def test_nan_for_empty():
    assert all(math.isnan(x) for x in bootstrap_ci([]))
