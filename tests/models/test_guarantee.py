"""The probabilistic guarantee of BoundedImprovement(delta=...), checked over many draws.

Scores u ~ U(0, 1) and a loss with conditional mean u / 4: the true selective risk of
the rule that accepts u <= theta is theta / 8, so every fitted rule can be judged
exactly. The target 0.1 is met by theta <= 0.8, so most draws are feasible and the
guarantee is really tested.
"""

import warnings

import numpy as np
import pytest

from abstain import BoundedImprovement, InfeasibleTargetWarning

TARGET, DELTA, N, DRAWS = 0.1, 0.1, 2000, 400


def _violation_rate(make_losses, **params):
    rng = np.random.default_rng(12345)
    violations = feasible = 0
    for _ in range(DRAWS):
        u = rng.random(N)
        losses = make_losses(u, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            rule = BoundedImprovement(target_risk=TARGET, **params).fit(u, losses)
        true_risk = rule.threshold_ / 8 if rule.feasible_ else 0.0
        violations += true_risk > TARGET
        feasible += rule.feasible_
    assert feasible >= 0.9 * DRAWS, "the test must exercise feasible rules"
    return violations / DRAWS


def _zero_one(u, rng):
    return (rng.random(u.size) < u / 4).astype(float)


def _bounded(u, rng):
    return u * rng.random(u.size)  # in [0, 1], conditional mean u / 2 ...


def _bounded_quarter(u, rng):
    return 2.0 * _bounded(u, rng) / 4.0  # ... scaled to [0, 0.5], conditional mean u / 4


# Monte-Carlo slack: three standard errors of a Bernoulli(delta) mean over DRAWS draws.
SLACK = 3 * np.sqrt(DELTA * (1 - DELTA) / DRAWS)


@pytest.mark.slow
def test_binomial_guarantee_holds():
    assert _violation_rate(_zero_one, delta=DELTA) <= DELTA + SLACK


@pytest.mark.slow
def test_bounded_loss_guarantee_holds():
    assert _violation_rate(_bounded_quarter, delta=DELTA, loss_bound=0.5) <= DELTA + SLACK


@pytest.mark.slow
def test_empirical_optimum_has_no_guarantee():
    # Without delta the rule meets the target only on the calibration sample; its
    # true risk exceeds the target in about half of the draws.
    assert _violation_rate(_zero_one) > 0.3


def test_risk_bound_is_reported_and_above_empirical_risk():
    rng = np.random.default_rng(0)
    u = rng.random(5000)
    losses = _zero_one(u, rng)
    rule = BoundedImprovement(target_risk=0.1, delta=0.05).fit(u, losses)
    assert rule.feasible_ and rule.accept_prob_ == 1.0
    assert rule.risk_ <= rule.risk_bound_ <= 0.1
    plain = BoundedImprovement(target_risk=0.1).fit(u, losses)
    assert rule.coverage_ < plain.coverage_


def test_losses_above_loss_bound_are_refused():
    with pytest.raises(ValueError, match="loss_bound"):
        BoundedImprovement(0.5, delta=0.1, loss_bound=1.0).fit([0.1, 0.2], [0.5, 1.5])


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2.0, float("nan")])
def test_delta_out_of_range(delta):
    with pytest.raises(ValueError, match="delta"):
        BoundedImprovement(0.1, delta=delta).fit([0.1, 0.2], [0, 1])


def test_guarantee_infeasible_is_explicit():
    with pytest.warns(InfeasibleTargetWarning, match="risk bound"):
        rule = BoundedImprovement(0.01, delta=0.1).fit(np.arange(20.0), np.zeros(20))
    # 20 error-free samples cannot certify 1% risk at 90% confidence.
    assert not rule.feasible_ and rule.coverage_ == 0.0
    assert rule.accept_proba([-1e9]).tolist() == [0.0]
