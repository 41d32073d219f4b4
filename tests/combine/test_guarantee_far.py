"""abstain.combine._guarantee: the FAR guarantee of Algorithm 2 (far_guarantee), the
conformal threshold and GuaranteedDetector (Algorithm 3), the errors of far_guarantee,
conformal_threshold, the p-value functions and csi_statistic, and the slow test that the
guarantee holds over many calibration draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference.combine_ref import algorithm2_ref, algorithm3_ref
from scipy import stats

from abstain.combine import (
    GuaranteedDetector,
    conformal_pvalues,
    conformal_threshold,
    csi_statistic,
    empirical_pvalues,
    far_guarantee,
)


@pytest.mark.parametrize("n", [1, 10, 44, 45, 46, 100, 999, 1000, 5000])
@pytest.mark.parametrize("alpha, delta", [(0.05, 0.1), (0.01, 0.05), (0.2, 0.01), (0.5, 0.5)])
def test_far_guarantee_matches_algorithm_2(n, alpha, delta):
    g = far_guarantee(n, alpha, delta)
    assert g.rank == algorithm2_ref(n, alpha, delta)
    assert g.feasible == (g.rank > 0) == (n >= g.min_n)
    if g.feasible:
        assert stats.beta.sf(alpha, g.rank, n + 1 - g.rank) <= delta
        assert g.achieved_alpha <= alpha
        assert g.level == g.rank / (n + 1)
        if g.rank < n:  # the next order statistic would break the guarantee
            assert stats.beta.sf(alpha, g.rank + 1, n - g.rank) > delta


def _exact_rank(n, alpha, delta):
    """The largest rank l with Pr{FAR > alpha} <= delta, in rationals: the FAR of the l-th
    largest calibration value is Beta(l, n + 1 - l), and Pr{Beta(l, n + 1 - l) > alpha} =
    Pr{Binomial(n, alpha) <= l - 1}."""
    from fractions import Fraction

    a, d = Fraction(alpha), Fraction(delta)
    cdf = Fraction(0)
    for k in range(n):  # cdf = Pr{Binomial <= k}: the rank k + 1 is ok while it is <= delta
        cdf += math.comb(n, k) * a**k * (1 - a) ** (n - k)
        if cdf > d:
            return k
    return n


@pytest.mark.parametrize(("n", "alpha", "delta"), [
    (2000, 0.5, 1 - 2.0**-53), (2000, 0.5, 0.999999), (300, 0.25, 1 - 2.0**-50),
    (1000, 0.05, 0.1)])
def test_far_guarantee_is_the_exact_rank_near_delta_1(n, alpha, delta):
    # the upper tail near 1 rounds; the lower one does not
    g = far_guarantee(n, alpha, delta)
    assert g.rank == _exact_rank(n, alpha, delta)
    assert g.achieved_alpha <= alpha


@pytest.mark.parametrize(("n", "alpha", "rank"), [(300, 0.05, 15), (400, 0.3, 120),
                                                  (60, 0.5, 30)])
def test_a_delta_at_a_binomial_tail_is_settled_exactly(n, alpha, rank):
    # delta within round-off of Pr{FAR > alpha} of a rank is decided in exact arithmetic:
    # summed as Fractions that took 8 s at 3,000 rows and 240 s at 5,000; now as integers
    # over one denominator, the same decision
    for delta in (float(stats.beta.sf(alpha, rank, n + 1 - rank)),
                  float(np.nextafter(stats.beta.sf(alpha, rank, n + 1 - rank), 0.0)),
                  float(np.nextafter(stats.beta.sf(alpha, rank, n + 1 - rank), 1.0))):
        assert far_guarantee(n, alpha, delta).rank == _exact_rank(n, alpha, delta)


def test_achieved_alpha_is_at_most_alpha_on_the_boundary():
    delta = float(stats.beta.sf(0.05, 41, 960))  # the rank 41 exactly at delta
    g = far_guarantee(1000, 0.05, delta)
    assert g.rank == 41 and g.achieved_alpha <= 0.05


def test_min_n_is_the_smallest_feasible_size():
    for alpha, delta in [(0.05, 0.1), (0.01, 0.01), (0.3, 0.5), (0.1, 0.9)]:
        need = far_guarantee(10, alpha, delta).min_n
        assert need == math.ceil(math.log(delta) / math.log(1 - alpha))
        assert far_guarantee(need, alpha, delta).feasible
        assert need == 1 or not far_guarantee(need - 1, alpha, delta).feasible
    assert far_guarantee(1, 0.05, 0.1).min_n == 45


def test_detector_is_algorithm_3_with_ties(rng):
    for _ in range(10):
        n = int(rng.integers(45, 200))
        cal = rng.integers(0, 6, n).astype(float)
        test = rng.integers(-1, 8, 50).astype(float)
        det = GuaranteedDetector(alpha=0.05, delta=0.1).fit(cal)
        a = (det.rank_ + 0.99) / (n + 1)  # the level Algorithm 2 returns
        np.testing.assert_array_equal(~det.accept(test), algorithm3_ref(cal, test, a))
        np.testing.assert_array_equal(~det.accept(test),
                                      conformal_pvalues(cal, test) <= det.level_)


def test_conformal_threshold_is_the_order_statistic(rng):
    for n, alpha in [(20, 0.05), (99, 0.1), (1000, 0.05), (10, 0.1), (7, 0.2)]:
        cal = rng.normal(size=n)
        k = math.ceil((n + 1) * (1 - alpha))
        assert conformal_threshold(cal, alpha) == np.sort(cal)[k - 1]
        # E[FAR] <= alpha: FAR ~ Beta(l, n + 1 - l) with l = n + 1 - k
        assert (n + 1 - k) / (n + 1) <= alpha + 1e-12


def test_an_alpha_set_just_below_a_whole_count_is_kept(rng):
    # an absolute slack of 1e-9 took alpha = 0.1 - 1e-11 for 0.1 (n = 39: the 36th value,
    # where ceil((n + 1)(1 - alpha)) is 37); alpha = 0.07 still needs its rounding forgiven
    cal = np.arange(1.0, 40.0)
    assert conformal_threshold(cal, 0.1 - 1e-11) == 37.0
    assert conformal_threshold(cal, 0.05 - 1e-11) == 39.0
    assert conformal_threshold(cal, 0.1) == 36.0
    assert conformal_threshold(np.arange(1.0, 100.0), 0.07) == 93.0


def test_guaranteed_is_more_conservative_than_conformal(rng):
    cal = rng.normal(size=1000)
    det = GuaranteedDetector(alpha=0.05, delta=0.1).fit(cal)
    assert det.threshold_ > conformal_threshold(cal, 0.05)
    assert det.achieved_alpha_ <= 0.05


def test_function_errors():
    with pytest.raises(ValueError, match="n must be a positive integer; got 0"):
        far_guarantee(0, 0.05, 0.1)
    with pytest.raises(ValueError, match="n must be a positive integer; got 10.0"):
        far_guarantee(10.0, 0.05, 0.1)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\); got 0"):
        far_guarantee(10, 0.05, 0)
    with pytest.raises(ValueError, match="alpha must be a real number; got '0.1'"):
        far_guarantee(10, "0.1", 0.1)
    with pytest.raises(ValueError, match=r"cal_stat must hold at least ceil\(1/alpha\) = 20 "
                                         r"values for alpha=0.05; got 19"):
        conformal_threshold(np.zeros(19), 0.05)
    with pytest.raises(ValueError, match="cal_stat must not be empty"):
        conformal_pvalues([], [1.0])
    with pytest.raises(ValueError, match="stat must be finite"):
        empirical_pvalues([1.0, 2.0], [np.nan])
    with pytest.raises(ValueError, match=r"stat must be 2-D with 2 column\(s\) like cal_stat"):
        conformal_pvalues(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="cal_stat must be 1-D"):
        conformal_pvalues(np.zeros((3, 2, 1)), np.zeros(3))
    good = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"norm must have the shape of cos \(2, 3\)"):
        csi_statistic(good, np.ones((2, 2)), good, norm_train=good, shift_train=good)
    with pytest.raises(ValueError, match=r"shift_train must have 3 column\(s\)"):
        csi_statistic(good, good, good, norm_train=good, shift_train=np.ones((2, 2)))
    with pytest.raises(ValueError, match="shift_train must have non-zero column means"):
        csi_statistic(good, good, good, norm_train=good, shift_train=np.zeros((2, 3)))


DRAWS, N_CAL, ALPHA, DELTA = 2000, 1000, 0.05, 0.1


@pytest.mark.slow
@pytest.mark.parametrize("levels", [None, 40])
def test_far_guarantee_holds_over_many_calibration_draws(levels):
    """Fraction of calibration draws whose true FAR exceeds alpha: <= delta for Algorithm 2
    (within 3 Monte-Carlo standard errors), about one half for the plain conformal rule.

    Inlier statistic U(0, 1) (true FAR of threshold t: 1 - t) or, with ``levels``, U(0, 1)
    rounded down to a grid of 40 values (heavy ties; true FAR of t = k / 40: (39 - k) / 40).
    """
    rng = np.random.default_rng(2024)
    cal = rng.random((DRAWS, N_CAL))
    if levels:
        cal = np.floor(cal * levels) / levels

    def true_far(t):  # the tied FAR is a multiple of 1/levels: round it to that grid
        return 1 - t if not levels else (levels - 1 - round(t * levels)) / levels

    g = far_guarantee(N_CAL, ALPHA, DELTA)
    guaranteed = np.empty(DRAWS)
    plain = np.empty(DRAWS)
    for d in range(DRAWS):
        det = GuaranteedDetector(alpha=ALPHA, delta=DELTA).fit(cal[d])
        guaranteed[d] = true_far(det.threshold_)
        plain[d] = true_far(conformal_threshold(cal[d], ALPHA))
    exact = stats.beta.sf(ALPHA, g.rank, N_CAL + 1 - g.rank)  # Pr{FAR > alpha}, continuous case
    violations = np.mean(guaranteed > ALPHA)
    slack = 3 * math.sqrt(DELTA * (1 - DELTA) / DRAWS)
    assert violations <= DELTA + slack
    if not levels:
        assert abs(violations - exact) <= slack
        assert abs(plain.mean() - ALPHA) < 0.002  # E[FAR] = l / (n + 1) ~ alpha
        assert np.mean(plain > ALPHA) > 0.3  # the in-expectation rule fails about half the time
    print(f"levels={levels}: Pr(FAR > alpha) guaranteed {violations:.4f} (exact {exact:.4f}), "
          f"plain conformal {np.mean(plain > ALPHA):.4f}")


@pytest.mark.parametrize(("alpha", "delta"), [(1e-25, 0.1), (1e-30, 0.1), (5e-324, 5e-324),
                                              (1e-13, 1e-300), (0.5, 5e-324), (1e-9, 0.5)])
def test_min_n_of_tiny_alpha_is_closed_form(alpha, delta):
    """No loop over calibration sizes: a tiny alpha or delta gives min_n at once, and it
    is the least n with (1 - alpha)^n <= delta (checked in exact decimal arithmetic)."""
    from decimal import Decimal, localcontext

    g = far_guarantee(1000, alpha, delta)
    need = g.min_n
    assert not g.feasible and (g.rank, g.level, g.achieved_alpha) == (0, 0.0, 0.0)
    with localcontext() as ctx:
        ctx.prec = 1200  # 1 - alpha exact for every float alpha
        log_q = (1 - Decimal(alpha)).ln()
        log_d = Decimal(delta).ln()
        assert need * log_q <= log_d < (need - 1) * log_q
    with pytest.raises(ValueError, match=f"cal_stat must hold at least {need} values for "
                                         f"FAR <= alpha={alpha!r}"):
        GuaranteedDetector(alpha=alpha, delta=delta).fit(np.zeros(1000))


def test_the_float_path_and_the_decimal_path_agree():
    from abstain.combine._guarantee import _min_n, _min_n_decimal

    for alpha in (0.3, 0.05, 1e-3, 1e-6, 1e-11, 2e-13):
        for delta in (0.5, 0.1, 1e-3, 1e-30):
            assert _min_n(alpha, delta) == _min_n_decimal(alpha, delta)


def test_n_beyond_float64_counts_is_refused():
    assert far_guarantee(2**53, 1e-15, 0.1).feasible
    with pytest.raises(ValueError, match=r"n must be at most 2\*\*53 = 9007199254740992 \(the "
                                         r"largest calibration size float64 counts exactly\); "
                                         r"got 9007199254740993"):
        far_guarantee(2**53 + 1, 0.05, 0.1)


@pytest.mark.parametrize("alpha", [1e-300, 5e-324, 2.0**-60])
def test_conformal_threshold_names_the_exact_count_a_tiny_alpha_needs(alpha):
    from fractions import Fraction

    need = math.ceil(1 / Fraction(alpha))  # exact: not the float 1 / alpha (inf for 5e-324)
    with pytest.raises(ValueError, match=rf"cal_stat must hold at least ceil\(1/alpha\) = "
                                         rf"{need} values for alpha={alpha!r}; got 3\."):
        conformal_threshold([1.0, 2.0, 3.0], alpha)
    assert conformal_threshold([1.0, 2.0, 3.0], 1 / 3) == 3.0  # the rounding of 1/3 forgiven


def _exact_rank(n, alpha, delta):
    """The largest rank l with Pr{Bin(n, alpha) <= l - 1} <= delta, in exact arithmetic."""
    from fractions import Fraction
    from math import comb

    a, d = Fraction(alpha), Fraction(delta)
    cdf, best = Fraction(0), 0
    for rank in range(1, n + 1):
        cdf += comb(n, rank - 1) * a ** (rank - 1) * (1 - a) ** (n - rank + 1)
        if cdf <= d:
            best = rank
    return best


@pytest.mark.parametrize(("n", "alpha"), [(78, 0.1), (47, 0.067), (14, 0.05), (30, 0.2),
                                          (60, 0.05)])
def test_a_delta_at_a_rounded_binomial_tail_gets_the_exact_rank(n, alpha):
    # the float tail compared with delta: one rank too many (the promise broken by 1e-17) or
    # one too few, and a min_n one row short
    from fractions import Fraction
    from math import comb

    a = Fraction(alpha)
    for k in range(0, 6):
        exact_tail = sum(comb(n, j) * a**j * (1 - a) ** (n - j) for j in range(k + 1))
        for delta in (float(exact_tail), np.nextafter(float(exact_tail), 0.0),
                      np.nextafter(float(exact_tail), 1.0)):
            if not 0.0 < delta < 1.0:
                continue
            g = far_guarantee(n, alpha, delta)
            assert g.rank == _exact_rank(n, alpha, delta), (n, alpha, delta)
            need = next(m for m in range(1, 10**4) if (1 - a) ** m <= Fraction(delta))
            assert g.min_n == need and g.feasible == (n >= need)


def test_a_tail_that_scipy_cannot_compute_is_refused():
    with pytest.raises(ValueError, match=r"^the binomial tail of n = 9007199254740992 rows at "
                                         r"alpha = 0\.5 is not computable in float64"):
        far_guarantee(2**53, 0.5, 0.5)


@pytest.mark.parametrize("n", [3, 10, 24])
def test_a_delta_equal_to_the_tail_of_rank_one_gives_that_size(n):
    # delta = 0.75**n exactly: rank 1 is feasible at n rows; the float quotient stepped one
    # past it (min_n n + 1, and n calibration rows refused)
    from fractions import Fraction

    from abstain.combine import GuaranteedDetector

    delta = 0.75**n
    assert Fraction(3, 4) ** n == Fraction(delta)
    g = far_guarantee(n, 0.25, delta)
    assert g.feasible and g.rank == 1 and g.min_n == n
    GuaranteedDetector(alpha=0.25, delta=delta).fit(np.arange(float(n)))


def test_conformal_threshold_of_an_alpha_within_round_off_of_one_is_the_smallest():
    # (n + 1) alpha rounded up to n + 1 gave k = 0, which read the largest value: a
    # threshold that flags nothing where alpha asks to flag nearly everything
    cal = np.arange(1.0, 10.0)
    for alpha in (1 - 1e-13, 1 - 2.0**-52):
        assert conformal_threshold(cal, alpha) == 1.0


def test_min_n_near_1e14_rows_is_the_least_n_in_80_digit_arithmetic():
    # float products of n near 1e14 and log1p(-alpha) decided n one row off (7 in 3,000
    # draws): min_n had (1 - alpha)**min_n above delta, or was one past the least n
    import decimal

    rng = np.random.default_rng(11)
    for _ in range(400):
        alpha = float(10.0 ** rng.uniform(-15, -12))
        delta = float(rng.uniform(1e-3, 0.99))
        with decimal.localcontext() as ctx:
            ctx.prec = 80
            q = decimal.Decimal(delta).ln() / (1 - decimal.Decimal(alpha)).ln()
            least = int(q.to_integral_value(rounding=decimal.ROUND_CEILING))
        assert far_guarantee(least, alpha, delta).min_n == least
