"""The risk bounds of ``sgr`` against the textbook inequalities, each at its stated level."""

import math

import numpy as np
import pytest
from scipy import stats

from abstain import BoundedImprovement
from abstain._certify.risk_bounds import risk_upper_bound


def _hoeffding(x, d):
    """One-sided Hoeffding: P(E > mean + t) <= exp(-2 m t^2) = d."""
    return x.mean() + math.sqrt(math.log(1 / d) / (2 * x.size))


def _bernstein(x, d):
    """Maurer and Pontil (2009), theorem 4, at confidence 1 - d: the sample variance with
    m - 1 in the denominator and ln(2 / d)."""
    m = x.size
    v = x.var(ddof=1)
    return x.mean() + math.sqrt(2 * v * math.log(2 / d) / m) + 7 * math.log(2 / d) / (3 * (m - 1))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("m", [2, 30, 2000])
def test_the_bound_of_bounded_losses_is_the_smaller_of_the_two_each_at_half_the_level(seed, m):
    rng = np.random.default_rng(seed)
    x = rng.beta(1, 30, m) if seed % 2 else rng.random(m)  # Bernstein or Hoeffding is smaller
    for level in (0.01, 0.1):
        want = min(_hoeffding(x, level / 2), _bernstein(x, level / 2), 1.0)
        got = risk_upper_bound(float(x.sum()), float(m), level, 1.0, False, float((x * x).sum()))
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
        # in units of a loss bound of 4
        got4 = risk_upper_bound(float(4 * x.sum()), float(m), level, 4.0, False,
                                float((16 * x * x).sum()))
        assert got4 == pytest.approx(4 * want, rel=1e-12)


@pytest.mark.parametrize("k, m", [(0, 1), (0, 20), (3, 20), (19, 20)])
def test_the_bound_of_01_losses_is_clopper_pearson(k, m):
    want = stats.beta.ppf(0.95, k + 1, m - k)
    assert risk_upper_bound(float(k), float(m), 0.05, 1.0, True, float(k)) == pytest.approx(want)
    assert risk_upper_bound(float(m), float(m), 0.05, 1.0, True, float(m)) == 1.0


def test_sgr_certifies_low_variance_losses_at_the_bernstein_bound_of_its_level():
    rng = np.random.default_rng(0)
    n = 2000
    u = rng.random(n)
    loss = rng.beta(1, 60, n)  # small variance: Bernstein is the smaller bound
    delta = 0.1
    rule = BoundedImprovement(target_risk=0.5, delta=delta, bound="sgr").fit(u, loss)
    assert rule.feasible_ and rule.coverage_ == 1.0  # every row passes: one prefix tested
    groups = n  # distinct scores
    level = delta / math.ceil(math.log2(groups + 1))
    want = min(_hoeffding(loss, level / 2), _bernstein(loss, level / 2))
    assert want == _bernstein(loss, level / 2)
    assert rule.risk_bound_ == pytest.approx(want, rel=1e-12)


def test_the_clopper_pearson_bound_at_tiny_levels():
    # beta.ppf(1 - level) took 1 - 5e-17 as 1: a bound of 1.0 for 2,000 rows without a loss
    for level, m, k in ((5e-17, 2000, 0), (1.6666666666666666e-10, 500, 3), (1e-300, 10**6, 7)):
        got = risk_upper_bound(float(k), float(m), level, 1.0, True, float(k))
        want = stats.beta.isf(level, k + 1, m - k)
        # the quantile at the level lowered by PVALUE_SLACK (1e-9) and one float up: at or
        # above SciPy's, by far less than the slack itself
        assert want <= got <= want * (1 + 1e-10), (level, m, k)
