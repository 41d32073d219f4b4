"""Certificates that hold exactly at the least target, and SGR whatever the row order.

Each check takes a fit at the least target that ``least_risk_bound`` returns (the knife
edge of the search) and tests the certified rule with exact rational arithmetic.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from abstain import BoundedImprovement
from abstain.models import least_risk_bound


def _binomial_cdf(k: int, m: int, p: float) -> Fraction:
    """``P(Binomial(m, p) <= k)``, exactly."""
    b = Fraction(p)
    return sum((math.comb(m, i) * b**i * (1 - b) ** (m - i) for i in range(k + 1)),
               Fraction(0))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_sgr_on_01_losses_passes_the_exact_clopper_pearson_test_at_its_least_target():
    # beta.isf rounded to nearest lay below the exact quantile about one time in two:
    # P(Bin(84, t) <= 16) = 0.05000000000000026 at a target certified at level 0.05
    rng = np.random.default_rng(1)
    for _ in range(40):
        n, nv = int(rng.integers(20, 200)), int(rng.integers(2, 8))
        u = rng.integers(0, nv, n).astype(float)
        losses = (rng.random(n) < (u + 1) / (2 * nv + 2)).astype(float)
        t = least_risk_bound(u, losses, delta=0.1, bound="sgr")
        rule = BoundedImprovement(t, delta=0.1, bound="sgr").fit(u, losses)
        if not rule.feasible_:
            continue
        acc = u <= rule.threshold_
        tests = max(1, math.ceil(math.log2(np.unique(u).size + 1)))
        assert _binomial_cdf(int(losses[acc].sum()), int(acc.sum()), t) <= Fraction(0.1 / tests)


def test_learn_then_test_binomial_passes_the_exact_test_at_its_least_target():
    # SciPy's bdtr compared with delta as it is: 0.10000000000000041 passed at delta 0.1
    rng = np.random.default_rng(2)
    for _ in range(40):
        n = int(rng.integers(50, 400))
        u = rng.random(n)
        losses = (rng.random(n) < u / 3).astype(float)
        t = least_risk_bound(u, losses, delta=0.1, bound="binomial")
        if t >= 1:
            continue
        rule = BoundedImprovement(t, delta=0.1, bound="binomial").fit(u, losses)
        assert rule.feasible_
        acc = (u <= rule.threshold_) & (np.arange(n) % 10 != 0)  # the tested rows
        assert _binomial_cdf(int(losses[acc].sum()), int(acc.sum()), t) <= Fraction(0.1)


@pytest.mark.parametrize("bound", ["hb", "wsr"])
def test_learn_then_test_bounds_in_other_units_are_at_most_the_target(bound):
    # the search ran at target / loss_bound rounded to nearest; its bound times loss_bound
    # came out one ulp above the target (0.04220569092890059 for 0.042205690928900585)
    rng = np.random.default_rng(10)
    for _ in range(12):
        n = int(rng.integers(50, 300))
        u = rng.integers(0, 30, n) / 30
        top = float(rng.choice([0.7, 0.3, 1.3, 3.0, 0.9]))
        losses = np.minimum(np.round(rng.random(n) * u * top, 2), top)
        t = least_risk_bound(u, losses, delta=0.2, bound=bound, loss_bound=top)
        if t >= top:
            continue
        rule = BoundedImprovement(t, delta=0.2, bound=bound, loss_bound=top).fit(u, losses)
        assert rule.feasible_ and rule.risk_bound_ <= t, (top, t, rule.risk_bound_)


def test_sgr_on_arrays_and_on_their_table_is_one_rule():
    # the arrays' group sums were once added in an order of the values, the table's in row
    # order: at a target between the two bounds the table certified another threshold
    rng = np.random.default_rng(0)
    from abstain import ScoreTable

    for _ in range(10):
        n = int(rng.integers(100, 300))
        u = rng.integers(0, 3, n) / 3
        losses = np.round(rng.random(n) * u, 3)
        a = BoundedImprovement(0.2, delta=0.1, bound="sgr").fit(u, losses)
        t = BoundedImprovement(0.2, delta=0.1, bound="sgr").fit(
            ScoreTable.from_arrays(u, losses))
        assert (a.risk_bound_, a.threshold_, a.coverage_) == (
            t.risk_bound_, t.threshold_, t.coverage_)


def test_sgr_refuses_a_loss_bound_whose_squares_underflow():
    # squares of losses near 2**-535 lost their bits among the subnormals (a wrong bound),
    # near 2**-540 the variance term divided by 0.0 (ZeroDivisionError)
    rng = np.random.default_rng(0)
    u = rng.random(100)
    losses = np.round(rng.random(100) * u, 2)
    for unit in (2.0**-535, 2.0**-540):
        with pytest.raises(ValueError, match=r"^loss_bound must be in \[2\*\*-485, 2\*\*485\]"):
            BoundedImprovement(0.3 * unit, delta=0.1, bound="sgr",
                               loss_bound=unit).fit(u, losses * unit)
        with pytest.raises(ValueError, match=r"^loss_bound must be in \[2\*\*-485, 2\*\*485\]"):
            least_risk_bound(u, losses * unit, delta=0.1, bound="sgr", loss_bound=unit)
    small = BoundedImprovement(0.3 * 2.0**-485, delta=0.1, bound="sgr",
                               loss_bound=2.0**-485).fit(u, losses * 2.0**-485)
    ones = BoundedImprovement(0.3, delta=0.1, bound="sgr", loss_bound=1.0).fit(u, losses)
    assert small.threshold_ == ones.threshold_


@pytest.mark.parametrize("bound", ["hb", "wsr"])
def test_a_target_beyond_float64_in_loss_bound_units_is_feasible(bound):
    # target / loss_bound overflowed to inf and Fraction(inf) ended in an OverflowError
    rng = np.random.default_rng(0)
    u = rng.random(200)
    losses = np.round(rng.random(200) * u, 2)
    rule = BoundedImprovement(1e10, delta=0.1, bound=bound, loss_bound=1e-300).fit(
        u, losses * 1e-300)
    assert rule.feasible_ and math.isfinite(rule.risk_bound_)
