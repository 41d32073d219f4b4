"""The probabilistic guarantee of BoundedImprovement(delta=..., bound=...), checked over
many draws for every procedure.

Scores u ~ U(0, 1) and a loss with conditional mean u / 4: the true selective risk of
the rule that accepts u <= theta is theta / 8, so every fitted rule can be judged
exactly. The target 0.1 is met by theta <= 0.8, so most draws are feasible and the
guarantee is really tested.
"""

import json
import math
import warnings

import numpy as np
import pytest

from abstain import BoundedImprovement, InfeasibleTargetWarning, load_json
from abstain.models import least_risk_bound

TARGET, DELTA, N, DRAWS = 0.1, 0.1, 600, 1000


def _violation_rate(make_losses, **params):
    rng = np.random.default_rng(12345)
    u_all = rng.random((DRAWS, N))  # every draw's data made at once
    losses_all = make_losses(u_all, rng)
    violations = feasible = 0
    for u, losses in zip(u_all, losses_all, strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            rule = BoundedImprovement(target_risk=TARGET, **params).fit(u, losses)
        # accepting u <= theta: true selective risk min(theta, 1) / 8
        true_risk = min(rule.threshold_, 1.0) / 8 if rule.feasible_ else 0.0
        violations += true_risk > TARGET
        feasible += rule.feasible_
    assert feasible >= 0.7 * DRAWS, "the test must exercise feasible rules"
    return violations / DRAWS


def _zero_one(u, rng):
    return (rng.random(u.shape) < u / 4).astype(float)


def _bounded(u, rng):
    return u * rng.random(u.shape)  # in [0, 1], conditional mean u / 2 ...


def _bounded_quarter(u, rng):
    return 2.0 * _bounded(u, rng) / 4.0  # ... scaled to [0, 0.5], conditional mean u / 4


# Monte-Carlo slack: three standard errors of a Bernoulli(delta) mean over DRAWS draws.
SLACK = 3 * np.sqrt(DELTA * (1 - DELTA) / DRAWS)


@pytest.mark.slow
@pytest.mark.parametrize("bound", ["sgr", "binomial", "hb", "wsr"])
def test_binomial_guarantee_holds(bound):
    assert _violation_rate(_zero_one, delta=DELTA, bound=bound) <= DELTA + SLACK


@pytest.mark.slow
@pytest.mark.parametrize("bound", ["sgr", "hb", "wsr"])
def test_bounded_loss_guarantee_holds(bound):
    rate = _violation_rate(_bounded_quarter, delta=DELTA, loss_bound=0.5, bound=bound)
    assert rate <= DELTA + SLACK


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


@pytest.mark.parametrize("bound", ["auto", "sgr", "binomial", "hb", "wsr"])
def test_every_bound_reports_its_procedure_and_round_trips(bound):
    rng = np.random.default_rng(1)
    u = rng.random(3000)
    losses = _zero_one(u, rng)
    rule = BoundedImprovement(0.1, delta=0.1, bound=bound, random_state=0).fit(u, losses)
    assert rule.bound_ == ("binomial" if bound == "auto" else bound)
    assert rule.feasible_ and rule.risk_bound_ <= 0.1
    back = load_json(rule.to_json())
    assert back.bound == bound and back.bound_ == rule.bound_
    assert back.threshold_ == rule.threshold_ and back.risk_bound_ == rule.risk_bound_
    new = rng.random(500)
    np.testing.assert_array_equal(back.accept(new), rule.accept(new))
    np.testing.assert_array_equal(rule.accept(new), new <= rule.threshold_)


def test_auto_takes_wsr_for_bounded_losses_and_accept_all_is_inf():
    rng = np.random.default_rng(2)
    u = rng.random(2000)
    rule = BoundedImprovement(0.3, delta=0.1).fit(u, _bounded_quarter(u, rng))
    assert rule.bound_ == "wsr" and rule.threshold_ == np.inf and rule.coverage_ == 1.0
    assert load_json(rule.to_json()).threshold_ == np.inf
    assert BoundedImprovement(0.3).fit(u, u / 4).bound_ is None


def test_ltt_beats_sgr_on_a_large_sample():
    rng = np.random.default_rng(3)
    u = rng.random(10000)
    losses = _zero_one(u, rng)
    cov = {b: BoundedImprovement(0.05, delta=0.1, bound=b).fit(u, losses).coverage_
           for b in ("sgr", "binomial")}
    assert cov["binomial"] > cov["sgr"]


def test_binomial_bound_refuses_other_losses():
    with pytest.raises(ValueError, match="bound='binomial' needs 0/1 losses"):
        BoundedImprovement(0.5, delta=0.1, bound="binomial").fit([0.1, 0.2], [0.5, 1.0])


def test_unknown_bound_is_refused():
    with pytest.raises(ValueError, match=r"^bound must be one of 'auto', 'sgr', 'binomial', "):
        BoundedImprovement(0.5, delta=0.1, bound="clopper").fit([0.1, 0.2], [0, 1])


def test_a_document_without_bound_is_refused():
    rule = BoundedImprovement(0.3, delta=0.2, bound="sgr").fit(np.arange(50.0), np.zeros(50))
    doc = json.loads(rule.to_json())
    back = load_json(json.dumps(doc))
    assert back.bound_ == "sgr" and back.threshold_ == rule.threshold_
    del doc["params"]["bound"], doc["fitted"]["bound_"]
    with pytest.raises(ValueError, match=r"^params\.bound is missing: a BoundedImprovement "
                       "document needs every parameter"):
        load_json(json.dumps(doc))


@pytest.mark.parametrize("bound", ["sgr", "binomial", "hb", "wsr"])
def test_least_risk_bound_is_the_edge_of_every_procedure(bound):
    rng = np.random.default_rng(4)
    for _ in range(12):
        n = int(rng.integers(1, 400))
        u = rng.integers(0, int(rng.integers(1, 40)), n).astype(float)
        loss = (rng.random(n) < 0.2 * u / max(u.max(), 1.0)).astype(float)
        if bound in ("hb", "wsr") and rng.random() < 0.5:
            loss = loss * rng.random(n)
        least = least_risk_bound(u, loss, 0.1, bound=bound)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            assert BoundedImprovement(min(least, 1.0), delta=0.1, bound=bound).fit(
                u, loss).feasible_
            assert not BoundedImprovement(least * (1 - 1e-9), delta=0.1, bound=bound).fit(
                u, loss).feasible_


@pytest.mark.parametrize(("losses", "target"), [
    ([0.5, 0.0, 1.7e308], math.nextafter(0.25, 1.0)),  # the share underflows
    ([1e-300, 0.0, 1e300], 2e-300),  # the next group's scaled sum beyond float64
])
def test_a_share_of_the_next_group_that_underflows_opens_none(losses, target):
    # the rule accepted the next group with probability 0.0, which load_json refuses in
    # the model's own document ("must be a finite number in (0, 1]")
    u = np.array([0.1, 0.2, 0.3])
    m = BoundedImprovement(target).fit(u, np.array(losses))
    assert (m.threshold_, m.accept_prob_) == (0.2, 1.0)
    assert load_json(m.to_json()).accept_proba(u).tolist() == m.accept_proba(u).tolist()
