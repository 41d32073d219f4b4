"""The reject models with losses, reject costs and target risks near the float64 maximum.

The fits keep their sums of losses and costs in units of a power of two (exact scaling):
each fitted rule is the ``fractions.Fraction`` reference's, with finite ``risk_`` and
``cost_``, where the plain float64 sums would overflow to ``inf``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference.metrics_ref import rule_acceptance, selection_coverage_risk
from reference.models_ref import (
    bounded_abstention_ref,
    bounded_improvement_ref,
    cost_based_ref,
    empirical_cost,
)

from abstain import BoundedAbstention, BoundedImprovement, CostBased, ScoreTable

MAX = float(np.finfo(np.float64).max)
HUGE = (MAX, 1e308, 2.0**1023, MAX / 3, 0.75e308, 1.0, 0.25, 0.0)


@st.composite
def huge_cases(draw, max_size: int = 6):
    n = draw(st.integers(1, max_size))
    losses = draw(hnp.arrays(np.float64, n, elements=st.sampled_from(HUGE)))
    uncertainty = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.1, 0.2, 0.3])))
    return uncertainty, losses


def _close(got: float, expected: float, rel: float = 1e-12) -> bool:
    return math.isclose(got, expected, rel_tol=rel, abs_tol=0.0)


def _exact(rule, u, losses):
    """Exact (coverage, risk) of the fitted rule on the fit rows."""
    c = rule_acceptance(u, rule.threshold_, rule.accept_prob_)
    return c, *selection_coverage_risk(losses, c)


@given(huge_cases(), st.sampled_from([0.2, 1e308, MAX, 2.0**1022, 1e-300]))
def test_cost_based_reaches_the_exact_least_cost(case, eps):
    u, losses = case
    rule = CostBased(eps).fit(u, losses)
    ref = cost_based_ref(u, losses, eps)
    assert math.isfinite(rule.cost_)
    assert _close(rule.cost_, float(ref.objective))
    c, coverage, risk = _exact(rule, u, losses)
    assert _close(float(empirical_cost(losses, c, eps)), float(ref.objective))
    assert rule.coverage_ == float(coverage)
    assert (math.isnan(rule.risk_) and coverage == 0) or _close(rule.risk_, float(risk))


@given(huge_cases(), st.sampled_from([0.2, 0.5, 0.75, 1.0]))
def test_bounded_abstention_risk_is_the_exact_least_risk(case, target):
    u, losses = case
    rule = BoundedAbstention(target).fit(u, losses)
    ref = bounded_abstention_ref(u, losses, target)
    assert _close(rule.risk_, float(ref.risk))
    low, high = rule.equivalent_.reject_cost or (0.0, 0.0)
    assert not math.isnan(low) and not math.isnan(high)


@given(huge_cases(), st.sampled_from([1e308, MAX, 2.0**1022, 0.5]))
def test_bounded_improvement_reaches_the_exact_largest_coverage(case, target):
    u, losses = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rule = BoundedImprovement(target).fit(u, losses)
        ref = bounded_improvement_ref(u, losses, target)
    assert rule.feasible_ == ref.feasible
    assert _close(rule.coverage_, float(ref.coverage))
    assert math.isfinite(rule.min_risk_)
    if ref.feasible:  # the risk of the stored rule (its accept_prob_ is a float)
        _, _, risk = _exact(rule, u, losses)
        assert _close(rule.risk_, float(risk))
        assert risk <= target * (1 + 1e-12)


def test_the_examples_of_the_issue():
    rule = CostBased(0.2).fit([0.1, 0.2, 0.3], [1e308] * 3)
    assert (rule.coverage_, rule.threshold_) == (0.0, -math.inf)  # rejecting costs 0.2 a row
    assert rule.cost_ == CostBased(0.2).fit([0.1, 0.2, 0.3], [1.0] * 3).cost_
    assert BoundedAbstention(1.0).fit([0.1, 0.2], [1e308, 1e308]).risk_ == 1e308
    # a reject cost near the float64 maximum: the sums of costs do not overflow either
    rule = CostBased(1e308).fit([0.1, 0.2, 0.3], [0.0, 0.0, 0.0])
    assert (rule.coverage_, rule.cost_) == (1.0, 0.0)
    rule = CostBased(1.5e308).fit([0.1, 0.2, 0.3], [1.6e308, 0.0, 0.0])
    assert (rule.coverage_, rule.cost_) == (1.0, 1.6e308 / 3)


def test_a_table_gives_the_same_rules():
    u, losses = np.array([0.1, 0.1, 0.2, 0.3]), np.array([4e307, 5e307, 0.0, 6e307])
    table = ScoreTable.from_arrays(u, losses)
    for model in (CostBased(1e307), BoundedAbstention(0.6), BoundedImprovement(4e307)):
        a, b = model.fit(u, losses), type(model)(**model.get_params()).fit(table)
        assert (a.threshold_, a.accept_prob_, a.coverage_, a.risk_) == \
            (b.threshold_, b.accept_prob_, b.coverage_, b.risk_)


@given(hnp.arrays(np.float64, st.integers(1, 10), elements=st.integers(0, 8).map(lambda k: k / 4)),
       st.sampled_from([0.25, 0.5, 0.75, 1.0]))
def test_scaling_by_a_power_of_two_scales_every_rule_bit_for_bit(losses, target):
    """Losses times 2**1000 (rescaled inside the fit) give the same rule, with risks and costs
    times 2**1000 exactly."""
    u = np.arange(losses.size) % 3 * 0.1
    c = 2.0**1000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [(CostBased(target).fit(u, losses), CostBased(target * c).fit(u, losses * c)),
                 (BoundedAbstention(target).fit(u, losses),
                  BoundedAbstention(target).fit(u, losses * c)),
                 (BoundedImprovement(target).fit(u, losses),
                  BoundedImprovement(target * c).fit(u, losses * c))]
    for small, big in pairs:
        assert (small.threshold_, small.accept_prob_, small.coverage_) == \
            (big.threshold_, big.accept_prob_, big.coverage_)
        assert (math.isnan(small.risk_) and math.isnan(big.risk_)) or \
            big.risk_ == small.risk_ * c
    assert pairs[0][1].cost_ == pairs[0][0].cost_ * c


def test_sgr_on_losses_whose_squares_overflow_is_refused_naming_loss_bound():
    from abstain import BoundedImprovement
    from abstain.models import least_risk_bound

    rng = np.random.default_rng(0)
    u = rng.random(200)
    losses = (rng.random(200) < u / 2) * 1e308
    message = (r"^loss_bound must be in \[2\*\*-485, 2\*\*485\] = .* for bound='sgr' with losses "
               r"other than 0/1 \(its variance term squares the losses\); got 1\.7e\+308\. "
               r"Multiply")
    with pytest.raises(ValueError, match=message):
        BoundedImprovement(0.5e308, delta=0.1, bound="sgr", loss_bound=1.7e308).fit(u, losses)
    with pytest.raises(ValueError, match=message):
        least_risk_bound(u, losses, 0.1, loss_bound=1.7e308, bound="sgr")
    # the Learn-then-Test procedures divide by loss_bound first: finite bounds
    rule = BoundedImprovement(0.5e308, delta=0.1, bound="hb", loss_bound=1.7e308).fit(u, losses)
    assert np.isfinite(rule.risk_bound_)
