"""OOD rules: rates within [0, 1] whatever the order of the sums, the documented tie rules
across directions and certified rules, and documents no fit writes."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from abstain import load_json
from abstain.models import BoundedTPRFPR, CostBasedOOD


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("kw", [{"n_directions": 12}, {}, {"search": "exact"}])
def test_cost_based_ties_go_to_the_larger_coverage_across_directions(kw):
    # two directions of exactly equal cost 9/10: the one covering 5 rows won (larger ID
    # mass first, the ratio models' rule) where the docstring says the larger coverage
    s = np.array([[-0.5, 1.0], [0.0, -1.0], [1.0, -1.0], [0.0, -0.5], [1.0, -0.5],
                  [0.0, -1.0], [0.0, -1.0], [-0.5, -1.0]])
    ood = np.array([0, 1, 1, 1, 0, 0, 0, 0], bool)
    loss = np.array([2.0, 0, 0, 0, 0, 0, 0, 0])
    m = CostBasedOOD(2.0, 3.0, 0.2, ood_prior=0.3, **kw).fit(s, ood, loss)
    assert m.cost_ == pytest.approx(0.9, rel=1e-12)
    assert int(np.sum(m.accept_proba(s) == 1)) == 6


def test_weighted_rates_stay_in_range_and_documents_load():
    # masses from subtracted running sums: fpr_ -1.3e-16 (CostBasedOOD, exact) and tpr_
    # 1.0000000000000002 (BoundedTPRFPR), which load_json then refused
    s = np.array([[3.0, 0.0], [4.0, 2.0], [2.0, 3.0], [0.0, 2.0], [2.0, 4.0], [3.0, 2.0],
                  [0.0, 1.0], [4.0, 0.0], [4.0, 2.0], [2.0, 4.0], [4.0, 4.0], [4.0, 0.0],
                  [4.0, 0.0], [0.0, 0.0], [3.0, 4.0], [0.0, 1.0], [1.0, 1.0]])
    ood = np.array([1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0], bool)
    loss = np.array([0.2, 1.0, 0.8, 0.7, 0.8, 0.3, 0.1, 0.3, 0.1, 0.3, 0.8, 0.2, 0.1, 0.8, 0.9,
                     0.4, 0.2])
    w = np.array([0.06999999999999999, 0.36, 0.8200000000000001, 0.74, 0.77, 0.49, 0.71, 0.31,
                  0.88, 0.8, 0.95, 0.78, 0.74, 0.2, 0.58, 0.09, 0.93])
    m = BoundedTPRFPR(tpr=0.9, fpr=0.8, search="exact").fit(s, ood, loss, sample_weight=w)
    assert m.tpr_ == 1.0
    load_json(m.to_json())
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(12, 30))
        s = rng.integers(0, 5, (n, 2)).astype(float)
        ood = rng.random(n) < 0.5
        ood[:2] = [False, True]
        w = np.round(rng.random(n), 2) + 0.01
        fit = CostBasedOOD(float(rng.choice([0.3, 0.6])), 1.0, 0.0, search="exact").fit(
            s, ood, np.round(rng.random(n), 1), sample_weight=w)
        rates = [fit.tpr_, fit.fpr_] + ([] if math.isnan(fit.risk_) else [fit.risk_])
        assert all(0.0 <= r for r in rates) and fit.tpr_ <= 1.0 and fit.fpr_ <= 1.0
        load_json(fit.to_json())


def test_a_certified_tpr_fpr_rule_breaks_risk_ties_by_tpr():
    # every rule has risk 0.1: sums of 0.1 in float made 0.09999999999999974 win at TPR
    # 0.805, where the tie rule (larger TPR) takes every ID row
    s = np.arange(400, dtype=float)
    ood = s >= 200
    m = BoundedTPRFPR(tpr=0.5, fpr=0.5, delta=0.2).fit(s, ood, np.full(400, 0.1))
    assert m.tpr_ == 1.0 and m.fpr_ == 0.0


def test_the_plug_in_rule_refuses_a_mu_beyond_float64():
    with pytest.raises(ValueError, match=r"^the plug-in rule's mu = .* is beyond float64"):
        CostBasedOOD(0.5, 1e306, 0.0, ood_prior=0.999).fit()


def test_load_json_refuses_rules_no_fit_writes():
    s, ood, loss = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 0, 1, 0, 1, 1], [0, 1, 0, 0, 0, 0]
    doc = json.loads(CostBasedOOD(0.5, 1.0, 0.0).fit(s, ood, loss).to_json())
    doc["fitted"]["accept_prob_"] = 0.5
    with pytest.raises(ValueError, match=r"fitted\.accept_prob_ must be 1 \(whole tie groups"):
        load_json(json.dumps(doc))
    doc = json.loads(BoundedTPRFPR(tpr=1.0, fpr=0.0).fit(s, ood, loss).to_json())
    assert doc["fitted"]["feasible_"] is False
    doc["fitted"].update(tpr_=1.0, fpr_=0.0, risk_=0.0, precision_=1.0)
    with pytest.raises(ValueError, match=r"must be \"nan\" for an infeasible rule"):
        load_json(json.dumps(doc))
    ok = BoundedTPRFPR(tpr=2 / 3, fpr=1 / 3).fit(s, ood, loss)
    doc = json.loads(ok.to_json())
    doc["fitted"]["n_id_"] = 0.0
    with pytest.raises(ValueError, match=r"fitted\.n_id_ must be positive for a rule fitted"):
        load_json(json.dumps(doc))
    doc = json.loads(ok.to_json())
    doc["fitted"]["anchor_"] = [0.4, 0.0]  # one score: no anchor (list index out of range)
    with pytest.raises(ValueError, match=r"fitted\.anchor_ must be the score pair"):
        load_json(json.dumps(doc))


@pytest.mark.parametrize("seed", range(6))
def test_rows_of_weight_zero_are_rows_dropped_in_the_exact_search(seed):
    """A row of weight 0 was kept as a score pair: the exact search took it as an anchor and
    picked another of the equal rules, which decides new inputs otherwise (9 and 39 of 1,681
    grid points on two small samples); it is now the rule of the rows without it."""
    from sklearn.base import clone

    from abstain.models import BoundedPrecisionRecall

    rng = np.random.default_rng(seed)
    is_ood = rng.random(40) < 0.3
    s = np.round(rng.normal(size=(40, 2)) + 1.5 * is_ood[:, None], 1)
    loss = (rng.random(40) < 0.3).astype(float)
    w = rng.integers(0, 4, size=40)
    keep = w > 0
    grid = np.stack(np.meshgrid(np.linspace(-2, 4, 25), np.linspace(-2, 4, 25)), -1)
    grid = grid.reshape(-1, 2)
    for model in (CostBasedOOD(search="exact"), BoundedTPRFPR(0.8, 0.3, search="exact"),
                  BoundedPrecisionRecall(0.6, 0.5, search="exact")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an infeasible target: both reject everything
            a = clone(model).fit(s, is_ood, loss, sample_weight=w)
            b = clone(model).fit(s[keep], is_ood[keep], loss[keep], sample_weight=w[keep])
        assert a.to_json() == b.to_json()
        np.testing.assert_array_equal(a.accept_proba(grid), b.accept_proba(grid))


def test_a_row_of_weight_zero_far_away_does_not_refuse_the_exact_search():
    """The exact search refuses scores that reach 2**1020 beside subnormal ones; a row of
    weight 0 there refused a fit that the rows without it allow."""
    rng = np.random.default_rng(0)
    is_ood = rng.random(40) < 0.3
    s = np.round(rng.normal(size=(40, 2)) + 1.5 * is_ood[:, None], 1)
    s[0] = [2.0**-1070, 1.0]
    loss = (rng.random(40) < 0.3).astype(float)
    without = CostBasedOOD(search="exact").fit(s, is_ood, loss)
    far = CostBasedOOD(search="exact").fit(
        np.vstack([s, [[1.7e308, 1.7e308]]]), np.append(is_ood, True), np.append(loss, 0.0),
        sample_weight=np.append(np.ones(40), 0.0))
    assert far.to_json() == without.to_json()
