"""abstain.models._selective: the reject models against exhaustive-search and LP references,
properties, the equivalent parameters of the other models, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference.metrics_ref import as_list, n_sorting_permutations, rule_acceptance
from reference.models_ref import (
    bounded_abstention_ref,
    bounded_improvement_ref,
    cost_based_ref,
    empirical_cost,
    lp_bounded_abstention,
    lp_bounded_improvement,
    lp_cost_based,
)
from reference.strategies import (
    BAD_ARRAYS,
    increasing_remap,
    increasing_values,
    losses_and_uncertainty,
    proper_uncertainty,
    random_case,
)

import abstain
from abstain import BoundedAbstention, BoundedImprovement, CostBased, InfeasibleTargetWarning
from abstain.metrics import coverage_at_risk, selective_risk_at_coverage
from abstain.models import least_risk_bound

TOL = 1e-9
N_RANDOM = 200


def fit(model, uncertainty, losses):
    """Fit, silencing the (documented) InfeasibleTargetWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", abstain.InfeasibleTargetWarning)
        return model.fit(uncertainty, losses)


def describe(model, u, losses, ref=None) -> str:
    fitted = {k: getattr(model, k, None) for k in
              ("threshold_", "accept_prob_", "coverage_", "risk_", "feasible_")}
    out = (f"{model!r}\n  uncertainty={np.asarray(u).tolist()!r}"
           f"\n  losses={np.asarray(losses).tolist()!r}")
    out += f"\n  got {fitted}"
    if ref is not None:
        out += (f"\n  expected threshold={ref.threshold!r} accept_prob={float(ref.accept_prob)!r}"
                f" coverage={float(ref.coverage)!r} risk={float(ref.risk)!r}"
                f" feasible={ref.feasible!r}")
    return out


def approx_equal(a, b, tol=TOL) -> bool:
    a, b = float(a), float(b)
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= tol * max(1.0, abs(b))


def check_against_ref(model, u, losses, ref):
    msg = describe(model, u, losses, ref)
    assert bool(model.feasible_) == ref.feasible, msg
    assert approx_equal(model.coverage_, ref.coverage), msg
    assert approx_equal(model.risk_, ref.risk), msg
    # The canonical rule (theta observed or -inf, nu in (0, 1]) of a given coverage is unique,
    # so the acceptance probabilities on the fit data must agree row by row.
    c = model.accept_proba(u)
    np.testing.assert_allclose(c, [float(x) for x in ref.acceptance], rtol=0, atol=TOL,
                               err_msg=msg)
    check_canonical_and_consistent(model, u, losses)


def check_canonical_and_consistent(model, u, losses):
    """threshold_/accept_prob_ in canonical form and reproducing coverage_ and risk_."""
    msg = describe(model, u, losses)
    theta, nu = float(model.threshold_), float(model.accept_prob_)
    if model.coverage_ > 0:
        assert theta in set(as_list(u)), msg
        assert 0.0 < nu <= 1.0, msg
    else:
        assert theta == -math.inf, msg
        assert math.isnan(model.risk_), msg
    c = np.asarray(model.accept_proba(u), dtype=float)
    expected_c = np.array([float(x) for x in rule_acceptance(u, theta, nu)])
    np.testing.assert_allclose(c, expected_c, rtol=0, atol=1e-12, err_msg=msg)
    assert np.all((c >= 0) & (c <= 1)), msg
    assert approx_equal(c.mean(), model.coverage_), msg
    if c.sum() > 0:
        assert approx_equal((c * losses).sum() / c.sum(), model.risk_), msg


@pytest.fixture(scope="module")
def random_cases():
    rng = np.random.default_rng(2024)
    return [random_case(rng, n_max=10) for _ in range(N_RANDOM)]


def dyadic(losses) -> bool:
    losses = np.asarray(losses)
    return bool(np.all(losses * 4 == np.round(losses * 4)))


# --------------------------------------------------------------------------- vs references
def test_bounded_abstention_matches_reference(random_cases):
    rng = np.random.default_rng(1)
    for losses, u in random_cases:
        n = len(losses)
        omegas = {1.0, float(rng.uniform(0.01, 1.0)), float(rng.integers(1, n + 1)) / n}
        for omega in sorted(omegas):
            model = fit(BoundedAbstention(target_coverage=omega), u, losses)
            ref = bounded_abstention_ref(u, losses, omega)
            check_against_ref(model, u, losses, ref)
            assert approx_equal(model.coverage_, omega, 1e-12), describe(model, u, losses, ref)


def test_bounded_improvement_matches_reference(random_cases):
    rng = np.random.default_rng(2)
    for losses, u in random_cases:
        lams = {float(rng.uniform(0.02, 1.0)), float(rng.uniform(0.02, 0.5)),
                float(losses.mean()) + 1.0}
        if dyadic(losses):  # targets exactly at achievable risks: tests <= against <
            lams |= {0.25, 0.5, 0.75, 1.0, 0.125, 0.375}
        for lam in sorted(lams):
            model = fit(BoundedImprovement(target_risk=lam), u, losses)
            ref = bounded_improvement_ref(u, losses, lam)
            check_against_ref(model, u, losses, ref)
            if ref.feasible:
                assert model.risk_ <= lam * (1 + 1e-12), describe(model, u, losses, ref)


def test_cost_based_matches_reference(random_cases):
    rng = np.random.default_rng(3)
    for losses, u in random_cases:
        epss = {float(rng.uniform(0.01, 1.5)), float(rng.uniform(0.01, 0.5))}
        if dyadic(losses):  # rules of exactly equal cost: the largest coverage must win
            epss |= {0.25, 0.5, 0.75, 1.0}
        for eps in sorted(epss):
            model = fit(CostBased(reject_cost=eps), u, losses)
            ref = cost_based_ref(u, losses, eps)
            check_against_ref(model, u, losses, ref)
            got_cost = empirical_cost(losses, model.accept_proba(u), eps)
            assert approx_equal(got_cost, ref.objective), describe(model, u, losses, ref)


def test_cost_based_matches_linear_program(random_cases):
    """The monotone LP is exact for the cost-based model whatever the score."""
    rng = np.random.default_rng(4)
    for losses, u in random_cases[:80]:
        eps = float(rng.uniform(0.01, 1.5))
        model = fit(CostBased(reject_cost=eps), u, losses)
        got = float(empirical_cost(losses, model.accept_proba(u), eps))
        assert got == pytest.approx(lp_cost_based(u, losses, eps), abs=1e-8), describe(
            model, u, losses)


def test_bounded_models_match_linear_program_for_proper_scores():
    """For a score that is proper on the sample (tie-group mean losses non-decreasing in the
    score) the optimum over ALL per-group acceptance probabilities is a threshold rule."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        losses, _ = random_case(rng, n_max=12)
        v = proper_uncertainty(rng, losses)
        omega = float(rng.uniform(0.01, 1.0))
        lam = float(rng.uniform(0.02, 1.0))
        ba = fit(BoundedAbstention(target_coverage=omega), v, losses)
        assert ba.risk_ == pytest.approx(
            lp_bounded_abstention(v, losses, omega, monotone=False), abs=1e-8
        ), describe(ba, v, losses)
        bi = fit(BoundedImprovement(target_risk=lam), v, losses)
        assert bi.coverage_ == pytest.approx(
            lp_bounded_improvement(v, losses, lam, monotone=False), abs=1e-8
        ), describe(bi, v, losses)


@given(losses_and_uncertainty(max_size=7), st.floats(0.001, 1.0), st.floats(0.01, 2.0),
       st.floats(0.01, 2.0))
def test_all_models_match_references_hypothesis(case, omega, lam, eps):
    losses, u = case
    model = fit(BoundedAbstention(target_coverage=omega), u, losses)
    check_against_ref(model, u, losses, bounded_abstention_ref(u, losses, omega))
    model = fit(BoundedImprovement(target_risk=lam), u, losses)
    check_against_ref(model, u, losses, bounded_improvement_ref(u, losses, lam))
    model = fit(CostBased(reject_cost=eps), u, losses)
    ref = cost_based_ref(u, losses, eps)
    check_against_ref(model, u, losses, ref)


@given(losses_and_uncertainty(max_size=12), st.floats(0.001, 1.0), st.floats(0.01, 2.0))
def test_models_agree_with_the_metric_functions(case, omega, lam):
    losses, u = case
    ba = fit(BoundedAbstention(target_coverage=omega), u, losses)
    assert approx_equal(ba.risk_, selective_risk_at_coverage(losses, u, omega))
    bi = fit(BoundedImprovement(target_risk=lam), u, losses)
    assert approx_equal(bi.coverage_, coverage_at_risk(losses, u, lam))


# --------------------------------------------------------------------------- hand cases
B_LOSS = np.array([1.0, 0.0, 0.0])
B_U = np.array([0.0, 0.0, 1.0])


def test_bounded_abstention_hand_cases():
    m = BoundedAbstention(target_coverage=0.5).fit(B_U, B_LOSS)
    assert (m.threshold_, m.accept_prob_) == (0.0, pytest.approx(0.75))
    assert (m.coverage_, m.risk_) == (pytest.approx(0.5), pytest.approx(0.5))
    # n * omega = 1.2 is not an integer: one untied sample is accepted with probability 0.2
    m = BoundedAbstention(target_coverage=0.3).fit([1, 2, 3, 4], [0, 1, 0, 1])
    assert (m.threshold_, m.accept_prob_) == (2.0, pytest.approx(0.2))
    assert (m.coverage_, m.risk_) == (pytest.approx(0.3), pytest.approx(1 / 6))
    np.testing.assert_allclose(m.accept_proba([1, 2, 3, 4, 0, 1.5, 2.5]),
                               [1, 0.2, 0, 0, 1, 1, 0], atol=1e-12)


def test_bounded_improvement_hand_cases():
    m = BoundedImprovement(target_risk=0.25).fit([1, 2, 3, 4], [0, 1, 0, 1])
    assert (m.threshold_, m.accept_prob_) == (2.0, pytest.approx(1 / 3))
    assert (m.coverage_, m.risk_, m.feasible_) == (pytest.approx(1 / 3), pytest.approx(0.25), True)


def test_bounded_improvement_feasible_beyond_an_infeasible_lowest_group():
    """The lowest tie group has mean loss 1/2 > 0.4, but accepting all three rows has risk
    1/3 <= 0.4: the maximal coverage is 1 (the target is feasible)."""
    m = fit(BoundedImprovement(target_risk=0.4), B_U, B_LOSS)
    assert m.feasible_, describe(m, B_U, B_LOSS)
    assert m.coverage_ == pytest.approx(1.0), describe(m, B_U, B_LOSS)
    assert m.risk_ == pytest.approx(1 / 3), describe(m, B_U, B_LOSS)
    assert m.threshold_ == 1.0


def test_bounded_improvement_infeasible():
    m = fit(BoundedImprovement(target_risk=0.3), B_U, B_LOSS)  # every rule has risk >= 1/3
    assert not m.feasible_
    assert m.coverage_ == 0.0 and m.threshold_ == -math.inf and math.isnan(m.risk_)
    np.testing.assert_array_equal(m.accept_proba([-1e300, 0.0, 1.0]), [0.0, 0.0, 0.0])
    assert not np.any(m.accept([-5.0, 0.0, 2.0]))


@pytest.mark.parametrize("binary", [True, False])
def test_least_risk_bound_is_the_feasibility_edge(binary):
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(1, 60))
        u = rng.integers(0, int(rng.integers(1, 20)), n).astype(float)  # many ties
        loss = (rng.random(n) < 0.3).astype(float) if binary else rng.random(n) ** 2
        delta = float(rng.choice([0.01, 0.1, 0.5]))
        least = least_risk_bound(u, loss, delta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            assert BoundedImprovement(min(least, 1.0), delta=delta).fit(u, loss).feasible_
            assert not BoundedImprovement(least * (1 - 1e-9), delta=delta).fit(
                u, loss).feasible_


def test_cost_based_hand_cases():
    m = CostBased(reject_cost=0.4).fit(B_U, B_LOSS)  # costs 0.4, 1.4/3, 1/3: accept all
    assert (m.coverage_, m.risk_, m.threshold_, m.accept_prob_) == (
        pytest.approx(1.0), pytest.approx(1 / 3), 1.0, 1.0)
    m = CostBased(reject_cost=0.3).fit(B_U, B_LOSS)  # costs 0.3, 1.3/3, 1/3: reject all
    assert m.coverage_ == 0.0 and m.threshold_ == -math.inf and math.isnan(m.risk_)
    # every prefix costs exactly 0.5: the largest coverage wins
    m = CostBased(reject_cost=0.5).fit([0, 0, 1, 1], [1, 0, 0, 1])
    assert (m.coverage_, m.threshold_, m.accept_prob_) == (1.0, 1.0, 1.0)


def test_cost_based_without_data_is_the_plug_in_rule():
    m = CostBased(reject_cost=0.3).fit()
    assert m.threshold_ == 0.3 and m.accept_prob_ == 1.0
    np.testing.assert_array_equal(m.accept_proba([0.1, 0.3, 0.30000000000000004, 0.5]),
                                  [1.0, 1.0, 0.0, 0.0])


# --------------------------------------------------------------------------- accept / accept_proba
@given(losses_and_uncertainty(max_size=10), st.floats(0.05, 1.0),
       st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=10))
def test_accept_proba_follows_the_threshold_rule_on_new_points(case, omega, extra):
    losses, u = case
    m = BoundedAbstention(target_coverage=omega).fit(u, losses)
    new = np.concatenate([u, np.array(extra) + 0.0, [m.threshold_]])
    expected = [float(x) for x in rule_acceptance(new, m.threshold_, m.accept_prob_)]
    np.testing.assert_allclose(m.accept_proba(new), expected, rtol=0, atol=0)


def test_accept_is_reproducible_and_follows_accept_proba():
    u = np.repeat([0.0, 1.0, 2.0], 4000)
    losses = np.tile([0.0, 1.0], 6000)
    m1 = BoundedAbstention(target_coverage=0.5, random_state=7).fit(u, losses)
    m2 = BoundedAbstention(target_coverage=0.5, random_state=7).fit(u, losses)
    a1, a2 = m1.accept(u), m2.accept(u)
    assert a1.dtype == np.bool_ and a1.shape == u.shape
    np.testing.assert_array_equal(a1, a2)
    # 6000 of 12000 rows: all of score 0 and half of score 1
    assert m1.threshold_ == 1.0 and m1.accept_prob_ == pytest.approx(0.5)
    assert np.all(a1[u == 0.0]) and not np.any(a1[u == 2.0])
    frac = a1[u == 1.0].mean()
    assert abs(frac - 0.5) < 5 * math.sqrt(0.25 / 4000), frac
    other = BoundedAbstention(target_coverage=0.5, random_state=8).fit(u, losses).accept(u)
    assert not np.array_equal(a1, other)


@pytest.mark.parametrize(
    "model", [CostBased(reject_cost=0.3), BoundedImprovement(target_risk=0.2),
              BoundedAbstention(target_coverage=0.8)], ids=lambda m: type(m).__name__)
def test_unfitted_model_raises_not_fitted_error(model):
    with pytest.raises(abstain.NotFittedError):
        model.accept_proba([0.1, 0.2])
    with pytest.raises(abstain.NotFittedError):
        model.accept([0.1, 0.2])


@pytest.mark.parametrize(
    "cls, params",
    [(CostBased, {"reject_cost": 0.3, "random_state": 3}),
     (BoundedImprovement, {"target_risk": 0.2, "random_state": 3}),
     (BoundedAbstention, {"target_coverage": 0.8, "random_state": 3})],
    ids=lambda x: getattr(x, "__name__", ""))
def test_scikit_learn_contract(cls, params):
    from sklearn.base import clone

    model = cls(**params)
    got = model.get_params()
    for key, value in params.items():
        assert got[key] == value
    assert model.fit([0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 1.0, 1.0]) is model
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "threshold_")


# --------------------------------------------------------------------------- properties
@given(losses_and_uncertainty(max_size=10), st.data())
def test_models_invariant_to_increasing_transforms_and_row_order(case, data):
    losses, u = case
    values = data.draw(increasing_values(len(np.unique(u))))
    v = increasing_remap(u, values)
    perm = list(data.draw(st.permutations(range(len(u)))))
    omega = data.draw(st.floats(0.05, 1.0))
    lam = data.draw(st.floats(0.05, 1.5))
    eps = data.draw(st.floats(0.01, 1.5))
    for make in (lambda: BoundedAbstention(target_coverage=omega),
                 lambda: BoundedImprovement(target_risk=lam),
                 lambda: CostBased(reject_cost=eps)):
        a = fit(make(), u, losses)
        b = fit(make(), v, losses)
        c = fit(make(), u[perm], losses[perm])
        for other in (b, c):
            assert approx_equal(other.coverage_, a.coverage_), describe(other, u, losses)
            assert approx_equal(other.risk_, a.risk_), describe(other, u, losses)
            assert bool(other.feasible_) == bool(a.feasible_)
        # the threshold moves with the transform
        if a.coverage_ > 0:
            assert b.threshold_ == increasing_remap(u, values)[list(u).index(a.threshold_)]


@given(losses_and_uncertainty(max_size=10), st.lists(st.floats(0.02, 2.0), min_size=2,
                                                      max_size=5))
def test_bounded_improvement_coverage_is_non_decreasing_in_target(case, targets):
    losses, u = case
    coverages = [fit(BoundedImprovement(target_risk=lam), u, losses).coverage_
                 for lam in sorted(targets)]
    assert all(b >= a - 1e-12 for a, b in zip(coverages, coverages[1:], strict=False)), coverages


@given(losses_and_uncertainty(max_size=10), st.floats(0.01, 2.0))
def test_cost_based_beats_every_threshold_rule(case, eps):
    losses, u = case
    m = fit(CostBased(reject_cost=eps), u, losses)
    got = empirical_cost(losses, m.accept_proba(u), eps)
    for t in [-math.inf, *np.unique(u)]:
        for nu in (0.5, 1.0):
            c = rule_acceptance(u, t, nu)
            assert got <= empirical_cost(losses, c, eps) + 1e-12


@given(losses_and_uncertainty(max_size=8), st.floats(0.02, 1.0))
def test_bounded_abstention_coverage_is_exact_and_risk_minimal(case, omega):
    losses, u = case
    m = fit(BoundedAbstention(target_coverage=omega), u, losses)
    assert m.coverage_ == pytest.approx(omega, rel=1e-12)
    if n_sorting_permutations(u) <= 720:
        assert approx_equal(m.risk_, bounded_abstention_ref(u, losses, omega).risk)


# --------------------------------------------------------------------------- equivalent_
# The parameters under which the other reject models return the same rule, checked against
# exhaustive search: every knot's empirical cost for the reject-cost interval, and fresh
# bounded-improvement fits inside and just outside the target-risk interval.
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
    return fit(BoundedImprovement(target_risk=target), u, losses)


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
            refit = _fit_bi(u, losses, low) if low > 0 else None
            if refit is not None:
                assert refit.coverage_ == pytest.approx(rule.coverage_, abs=1e-9)
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


# --------------------------------------------------------------------------- bad input
nan, inf = float("nan"), float("inf")
MODELS = {
    "CostBased": lambda: CostBased(reject_cost=0.3),
    "BoundedImprovement": lambda: BoundedImprovement(target_risk=0.2),
    "BoundedAbstention": lambda: BoundedAbstention(target_coverage=0.5),
}


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("bad", list(BAD_ARRAYS))
def test_fit_rejects_bad_arrays(model, bad):
    losses, u, match = BAD_ARRAYS[bad]
    with pytest.raises(ValueError, match=match):
        MODELS[model]().fit(u, losses)


@pytest.mark.parametrize("omega", [0.0, -0.2, 1.5, nan, inf])
def test_bad_target_coverage(omega):
    with pytest.raises(ValueError, match="target_coverage"):
        BoundedAbstention(target_coverage=omega).fit([0.1, 0.2], [0.0, 1.0])


@pytest.mark.parametrize("lam", [0.0, -0.5, nan])
def test_bad_target_risk(lam):
    with pytest.raises(ValueError, match="target_risk"):
        BoundedImprovement(target_risk=lam).fit([0.1, 0.2], [0.0, 1.0])


@pytest.mark.parametrize("eps", [nan, inf])
def test_bad_reject_cost(eps):
    with pytest.raises(ValueError, match="reject_cost"):
        CostBased(reject_cost=eps).fit([0.1, 0.2], [0.0, 1.0])


def test_cost_based_needs_both_arrays_or_none():
    with pytest.raises(ValueError, match="together"):
        CostBased(reject_cost=0.2).fit([0.1, 0.2])


def test_a_score_table_with_delta_takes_sgr_under_auto_and_refuses_learn_then_test():
    from abstain import ScoreTable

    rng = np.random.default_rng(2)
    u = rng.random(400).round(2)
    loss = (rng.random(400) < u / 2).astype(float)
    table = ScoreTable.from_arrays(u, loss)
    rule = BoundedImprovement(0.2, delta=0.1).fit(table)
    sgr = BoundedImprovement(0.2, delta=0.1, bound="sgr").fit(u, loss)
    assert rule.bound_ == "sgr" and rule.threshold_ == sgr.threshold_
    assert rule.risk_bound_ == sgr.risk_bound_
    with pytest.raises(ValueError, match="a ScoreTable keeps no rows. Give bound='sgr'"):
        BoundedImprovement(0.2, delta=0.1, bound="binomial").fit(table)


@pytest.mark.parametrize("delta, bound", [(None, "auto"), (0.1, "sgr"), (0.1, "binomial")])
def test_an_infeasible_warning_says_what_the_search_attains(delta, bound):
    from abstain.models import least_risk_bound

    rng = np.random.default_rng(3)
    u = rng.random(200)
    loss = ((rng.random(200) < 0.3) | (u < 0.05)).astype(float)  # the lowest scores lose
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InfeasibleTargetWarning)
        rule = BoundedImprovement(0.01, delta=delta, bound=bound).fit(u, loss)
    assert not rule.feasible_
    attainable = caught[0].message.attainable
    if delta is None:
        assert attainable == rule.min_risk_
    elif bound == "sgr":  # the least bound on the chain of prefixes that the search walked
        assert attainable == least_risk_bound(u, loss, delta, bound="sgr")
    else:  # Learn-then-Test tried the sequence of one target only
        assert attainable is None


def test_cost_based_cost_is_the_correctly_rounded_fraction():
    # loss / n + eps * ((n - accepted) / n) rounded three times: 7 / 10 read
    # 0.7000000000000001; and among the subnormals a one-ulp difference was refused at load
    from fractions import Fraction

    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 15))
        u = rng.integers(0, 4, n) / 4
        losses = (rng.random(n) < 0.5) * 1.0
        eps = float(rng.choice([0.25, 0.5, 0.75]))
        rule = CostBased(eps).fit(u, losses)
        acc = u <= rule.threshold_
        want = (sum(Fraction(x) for x in losses[acc]) + Fraction(eps) * int((~acc).sum())) / n
        assert rule.cost_ == float(want)
    u = np.array([0.25, 0.25, 0.25, 0.25, 0.5, 0.25, 0.25])
    losses = np.ldexp(np.array([0.5, 0.75, 0.0, 0.5, 0.75, 0.0, 0.75]), -1060)
    abstain.load_json(CostBased(math.ldexp(0.6875, -1060)).fit(u, losses).to_json())


def test_selective_classifier_names_empty_and_one_class_y():
    pytest.importorskip("sklearn")
    from sklearn.tree import DecisionTreeClassifier

    from abstain.models import SelectiveClassifier

    X = np.random.default_rng(0).normal(size=(18, 2))
    with pytest.raises(ValueError, match=r"^y must hold at least one row of every class; got "
                                         r"0 rows\."):
        SelectiveClassifier(DecisionTreeClassifier()).fit(np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ValueError, match=r"^y must hold at least 2 classes; got 1 class"):
        SelectiveClassifier(DecisionTreeClassifier()).fit(X, np.zeros(18))
    tree = DecisionTreeClassifier().fit(X, np.arange(18) % 2)
    with pytest.raises(ValueError, match=r"the prefit estimator must know every class of y"):
        SelectiveClassifier(tree, prefit=True).fit(X, np.arange(18) % 3)
