"""abstain.models._ood: the OOD reject models (BoundedTPRFPR, BoundedPrecisionRecall,
CostBasedOOD) against the brute-force references in tests/reference/ood_ref.py, properties,
the JSON round trip and bad input."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import ood_ref as R

from abstain import InfeasibleTargetWarning, NotFittedError, load_json
from abstain import metrics as M
from abstain.datasets import synthetic_ood_1d
from abstain.models import (
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    CostBasedOOD,
    least_fpr_at_tpr,
    most_recall_at_precision,
)

TOL = 1e-9


def check_attained(model, scores, is_ood, losses):
    c = model.accept_proba(scores)
    i, o = float(np.sum(c * ~is_ood)), float(np.sum(c * is_ood))
    assert math.isclose(i / (~is_ood).sum(), model.tpr_, abs_tol=TOL)
    assert math.isclose(o / is_ood.sum(), model.fpr_, abs_tol=TOL)
    assert math.isclose(float(np.sum(c * ~is_ood * losses)) / i, model.risk_, abs_tol=TOL)


@pytest.mark.parametrize("seed", range(60))
def test_bounded_tpr_fpr_matches_exhaustive_search(seed, random_sample, quiet_fit):
    rng = np.random.default_rng(seed)
    s2, is_ood, losses = random_sample(rng)
    tpr = float(rng.choice([0.3, 0.5, 0.7, 1.0]))
    fpr = float(rng.choice([0.0, 0.3, 0.5, 1.0]))
    a, b = tpr * (~is_ood).sum(), fpr * is_ood.sum()
    for scores, ref in ((s2[:, 0], R.best_ratio_1d(list(s2[:, 0]), is_ood, losses, a, b)),
                        (s2, R.best_ratio_2d(s2, is_ood, losses, a, b))):
        exact = quiet_fit(BoundedTPRFPR(tpr=tpr, fpr=fpr, search="exact"), scores, is_ood, losses)
        grid = quiet_fit(BoundedTPRFPR(tpr=tpr, fpr=fpr), scores, is_ood, losses)
        assert exact.feasible_ == (ref is not None)
        if ref is None:
            assert not grid.feasible_
            continue
        assert math.isclose(exact.risk_, ref[0], abs_tol=TOL)
        assert exact.tpr_ >= tpr - TOL and exact.fpr_ <= fpr + TOL
        check_attained(exact, scores, is_ood, losses)
        if grid.feasible_:  # the grid is never better than the exact search
            assert grid.risk_ >= exact.risk_ - TOL
            check_attained(grid, scores, is_ood, losses)


@pytest.mark.parametrize("seed", range(40))
def test_bounded_precision_recall_matches_exhaustive_search(seed, random_sample, quiet_fit):
    rng = np.random.default_rng(100 + seed)
    s2, is_ood, losses = random_sample(rng)
    kappa, recall = float(rng.choice([0.5, 0.7, 0.9])), float(rng.choice([0.3, 0.6, 1.0]))
    prior = [None, 0.25][seed % 2]
    n_i, n_o = (~is_ood).sum(), is_ood.sum()
    pi = n_o / (n_i + n_o) if prior is None else prior
    kk = (1 - pi) * (1 - kappa) / (pi * kappa) * n_o / n_i
    ref = R.best_ratio_2d(s2, is_ood, losses, recall * n_i, 0.0, kk)
    m = quiet_fit(BoundedPrecisionRecall(precision=kappa, recall=recall, ood_prior=prior,
                                         search="exact"), s2, is_ood, losses)
    assert m.feasible_ == (ref is not None)
    if ref is not None:
        assert math.isclose(m.risk_, ref[0], abs_tol=TOL)
        assert m.precision_ >= kappa - 1e-9 and m.tpr_ >= recall - TOL


@pytest.mark.parametrize("seed", range(30))
def test_cost_based_ood_matches_exhaustive_search(seed, random_sample):
    rng = np.random.default_rng(200 + seed)
    s2, is_ood, losses = random_sample(rng)
    e1, e2, e3 = 0.3, 1.0, 0.1
    n_i, n_o = (~is_ood).sum(), is_ood.sum()
    pi = n_o / len(is_ood)
    a, b = (1 - pi) / n_i, pi / n_o
    slopes = (-a * e1, b * (e2 - e3), a)
    for scores, search in ((s2[:, 1], "grid"), (s2, "exact")):
        m = CostBasedOOD(e1, e2, e3, search=search).fit(scores, is_ood, losses)
        if scores.ndim == 1:
            ref = R.best_linear_1d(list(scores), is_ood, losses, slopes)
        else:
            ref = R.best_linear_2d(scores, is_ood, losses, slopes)
        assert math.isclose(m.cost_, ref + (1 - pi) * e1 + pi * e3, abs_tol=TOL)
        c = m.accept_proba(scores)
        direct = np.mean(np.where(is_ood, c * e2 + (1 - c) * e3, c * losses + (1 - c) * e1))
        assert math.isclose(m.cost_, direct, abs_tol=TOL)  # pi = sample fraction: plain mean


@pytest.mark.parametrize("seed", range(25))
def test_oracle_double_score_attains_the_linear_program(seed, random_sample, quiet_fit):
    """Appendix A.5: with s_r = the loss and s_g = the OOD indicator (the Bayes scores of
    the sample) the exact double-score optimum equals the LP over all selective functions;
    any other score is bounded below by the LP."""
    rng = np.random.default_rng(300 + seed)
    s2, is_ood, losses = random_sample(rng, n_max=12)
    tpr, fpr = float(rng.choice([0.3, 0.5, 0.8, 1.0])), float(rng.choice([0.0, 0.2, 0.5]))
    lp = R.lp_bounded_tpr_fpr(is_ood, losses, tpr, fpr)
    oracle = np.stack((np.where(is_ood, 0.0, losses), is_ood.astype(float)), 1)
    m = BoundedTPRFPR(tpr=tpr, fpr=fpr, search="exact").fit(oracle, is_ood, losses)
    assert lp is not None and math.isclose(m.risk_, lp, abs_tol=1e-7)
    other = quiet_fit(BoundedTPRFPR(tpr=tpr, fpr=fpr, search="exact"), s2, is_ood, losses)
    if other.feasible_:
        assert other.risk_ >= lp - 1e-7


@pytest.mark.parametrize("seed", range(24))
def test_an_exact_fit_applied_to_its_rows_has_the_rates_it_reports(seed, quiet_fit):
    """On real-valued scores two pairs tie at a swap angle only up to rounding, so a rule at
    that angle (a critical state) can accept one row more or less than it reports; where
    an open state gives the same masses it must be the one fitted (the tie rule), and
    the applied rule must then reach the reported rates."""
    rng = np.random.default_rng(700 + seed)
    n = int(rng.integers(200, 800))
    is_ood = rng.random(n) < 0.35
    s2 = rng.normal(size=(n, 2)) @ rng.normal(size=(2, 2)) + is_ood[:, None] * rng.normal(size=2)
    losses = np.where(is_ood, 0.0, (rng.random(n) < 0.2).astype(float))
    model = [CostBasedOOD(0.2, 1.0, 0.0, search="exact"),
             BoundedTPRFPR(float(rng.uniform(0.5, 0.9)), float(rng.uniform(0.1, 0.5)),
                           search="exact"),
             BoundedPrecisionRecall(0.9, float(rng.uniform(0.4, 0.8)), search="exact")][seed % 3]
    m = quiet_fit(model, s2, is_ood, losses)
    if m.feasible_:
        c = m.accept_proba(s2)
        assert float(np.sum(c * ~is_ood)) == pytest.approx(m.tpr_ * np.sum(~is_ood), abs=1e-9)
        assert float(np.sum(c * is_ood)) == pytest.approx(m.fpr_ * np.sum(is_ood), abs=1e-9)


@given(st.integers(0, 10**6))
def test_invariant_to_row_order_and_monotone_transform(random_sample, quiet_fit, seed):
    rng = np.random.default_rng(seed)
    s2, is_ood, losses = random_sample(rng)
    perm = rng.permutation(len(losses))
    kw = dict(tpr=0.5, fpr=0.5)
    a = quiet_fit(BoundedTPRFPR(**kw), s2[:, 0], is_ood, losses)
    b = quiet_fit(BoundedTPRFPR(**kw), np.exp(s2[perm, 0]), is_ood[perm], losses[perm])
    assert a.feasible_ == b.feasible_
    if a.feasible_:
        assert math.isclose(a.risk_, b.risk_, abs_tol=TOL) and a.tpr_ == b.tpr_


def test_infeasible_is_explicit():
    s, o, ls = [0.1, 0.2, 0.3, 0.4], [1, 0, 1, 0], [0, 0, 0, 0]
    with pytest.warns(InfeasibleTargetWarning, match="unable"):
        m = BoundedTPRFPR(tpr=1.0, fpr=0.0).fit(s, o, ls)
    assert not m.feasible_ and math.isnan(m.risk_)
    assert m.accept_proba(s).tolist() == [0.0] * 4
    with pytest.warns(InfeasibleTargetWarning):
        assert math.isnan(M.selective_risk_at_tpr_fpr(ls, o, s, 1.0, 0.0))


def test_plug_in_cost_rule_is_theorem_1():
    data = synthetic_ood_1d()
    rule = CostBasedOOD(0.2, 1.0, 0.0, ood_prior=data.ood_prior).fit()
    x = np.linspace(-3, 5, 11)
    r, g = data.r_bayes(x), data.g(x)
    expected = (r + 1.0 * 0.25 / 0.75 * g <= 0.2).astype(float)
    assert rule.accept_proba(np.stack((r, g), 1)).tolist() == expected.tolist()


@pytest.mark.parametrize("model", [BoundedTPRFPR(0.5, 0.5, random_state=3),
                                   BoundedPrecisionRecall(0.6, 0.5, search="exact"),
                                   CostBasedOOD(0.3, 1.0, 0.0)], ids=repr)
def test_json_round_trip(model, rng, random_sample, quiet_fit):
    s2, is_ood, losses = random_sample(rng, n_max=20)
    quiet_fit(model, s2, is_ood, losses)
    text = model.to_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(c))
    back = load_json(text)
    assert back.get_params() == model.get_params()
    assert back.accept_proba(s2).tolist() == model.accept_proba(s2).tolist()


def test_not_fitted():
    with pytest.raises(NotFittedError):
        BoundedTPRFPR().accept_proba([0.1])


nan, inf = float("nan"), float("inf")
BAD = {
    "empty": ([], [], [], "scores|is_ood|losses|must not be empty"),
    "scores_nan": ([0.1, nan], [0, 1], [0, 0], r"scores"),
    "scores_inf": ([[0.1, 0.0], [0.2, inf]], [0, 1], [0, 0], r"scores\[:, 1\]"),
    "scores_3_cols": ([[0, 0, 0], [1, 1, 1]], [0, 1], [0, 0], "shape"),
    "mismatched": ([0.1, 0.2, 0.3], [0, 1], [0, 0, 0], "same length"),
    "is_ood_one_class": ([0.1, 0.2], [0, 0], [0, 0], "both ID"),
    "is_ood_not_binary": ([0.1, 0.2], [0, 2], [0, 0], "is_ood"),
    "losses_negative": ([0.1, 0.2], [0, 1], [-1, 0], "losses"),
    "losses_nan": ([0.1, 0.2], [0, 1], [nan, 0], "losses"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_arrays(case):
    s, o, ls, match = BAD[case]
    with pytest.raises(ValueError, match=match):
        BoundedTPRFPR().fit(s, o, ls)
    with pytest.raises(ValueError, match=match):
        M.auroc(o, s) if case not in ("losses_negative", "losses_nan") else M.oscr(ls, o, s)


@pytest.mark.parametrize("model, match", [
    (BoundedTPRFPR(tpr=0.0), "tpr must be in"),
    (BoundedTPRFPR(tpr=1.5), "tpr must be in"),
    (BoundedTPRFPR(fpr=-0.1), "fpr must be in"),
    (BoundedTPRFPR(search="fast"), "search must be one of"),
    (BoundedTPRFPR(n_directions=0), "n_directions must be"),
    (BoundedPrecisionRecall(precision=2.0), "precision must be in"),
    (BoundedPrecisionRecall(ood_prior=1.0), "ood_prior must be in"),
    (CostBasedOOD(0.3, 0.1, 0.2), "predict_ood_cost must be greater"),
    (CostBasedOOD(-1.0), "reject_id_cost must be"),
])
def test_bad_parameters(model, match):
    with pytest.raises(ValueError, match=match):
        model.fit([0.1, 0.2], [0, 1], [0, 0])


# --------------------------------------------------------------------------- attainable rates
def _tied(s, is_ood, t):
    """(ID below t, ID at t, OOD below t, OOD at t) by a loop."""
    out = [0.0, 0.0, 0.0, 0.0]
    for k in range(len(s)):
        j = 2 if is_ood[k] else 0
        if s[k] < t:
            out[j] += 1.0
        elif s[k] == t:
            out[j + 1] += 1.0
    return out


def _least_fpr_ref(s, is_ood, tpr):
    """min FPR over the rules (t, nu) with TPR >= tpr: for each observed t the least nu."""
    n_id, n_ood = float(np.sum(~is_ood)), float(np.sum(is_ood))
    best = math.inf
    for t in set(s.tolist()):
        ib, it, ob, ot = _tied(s, is_ood, t)
        need = tpr * n_id - ib
        if need > it + 1e-12:
            continue
        nu = 0.0 if need <= 0 else (need / it if it > 0 else 0.0)
        best = min(best, (ob + nu * ot) / n_ood)
    return best


def _most_recall_ref(s, is_ood, precision, pi):
    """max TPR over the rules (t, nu) with precision >= ``precision`` at OOD prior pi."""
    n_id, n_ood = float(np.sum(~is_ood)), float(np.sum(is_ood))
    best = 0.0
    for t in set(s.tolist()):
        ib, it, ob, ot = _tied(s, is_ood, t)

        def g(nu, ib=ib, it=it, ob=ob, ot=ot):
            return (precision * pi * (ob + nu * ot) / n_ood
                    - (1 - precision) * (1 - pi) * (ib + nu * it) / n_id)

        # g is linear in nu and the TPR grows with nu: the largest nu with g <= 0
        if g(1.0) <= 1e-12:
            nu = 1.0
        elif g(0.0) <= 1e-12:
            nu = g(0.0) / (g(0.0) - g(1.0))
        else:
            continue
        best = max(best, (ib + nu * it) / n_id)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_attainable_rates_match_exhaustive_search(seed, random_sample):
    rng = np.random.default_rng(seed)
    scores, is_ood, losses = random_sample(rng, n_max=12)
    target = float(rng.choice([0.3, 0.5, 2 / 3, 1.0]))
    for col in (0, 1):
        s = scores[:, col]
        assert least_fpr_at_tpr(s, is_ood, target) == pytest.approx(
            _least_fpr_ref(s, is_ood, target), abs=1e-12)
        pi = float(np.mean(is_ood))
        for p in (0.5, 0.8, 1.0):
            assert most_recall_at_precision(s, is_ood, p) == pytest.approx(
                _most_recall_ref(s, is_ood, p, pi), abs=1e-12)
    # two columns: the best direction of the grid, never worse than either column alone
    both = least_fpr_at_tpr(scores, is_ood, target, n_directions=4)
    assert both <= min(least_fpr_at_tpr(scores[:, j], is_ood, target) for j in (0, 1)) + 1e-12
    # the grid's directions k * pi / 4 (cos pi/2 set to 0), projected one multiply-add at a
    # time so that integer score pairs tie exactly
    grid = []
    for k in range(4):
        w = [0.0 if abs(v) < 1e-12 else v for v in (math.cos(k * math.pi / 4),
                                                   math.sin(k * math.pi / 4))]
        grid.append(scores[:, 0] * w[0] + scores[:, 1] * w[1])
    assert both == pytest.approx(min(_least_fpr_ref(g, is_ood, target) for g in grid), abs=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_attainable_rates_are_the_feasibility_edge(seed, random_sample, quiet_fit):
    rng = np.random.default_rng(100 + seed)
    scores, is_ood, losses = random_sample(rng, n_max=12)
    s = scores[:, 0]
    least = least_fpr_at_tpr(s, is_ood, 0.5)
    assert quiet_fit(BoundedTPRFPR(tpr=0.5, fpr=least), s, is_ood, losses).feasible_
    if least > 0.01:
        assert not quiet_fit(BoundedTPRFPR(tpr=0.5, fpr=least - 0.01), s, is_ood, losses).feasible_
    most = most_recall_at_precision(s, is_ood, 0.6, ood_prior=0.3)
    if most > 0:
        sel = BoundedPrecisionRecall(precision=0.6, recall=most, ood_prior=0.3)
        assert quiet_fit(sel, s, is_ood, losses).feasible_
    if most + 0.01 <= 1:
        sel = BoundedPrecisionRecall(precision=0.6, recall=most + 0.01, ood_prior=0.3)
        assert not quiet_fit(sel, s, is_ood, losses).feasible_


def test_attainable_rates_check_their_arguments():
    s, is_ood = [0.1, 0.2, 0.3], [0, 1, 0]
    with pytest.raises(ValueError, match=r"tpr must be in \(0, 1\]; got 0"):
        least_fpr_at_tpr(s, is_ood, 0)
    with pytest.raises(ValueError, match="n_directions must be an integer >= 1; got 0"):
        least_fpr_at_tpr(s, is_ood, 0.5, n_directions=0)
    with pytest.raises(ValueError, match=r"precision must be in \(0, 1\]; got 1.5"):
        most_recall_at_precision(s, is_ood, 1.5)
    with pytest.raises(ValueError, match=r"ood_prior must be in \(0, 1\); got 1"):
        most_recall_at_precision(s, is_ood, 0.5, ood_prior=1)
    with pytest.raises(ValueError, match="is_ood must contain both ID"):
        least_fpr_at_tpr(s, [0, 0, 0], 0.5)


@pytest.mark.parametrize("scale", [1.0, 1e155, 1e-170, 3.0])
def test_an_exact_fit_at_a_tie_of_two_points_loads_and_applies_its_rule(scale):
    # the best rule sits where two points tie: its direction is their exact normal, scaled by
    # a power of two (no projection overflows or underflows; the points still tie)
    s = np.array([[1, 1], [0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 0], [0, 0], [0, 0.]]) * scale
    ood = np.array([1, 0, 0, 0, 1, 0, 0, 0, 0], bool)
    loss = np.array([0, 1, 0, 1, 0, 0, 1, 0, 1.])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rule = BoundedTPRFPR(0.5, 0.5, search="exact").fit(s, ood, loss)
    assert 0.5 <= max(abs(v) for v in rule.weights_) < 1.0
    assert (rule.tpr_, rule.fpr_) == (0.5, 5 / 12)
    p = rule.accept_proba(s)
    assert p[~ood].mean() == pytest.approx(rule.tpr_) and p[ood].mean() == pytest.approx(
        rule.fpr_)
    loaded = load_json(rule.to_json())
    np.testing.assert_array_equal(loaded.accept_proba(s), p)


def test_ood_rules_that_no_fit_writes_are_refused_on_load():
    rng = np.random.default_rng(3)
    s = np.round(rng.normal(size=300), 1)
    ood = rng.random(300) < 0.3
    s[ood] += 2
    loss = (rng.random(300) < 0.2).astype(float)
    pair = np.c_[s, np.round(rng.normal(size=300), 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {"plain": BoundedTPRFPR(0.8, 0.3).fit(s, ood, loss),
                "certified": BoundedTPRFPR(0.8, 0.3, delta=0.1).fit(s, ood, loss),
                "certified pair": BoundedTPRFPR(0.7, 0.4, delta=0.1).fit(pair, ood, loss),
                "pr": BoundedPrecisionRecall(0.5, 0.5).fit(s, ood, loss)}
    for rule in fits.values():
        assert rule.feasible_
        load_json(rule.to_json())
    for name, section, edits, message in (
            ("plain", "fitted", {"fpr_": 0.5}, r"fitted\.fpr_ must be <= params\.fpr = 0\.3"),
            ("plain", "fitted", {"tpr_": 0.1}, r"fitted\.tpr_ must be >= params\.tpr = 0\.8"),
            ("plain", "params", {"fpr": 0.0}, r"fitted\.fpr_ must be <= params\.fpr = 0\.0"),
            ("pr", "fitted", {"precision_": 0.1}, r"fitted\.precision_ must be >= params\."
                                                  r"precision"),
            ("certified", "fitted", {"accept_prob_": 0.5}, r"fitted\.accept_prob_ must be 1 "
                                                           r"for a rule certified"),
            ("certified pair", "params", {"search": "exact"}, r"params\.search must be 'grid' "
                                                               r"with params\.delta"),
            ("plain", "fitted", {"angle_": 1e300, "mu_": -7.0}, r"fitted\.angle_ and fitted\."
                                                                r"mu_ must be NaN for one score")):
        doc = json.loads(fits[name].to_json())
        doc[section].update(edits)
        with pytest.raises(ValueError, match="^" + message):
            load_json(json.dumps(doc))


@pytest.mark.parametrize("big", [1e300, 1e308])
def test_a_rule_on_scores_near_the_float_maximum_with_a_subnormal_applies_as_fitted(big):
    # the fit keeps such scores undivided (5e-324 / 16 is 0); accept_proba divided them by
    # 16 all the same, tied the OOD row at 5e-324 with the ID row at 0 and accepted it
    S = np.array([[big, 0.0], [5e-324, 0.0], [0.0, 0.0], [-big, 0.0]])
    ood = np.array([True, True, False, False])
    loss = np.array([np.nan, np.nan, 0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rule = BoundedTPRFPR(tpr=0.5, fpr=0.0, search="grid").fit(S, ood, loss)
    p = rule.accept_proba(S)
    assert (rule.tpr_, rule.fpr_) == (1.0, 0.0) and p.tolist() == [0.0, 0.0, 1.0, 1.0]
    # the exact search cannot divide them either: the offsets overflow, refused in one line
    if big > 2.0**1020:
        for model in (BoundedTPRFPR(0.5, 0.5, search="exact"),
                      CostBasedOOD(0.5, 0.5, search="exact")):
            with pytest.raises(ValueError, match=r"^the scores reach 2\*\*1020 .* use "
                                                 r"search='grid'\.$"):
                model.fit(S, ood, loss)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exact = BoundedTPRFPR(tpr=0.5, fpr=0.0, search="exact").fit(S, ood, loss)
        assert exact.accept_proba(S).tolist() == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize(("scores", "ood", "loss", "kw"), [
    (np.array([0., 0., 1., 1., 1., 1.]), [0, 1, 1, 1, 1, 1], np.zeros(6), {}),
    (np.c_[[0., 0., 1., 1., 1., 1.], [0., 0., 1., 1., 1., 1.]], [0, 1, 1, 1, 1, 1], np.zeros(6),
     {}),
    (np.c_[[0., 0., 1., 1., 1., 1.], [0., 0., 1., 1., 1., 1.]], [0, 1, 1, 1, 1, 1], np.zeros(6),
     {"search": "exact"}),
    (np.array([[0., 2.], [2., 2.], [0., 0.], [1., 1.], [2., 2.], [0., 2.]]), [1, 0, 1, 1, 1, 1],
     [0, 0, 1, 1, 0, 1], {"search": "exact"}),
])
def test_cost_based_ood_takes_the_largest_coverage_on_an_exact_tie_of_costs(scores, ood, loss,
                                                                          kw):
    # rejecting all and accepting the first group both cost exactly 1/4: the objective left
    # without its constant sits near 0, where a tolerance relative to it decided nothing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rule = CostBasedOOD(0.25, 0.5, 0.25, **kw).fit(scores, ood, loss)
    assert (rule.tpr_, rule.fpr_) == (1.0, 0.2) and rule.cost_ == pytest.approx(0.25)


@pytest.mark.parametrize("seed", range(20))
def test_cost_based_ood_is_the_same_rule_in_any_units_of_cost(seed, random_sample):
    # an absolute floor of 1e-12 in the tie of costs made every rule a tie once costs and
    # losses were scaled by 2**-40; weights scaled by any power of two change nothing either
    rng = np.random.default_rng(900 + seed)
    s2, is_ood, losses = random_sample(rng)
    w = rng.integers(1, 4, is_ood.size).astype(float)
    for search in ("exact", "grid"):
        base = CostBasedOOD(0.25, 1.0, 0.1, ood_prior=0.3, search=search).fit(
            s2, is_ood, losses, sample_weight=w)
        c = 2.0**-40
        small = CostBasedOOD(0.25 * c, c, 0.1 * c, ood_prior=0.3, search=search).fit(
            s2, is_ood, losses * c, sample_weight=w)
        assert (small.cost_ / c, small.tpr_, small.fpr_) == (base.cost_, base.tpr_, base.fpr_)
        for k in (-1060, -300, 300):
            scaled = CostBasedOOD(0.25, 1.0, 0.1, ood_prior=0.3, search=search).fit(
                s2, is_ood, losses, sample_weight=np.ldexp(w, k))
            assert (scaled.cost_, scaled.tpr_, scaled.fpr_) == (base.cost_, base.tpr_,
                                                                 base.fpr_), k


def test_most_recall_at_precision_keeps_the_target_at_a_tiny_prior():
    # an absolute 1e-12 slack let a precision of 1 - 1e-12 meet a target of 1
    for prior in (1e-6, 1e-12, 1e-200):
        got = most_recall_at_precision([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], precision=1.0,
                                       ood_prior=prior)
        assert got == 0.5, prior


def test_ood_rules_whose_fields_contradict_each_other_are_refused_on_load():
    # the plug-in CostBasedOOD rule decides by its parameters alone; a fit on rows has
    # finite rates, a risk where it accepts ID rows, their precision and extended risk
    from abstain.models import CostBasedOOD

    rng = np.random.default_rng(5)
    s = np.round(rng.normal(size=200), 1)
    ood = rng.random(200) < 0.3
    s[ood] += 1.5
    loss = (rng.random(200) < 0.2).astype(float)
    plug = CostBasedOOD(0.2, 1.0, 0.0, ood_prior=0.3).fit()
    cost = CostBasedOOD(0.2, 1.0, 0.1).fit(np.c_[s, -s], ood, loss)
    plain = BoundedTPRFPR(0.8, 0.5).fit(s, ood, loss)
    for rule in (plug, cost, plain):
        again = load_json(rule.to_json())
        assert np.array_equal(again.accept_proba(np.c_[s, -s] if rule is not plain else s),
                              rule.accept_proba(np.c_[s, -s] if rule is not plain else s))
    for rule, edits, message in (
            (plug, {"threshold_": 2.0}, "a plug-in rule .fitted without rows. must have"),
            (plug, {"weights_": [1.0, 5.0], "mu_": 5.0, "angle_": math.atan2(5.0, 1.0)},
             "a plug-in rule"),
            (cost, {"cost_": -1.0}, r"fitted\.cost_ must be the extended risk"),
            (cost, {"cost_": 0.9}, r"fitted\.cost_ must be the extended risk"),
            (cost, {"risk_": "nan"}, r"fitted\.risk_ must be \"nan\" exactly where"),
            (cost, {"tpr_": "nan"}, r"fitted\.tpr_ and fitted\.fpr_ must be numbers"),
            (plain, {"precision_": 0.5}, r"fitted\.precision_ must be the precision of"),
            (plain, {"risk_": "nan"}, r"fitted\.risk_ must be \"nan\" exactly where")):
        doc = json.loads(rule.to_json())
        doc["fitted"].update(edits)
        with pytest.raises(ValueError, match="^" + message):
            load_json(json.dumps(doc))
    doc = json.loads(plug.to_json())
    doc["params"]["ood_prior"] = None
    with pytest.raises(ValueError, match=r"^params\.ood_prior must be given for the plug-in"):
        load_json(json.dumps(doc))


def test_a_precision_near_the_least_float_is_no_division_by_zero():
    # prior * precision underflowed to 0: ZeroDivisionError
    from abstain import load_json
    from abstain.models import BoundedPrecisionRecall

    rng = np.random.default_rng(0)
    s = rng.normal(size=200)
    is_ood = rng.random(200) < 0.3
    losses = np.where(is_ood, 0.0, (rng.random(200) < 0.2).astype(float))
    tiny = BoundedPrecisionRecall(precision=5e-324, recall=0.9).fit(s, is_ood, losses)
    small = BoundedPrecisionRecall(precision=1e-300, recall=0.9).fit(s, is_ood, losses)
    assert tiny.feasible_ and tiny.tpr_ == small.tpr_ and tiny.risk_ == small.risk_
    load_json(tiny.to_json())


def test_the_cost_of_a_large_reject_cost_is_the_rules_own_and_loads():
    # cost_ was the search's objective plus (1 - pi) e1 + pi e3, which cancelled: 0.0500002
    # for 0.05 at reject_id_cost 1e10, and load_json refused the document
    from estimators import TRAIN

    from abstain import load_json
    from abstain.models import CostBasedOOD

    s, ood, losses = TRAIN["s2"], TRAIN["is_ood"], TRAIN["ood_losses"]
    for cost in (0.5, 1e10, 1e30):
        m = CostBasedOOD(reject_id_cost=cost).fit(s, ood, losses)
        load_json(m.to_json())
    assert CostBasedOOD(reject_id_cost=1e10).fit(s, ood, losses).cost_ == \
        CostBasedOOD(reject_id_cost=0.5).fit(s, ood, losses).cost_


def test_a_grid_of_more_directions_than_the_limit_is_refused_in_one_line():
    # 2**63 ended in an AssertionError, 10**30 in NumPy's "Maximum allowed size exceeded",
    # and load_json took 10**30
    import json

    from abstain import load_json
    from abstain.metrics import auroc
    from abstain.models import CostBasedOOD

    rng = np.random.default_rng(0)
    s, ood = rng.normal(size=(50, 2)), rng.random(50) < 0.4
    losses = np.zeros(50)
    message = r"n_directions must be an integer in \[1, 1000000\]; got "
    for d in (2**63, 10**30, 1_000_001):
        with pytest.raises(ValueError, match="^" + message):
            CostBasedOOD(0.2, n_directions=d).fit(s, ood, losses)
        with pytest.raises(ValueError, match="^" + message):
            auroc(ood, s, search="grid", n_directions=d)
    doc = json.loads(CostBasedOOD(0.2).fit(s, ood, losses).to_json())
    doc["params"]["n_directions"] = 10**30
    with pytest.raises(ValueError, match=r"^params\." + message):
        load_json(json.dumps(doc))


def test_a_grid_rule_off_its_grid_is_refused_on_load(quiet_fit):
    # angle_, weights_ and mu_ edited together loaded: 36 of 400 decisions changed while
    # feasible_ and the certified rates stayed
    rng = np.random.default_rng(0)
    S = rng.normal(size=(400, 2))
    ood = rng.random(400) < 0.3
    S[ood] += 1
    loss = np.where(ood, 0, rng.random(400) < 0.2).astype(float)
    for kw in ({}, {"delta": 0.2}):
        rule = BoundedTPRFPR(0.6, 0.4, n_directions=8, **kw).fit(S, ood, loss)
        load_json(rule.to_json())
        doc = json.loads(rule.to_json())
        a = doc["fitted"]["angle_"] + 0.3
        doc["fitted"].update(angle_=a, weights_=[math.cos(a), math.sin(a)], mu_=math.tan(a))
        with pytest.raises(ValueError, match=r"^fitted\.weights_ must be one of the "
                           r"params\.n_directions = 8 directions \(cos a, sin a\) at a = "
                           r"k pi / 8 of params\.search = 'grid'; got \["):
            load_json(json.dumps(doc))
    plug_in = CostBasedOOD(0.3, 1.0, 0.0, ood_prior=0.2).fit()  # direction (1, mu): no grid
    assert load_json(plug_in.to_json()).weights_ == plug_in.weights_
