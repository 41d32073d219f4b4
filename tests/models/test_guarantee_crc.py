"""BoundedImprovement(guarantee="expected_joint"): conformal risk control of the joint risk
E[loss * 1{accepted}], against a brute-force reference and over many draws."""

import json
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
from reference.crc_ref import crc_ref

from abstain import BinnedTable, BoundedImprovement, InfeasibleTargetWarning, ScoreTable, load_json
from abstain._certify.risk_bounds import crc_search
from abstain._core.groups import tie_groups
from abstain.models import least_risk_bound


def _fit(u, loss, target, loss_bound=1.0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        return BoundedImprovement(target, guarantee="expected_joint",
                                  loss_bound=loss_bound).fit(u, loss)


def test_matches_the_brute_force_reference_on_tied_data():
    # dyadic targets and losses keep the float sums exact, so the rules agree exactly
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        u = rng.integers(0, int(rng.integers(1, 12)), n).astype(float)
        if trial % 2:
            loss = (rng.random(n) < 0.4).astype(float)
            loss_bound = 1.0
        else:
            loss_bound = float(rng.choice([0.5, 1.0, 2.0]))
            loss = rng.integers(0, 9, n) / 8 * loss_bound * (rng.random(n) < 0.6)
        target = float(rng.choice([1 / 64, 1 / 32, 1 / 16, 0.125, 0.25, 0.375, 0.5, 1.0]))
        rule = _fit(u, loss, target, loss_bound)
        v, nu, bound = crc_ref(u.tolist(), loss.tolist(), target, loss_bound)
        assert rule.bound_ == "crc"
        assert rule.feasible_ == (bound is not None)
        assert rule.threshold_ == v
        assert rule.accept_prob_ == pytest.approx(float(nu), rel=1e-9, abs=1e-12)
        if bound is None:
            assert math.isnan(rule.risk_bound_) and rule.coverage_ == 0.0
        else:
            assert rule.risk_bound_ == pytest.approx(float(bound), rel=1e-9)
            assert rule.risk_bound_ <= target * (1 + 1e-12)


def test_a_table_gives_the_rule_of_its_rows_and_bins_accept_whole_bins():
    rng = np.random.default_rng(1)
    u = rng.integers(0, 30, 500).astype(float)
    loss = (rng.random(500) < u / 60).astype(float)
    rows = _fit(u, loss, 0.05)
    table = _fit(ScoreTable.from_arrays(u, loss), None, 0.05)
    assert (table.threshold_, table.accept_prob_) == (rows.threshold_, rows.accept_prob_)
    assert 0.0 < rows.accept_prob_ < 1.0  # the boundary group is randomised
    binned = _fit(BinnedTable.from_arrays(u, loss, edges=np.arange(-0.5, 30, 1.0)), None, 0.05)
    assert binned.accept_prob_ == 1.0 and binned.threshold_ < rows.threshold_
    accepted = loss[u <= binned.threshold_].sum()
    assert binned.risk_bound_ == pytest.approx((accepted + 1.0) / 501)
    assert binned.risk_bound_ <= 0.05


def test_round_trip_and_a_document_without_guarantee_is_refused():
    rng = np.random.default_rng(2)
    u = rng.random(300)
    rule = _fit(u, (rng.random(300) < u / 4).astype(float), 0.05)
    back = load_json(rule.to_json())
    assert back.guarantee == "expected_joint" and back.bound_ == "crc"
    assert (back.threshold_, back.accept_prob_, back.risk_bound_) == (
        rule.threshold_, rule.accept_prob_, rule.risk_bound_)
    everything = _fit(u, np.zeros(300), 0.05)
    assert everything.threshold_ == math.inf and everything.coverage_ == 1.0
    assert load_json(everything.to_json()).threshold_ == math.inf
    doc = json.loads(BoundedImprovement(0.3).fit(u, u / 4).to_json())
    assert load_json(json.dumps(doc)).guarantee is None
    del doc["params"]["guarantee"]
    with pytest.raises(ValueError, match=r"^params\.guarantee is missing: a BoundedImprovement "
                       "document needs every parameter"):
        load_json(json.dumps(doc))


def test_bad_inputs_are_refused():
    u, loss = [0.1, 0.2, 0.3], [0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match=r"guarantee='expected' is not offered: the selective "):
        BoundedImprovement(0.1, guarantee="expected").fit(u, loss)
    with pytest.raises(ValueError, match=r"^guarantee must be one of 'expected_joint'"):
        BoundedImprovement(0.1, guarantee="joint").fit(u, loss)
    with pytest.raises(ValueError, match=r"is a statement in expectation and takes no delta"):
        BoundedImprovement(0.1, delta=0.1, guarantee="expected_joint").fit(u, loss)
    with pytest.raises(ValueError, match=r"at most loss_bound=0.5 for conformal risk control"):
        BoundedImprovement(0.1, guarantee="expected_joint", loss_bound=0.5).fit(u, loss)
    with pytest.raises(ValueError, match="target_risk"):
        BoundedImprovement(-0.1, guarantee="expected_joint").fit(u, loss)
    with pytest.raises(ValueError, match="uncertainty"):
        BoundedImprovement(0.1, guarantee="expected_joint").fit([0.1, np.nan, 0.3], loss)
    # n + 1 = 4 rows cannot accept anything at target 0.2 < B / (n + 1) = 0.25
    with pytest.warns(InfeasibleTargetWarning, match=r"n \+ 1 = 4 rows give at least 0.25"):
        rule = BoundedImprovement(0.2, guarantee="expected_joint").fit(u, loss)
    assert not rule.feasible_ and rule.threshold_ == -math.inf and rule.coverage_ == 0.0


# Simulation: u ~ U(0, 1) (or 10 tied values) and a loss with conditional mean u / 4, so the
# true joint risk of every fitted rule is known exactly.
N, DRAWS, TARGET = 100, 2000, 0.05


def _true_joint_risk(rule, tied):
    if not rule.feasible_:
        return 0.0
    t, nu = rule.threshold_, rule.accept_prob_
    if not tied:  # integral of u / 4 over [0, min(t, 1)]; the boundary has measure zero
        return min(t, 1.0) ** 2 / 8
    v = np.arange(10) / 9
    return float(np.sum(0.1 * v / 4 * np.where(v < t, 1.0, np.where(v == t, nu, 0.0))))


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("bounded", [False, True])
def test_the_expected_joint_risk_is_at_most_the_target(tied, bounded):
    rng = np.random.default_rng(7)
    u_all = (rng.integers(0, 10, (DRAWS, N)) / 9) if tied else rng.random((DRAWS, N))
    if bounded:  # in [0, 0.5], conditional mean u / 4
        loss_all, loss_bound = u_all * rng.random(u_all.shape) / 2, 0.5
    else:
        loss_all, loss_bound = (rng.random(u_all.shape) < u_all / 4).astype(float), 1.0
    joint, plug_in, selective = np.empty(DRAWS), np.empty(DRAWS), []
    for i in range(DRAWS):
        rule = _fit(u_all[i], loss_all[i], TARGET, loss_bound)
        joint[i] = _true_joint_risk(rule, tied)
        # the plug-in rule, empirical joint risk <= target (no B / (n + 1) correction)
        groups = tie_groups(loss_all[i], u_all[i])
        g, nu, _ = crc_search(groups, TARGET * N / (N + 1), 0.0)
        rule.threshold_ = math.inf if g == groups.counts.size - 1 else groups.values[g]
        rule.accept_prob_ = nu
        plug_in[i] = _true_joint_risk(rule, tied)
        if rule.feasible_ and not tied:
            selective.append(min(rule.threshold_, 1.0) / 8)
    se = joint.std(ddof=1) / np.sqrt(DRAWS)
    assert joint.mean() <= TARGET + 3 * se
    # not vacuous: close to the target (CRC's lower bound is target - 2 B / (n + 1))
    assert joint.mean() >= TARGET - 2 * loss_bound / (N + 1) - 3 * se
    if not bounded:  # the test sees a violation: the plug-in rule breaks the target
        assert plug_in.mean() > TARGET + 3 * plug_in.std(ddof=1) / np.sqrt(DRAWS)
    if selective:  # the selective risk of the same rules is well above the target
        assert np.mean(selective) > 1.5 * TARGET


def test_least_risk_bound_is_the_edge_of_conformal_risk_control():
    rng = np.random.default_rng(21)
    for _ in range(60):
        n = int(rng.integers(1, 60))
        u = rng.integers(0, int(rng.integers(1, 8)), n).astype(float)
        loss_bound = float(rng.choice([0.5, 1.0, 2.0]))
        loss = loss_bound * rng.integers(0, 5, n) / 4 * (rng.random(n) < 0.5)
        least = least_risk_bound(u, loss, loss_bound=loss_bound, guarantee="expected_joint")
        assert least == pytest.approx(loss_bound / (n + 1), rel=1e-12)
        # the edge in exact arithmetic (up to float rounding) ...
        assert crc_ref(u.tolist(), loss.tolist(), least * (1 + 1e-9), loss_bound)[0] != -math.inf
        assert crc_ref(u.tolist(), loss.tolist(), least * (1 - 1e-9), loss_bound)[0] == -math.inf
        # ... and exactly the fit's own: feasible at least, not one float below
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            for target, feasible in ((least, True), (math.nextafter(least, 0.0), False)):
                fit = BoundedImprovement(target, guarantee="expected_joint",
                                         loss_bound=loss_bound).fit(u, loss)
                assert fit.feasible_ == feasible
        table = ScoreTable.from_arrays(u, loss)
        assert least_risk_bound(table, guarantee="expected_joint",
                                loss_bound=loss_bound) == least


@pytest.mark.parametrize("kwargs, message", [
    ({"guarantee": "expected"}, "guarantee='expected' is not offered"),
    ({"guarantee": "joint"}, "guarantee must be one of"),
    ({"guarantee": "expected_joint", "delta": 0.1}, "takes no delta"),
    ({"guarantee": "expected_joint", "loss_bound": 0.5}, "losses must be at most loss_bound=0.5"),
    ({"guarantee": "expected_joint", "loss_bound": -1.0}, "loss_bound must"),
])
def test_least_risk_bound_crc_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        least_risk_bound([0.1, 0.2, 0.3], [0.0, 1.0, 1.0], **kwargs)


def test_the_inequality_holds_exactly_on_losses_whose_sums_round():
    # decimal losses and targets: the budget (n + 1) target - B and the sums round, and the
    # rule must still meet (*) in rational arithmetic, its risk_bound_ at most the target
    rng = np.random.default_rng(11)
    fits = 0
    for t in range(600):
        B = float(rng.choice([1.0, 0.5, 3.0, 0.1]))
        n = int(rng.integers(1, 60))
        u = rng.integers(0, int(rng.integers(1, 6)), n).astype(float)
        loss = (B * rng.random(n) * (rng.random(n) < 0.6) if t % 2
                else B * (rng.random(n) < 0.3))
        target = float(rng.uniform(B / (n + 1) * 0.9, B))
        rule = _fit(u, loss, target, B)
        if not rule.feasible_:
            continue
        fits += 1
        nu = Fraction(rule.accept_prob_)
        S = sum((Fraction(b) if a < rule.threshold_ else nu * Fraction(b)
                 if a == rule.threshold_ else Fraction(0)) for a, b in zip(u, loss, strict=True))
        assert (S + Fraction(B)) / (n + 1) <= Fraction(target)
        assert rule.risk_bound_ <= target
        v, ref_nu, _ = crc_ref(u.tolist(), loss.tolist(), target, B)
        if v == rule.threshold_:  # the largest rule up to the round-off of the sums
            assert float(nu) == pytest.approx(float(ref_nu), rel=1e-9, abs=1e-12)
    assert fits > 400


def test_least_risk_bound_on_sums_that_round_is_the_fits_own_edge():
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(1, 50))
        u = rng.integers(0, 5, n).astype(float)
        loss = rng.random(n) * (rng.random(n) < 0.5)
        least = least_risk_bound(u, loss, loss_bound=1.0, guarantee="expected_joint")
        assert least == pytest.approx(1 / (n + 1), rel=1e-12)
        assert _fit(u, loss, least, 1.0).feasible_
        assert not _fit(u, loss, math.nextafter(least, 0.0), 1.0).feasible_


def test_a_loss_free_lowest_group_meets_the_least_target_on_sums_that_round():
    # the budget was lowered by the round-off of the whole sum, so accepting a group of no
    # loss, whose sum 0 is exact, was refused 264 ulps above B / (n + 1)
    u = np.arange(30.0)
    loss = np.linspace(0.0, 1.0, 30)
    least = math.nextafter(1 / 31, 1.0)  # the least float at or above the exact 1/31
    assert Fraction(least) >= Fraction(1, 31) > Fraction(1 / 31)
    assert least_risk_bound(u, loss, guarantee="expected_joint") == least
    rule = _fit(u, loss, least, 1.0)
    assert rule.feasible_ and rule.coverage_ >= 1 / 30
    nu = Fraction(rule.accept_prob_)
    S = sum((Fraction(b) if a < rule.threshold_ else nu * Fraction(b)
             if a == rule.threshold_ else Fraction(0)) for a, b in zip(u, loss, strict=True))
    assert (S + 1) / 31 <= Fraction(least)


def test_a_tiny_loss_beside_an_ordinary_one_is_fitted():
    # sums_exact ended in OverflowError ("math range error") for 1e-300 beside 1
    u = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    losses = np.array([1e-300, 0.0, 1.0, 0.5, 0.0, 0.0])
    assert _fit(u, losses, 0.5, 1.0).feasible_
    assert least_risk_bound(u, losses, guarantee="expected_joint") == pytest.approx(1 / 7,
                                                                                   rel=1e-12)
