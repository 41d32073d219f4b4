"""equivalent_: the parameters under which the other reject models return the same rule.

Checked against exhaustive search: every knot's empirical cost for the reject-cost
interval, and fresh bounded-improvement fits inside and just outside the target-risk
interval.
"""

import warnings

import numpy as np
import pytest

from abstain import BoundedAbstention, BoundedImprovement, CostBased, InfeasibleTargetWarning


def _random_case(rng):
    n = int(rng.integers(1, 15))
    u = rng.integers(0, 5, n).astype(float)
    losses = rng.integers(0, 3, n) / 2.0
    return u, losses


def _rule_cost(rule, u, losses, cost):
    c = rule.accept_proba(u)
    return float(np.mean(c * losses + (1 - c) * cost))


def _best_cost(u, losses, cost):
    """Lowest empirical cost over all deterministic threshold rules (exhaustive)."""
    candidates = [-np.inf, *np.unique(u)]
    return min(float(np.mean(np.where(u <= t, losses, cost))) for t in candidates)


def _fit_bi(u, losses, target):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        return BoundedImprovement(target_risk=target).fit(u, losses)


def _rules(u, losses, rng):
    yield BoundedAbstention(target_coverage=float(rng.uniform(0.05, 1.0))).fit(u, losses)
    yield _fit_bi(u, losses, float(rng.uniform(0.05, 1.0)))
    yield CostBased(reject_cost=float(rng.uniform(0.05, 1.0))).fit(u, losses)


@pytest.mark.parametrize("seed", range(60))
def test_equivalent_parameters_by_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    u, losses = _random_case(rng)
    for rule in _rules(u, losses, rng):
        eq = rule.equivalent_
        assert eq.target_coverage == pytest.approx(rule.coverage_)
        if rule.coverage_ > 0:
            again = BoundedAbstention(target_coverage=eq.target_coverage).fit(u, losses)
            assert again.risk_ == pytest.approx(rule.risk_, abs=1e-12)
        # Reject costs: inside the interval the rule attains the exhaustive minimum cost.
        if eq.reject_cost is not None:
            low, high = eq.reject_cost
            for cost in (low, (low + min(high, 5.0)) / 2, min(high, 5.0)):
                if cost > 0:
                    best = _best_cost(u, losses, cost)
                    assert _rule_cost(rule, u, losses, cost) == pytest.approx(best, abs=1e-12)
            for cost in (low - 1e-3, high + 1e-3):
                if 0 < cost < np.inf:
                    assert _rule_cost(rule, u, losses, cost) > _best_cost(u, losses, cost) - 1e-12
        # Target risk: a bounded-improvement fit at rho returns this coverage, and any
        # larger target a larger one (unless everything is accepted already).
        if eq.target_risk is not None:
            low, high = eq.target_risk
            assert low == pytest.approx(rule.risk_)
            fit = _fit_bi(u, losses, low) if low > 0 else None
            if fit is not None:
                assert fit.coverage_ == pytest.approx(rule.coverage_, abs=1e-9)
            if high < np.inf:
                assert high == low
                assert _fit_bi(u, losses, low + 1e-6).coverage_ > rule.coverage_
            else:
                assert rule.coverage_ == 1.0
        elif rule.coverage_ > 0 and rule.risk_ > 0:
            # No target risk gives this rule: its own risk already buys more coverage.
            assert _fit_bi(u, losses, rule.risk_).coverage_ > rule.coverage_ + 1e-12


def test_reject_all_rule():
    # Every group's mean loss is above the cost: rejecting everything is optimal.
    rule = CostBased(reject_cost=0.2).fit([0.1, 0.2], [1.0, 0.5])
    assert rule.coverage_ == 0.0 and rule.threshold_ == -np.inf
    assert rule.equivalent_.reject_cost == (0.0, 0.75)
    assert rule.equivalent_.target_risk is None


def test_cost_based_needs_both_arrays_or_none():
    with pytest.raises(ValueError, match="together"):
        CostBased(reject_cost=0.2).fit([0.1, 0.2])
