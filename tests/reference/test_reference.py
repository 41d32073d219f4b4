"""The references checked against hand-computed cases and against each other.

These tests do not import abstain: they validate the yardstick itself.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.metrics_ref import (
    augrc_linearity_ref,
    augrc_ref,
    aurc_linearity_ref,
    aurc_ref,
    e_aurc_ref,
    risk_coverage_curve_ref,
    sele_ref,
    selective_risk_at_coverage_ref,
    sorting_permutations,
)
from reference.models_ref import (
    bounded_abstention_ref,
    bounded_improvement_ref,
    cost_based_ref,
    empirical_cost,
    lp_bounded_abstention,
    lp_bounded_improvement,
    lp_cost_based,
)
from reference.scores_ref import (
    absolute_error_loss_ref,
    conditional_risk_ref,
    mcp_ref,
    zero_one_loss_ref,
)
from reference.strategies import losses_and_uncertainty, proper_uncertainty, random_case

# Case A: distinct scores. pi = (0, 1, 2, 3), partial sums L = 1, 1, 2, 2.
A_LOSS = np.array([1.0, 0.0, 1.0, 0.0])
A_U = np.array([0.1, 0.2, 0.3, 0.4])
# Case B: ties. Group {0, 1} (losses 1, 0) at score 0, then row 2 (loss 0) at score 1.
B_LOSS = np.array([1.0, 0.0, 0.0])
B_U = np.array([0.0, 0.0, 1.0])


# --------------------------------------------------------------------------- metrics
def test_hand_case_distinct_scores():
    assert aurc_ref(A_LOSS, A_U, exact=True) == F(1, 4) * (1 + F(1, 2) + F(2, 3) + F(2, 4))
    assert aurc_ref(A_LOSS, A_U, exact=True) == F(2, 3)
    assert aurc_ref(A_LOSS, A_U, ties="index", exact=True) == F(2, 3)
    assert augrc_ref(A_LOSS, A_U, exact=True) == F(6, 16)
    # oracle: sorted losses 0, 0, 1, 1 -> L = 0, 0, 1, 2 -> (1/4)(1/3 + 2/4) = 5/24
    assert aurc_ref(A_LOSS, A_LOSS, exact=True) == F(5, 24)
    assert e_aurc_ref(A_LOSS, A_U, exact=True) == F(2, 3) - F(5, 24)
    # sele: row 0 (loss 1) is <= all 4 scores, row 2 (loss 1) is <= 2 scores -> 6/16
    assert sele_ref(A_LOSS, A_U, exact=True) == F(3, 8)
    curve = risk_coverage_curve_ref(A_LOSS, A_U)
    np.testing.assert_array_equal(curve.thresholds, A_U)
    np.testing.assert_allclose(curve.coverage, [0.25, 0.5, 0.75, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(curve.risk, [1.0, 0.5, 2 / 3, 0.5], rtol=0, atol=1e-15)


def test_hand_case_ties():
    # index order (0, 1, 2): L = 1, 1, 1 -> (1/3)(1 + 1/2 + 1/3) = 11/18
    # other order (1, 0, 2): L = 0, 1, 1 -> (1/3)(0 + 1/2 + 1/3) = 5/18; mean 4/9
    assert aurc_ref(B_LOSS, B_U, ties="index", exact=True) == F(11, 18)
    assert aurc_ref(B_LOSS[[1, 0, 2]], B_U, ties="index", exact=True) == F(5, 18)
    assert aurc_ref(B_LOSS, B_U, ties="mean", exact=True) == F(4, 9)
    assert augrc_ref(B_LOSS, B_U, ties="index", exact=True) == F(1, 3)
    assert augrc_ref(B_LOSS, B_U, ties="mean", exact=True) == F(5, 18)
    # oracle: losses 0, 0, 1 -> L = 0, 0, 1 -> 1/9
    assert e_aurc_ref(B_LOSS, B_U, ties="mean", exact=True) == F(4, 9) - F(1, 9)
    assert e_aurc_ref(B_LOSS, B_U, ties="index", exact=True) == F(11, 18) - F(1, 9)
    assert sele_ref(B_LOSS, B_U, exact=True) == F(1, 3)
    curve = risk_coverage_curve_ref(B_LOSS, B_U)
    np.testing.assert_array_equal(curve.thresholds, [0.0, 1.0])
    np.testing.assert_allclose(curve.coverage, [2 / 3, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(curve.risk, [0.5, 1 / 3], rtol=0, atol=1e-15)
    # Coverage 1/3 accepts half of the tied group in expectation: loss 0.5 / count 1.
    assert selective_risk_at_coverage_ref(B_LOSS, B_U, 0.5, exact=True) == F(1, 2)
    assert selective_risk_at_coverage_ref(B_LOSS, B_U, 1.0, exact=True) == F(1, 3)
    # 5/6 of 3 = 2.5 rows: the tied group and half of row 2: loss 1 / 2.5
    assert selective_risk_at_coverage_ref(B_LOSS, B_U, 5 / 6) == pytest.approx(0.4, abs=1e-15)


def test_sorting_permutations_enumerates_tie_groups():
    perms = set(sorting_permutations([2.0, 1.0, 2.0, 1.0, 3.0]))
    assert perms == {(1, 3, 0, 2, 4), (3, 1, 0, 2, 4), (1, 3, 2, 0, 4), (3, 1, 2, 0, 4)}


def test_famous_all_tied_thirty_percent():
    losses = np.array([1.0] * 3 + [0.0] * 4)  # 3/7 errors, 7! = 5040 permutations
    u = np.zeros(7)
    assert aurc_ref(losses, u, exact=True) == F(3, 7)
    losses10 = np.array([1.0] * 3 + [0.0] * 7)
    rng = np.random.default_rng(0)
    for _ in range(5):
        perm = rng.permutation(10)
        assert aurc_linearity_ref(losses10[perm], np.zeros(10), exact=True) == F(3, 10)
        assert augrc_linearity_ref(losses10[perm], np.zeros(10), exact=True) == F(3, 10) * F(
            11, 20
        )


def test_permutation_average_equals_linearity_of_expectation():
    rng = np.random.default_rng(1)
    for _ in range(60):
        losses, u = random_case(rng, n_max=7)
        assert aurc_ref(losses, u) == pytest.approx(aurc_linearity_ref(losses, u), abs=1e-12)
        assert augrc_ref(losses, u) == pytest.approx(augrc_linearity_ref(losses, u), abs=1e-12)


def test_exact_mode_matches_float_mode():
    rng = np.random.default_rng(2)
    for _ in range(15):
        losses, u = random_case(rng, n_max=5)
        for ties in ("mean", "index"):
            assert float(aurc_ref(losses, u, ties=ties, exact=True)) == pytest.approx(
                aurc_ref(losses, u, ties=ties), abs=1e-12
            )


def test_aurc_equals_mean_of_selective_risks_at_coverages_i_over_n():
    # E[L(i)] is the expected loss of the randomised rule with coverage i/n.
    rng = np.random.default_rng(3)
    for _ in range(40):
        losses, u = random_case(rng, n_max=8)
        n = len(losses)
        risks = [
            selective_risk_at_coverage_ref(losses, u, F(i, n), exact=True) for i in range(1, n + 1)
        ]
        assert aurc_linearity_ref(losses, u, exact=True) == sum(risks, F(0)) / n
        expected_gen = sum((r * F(i, n) for i, r in enumerate(risks, start=1)), F(0)) / n
        assert augrc_linearity_ref(losses, u, exact=True) == expected_gen


@given(losses_and_uncertainty(max_size=6))
def test_reference_bounds(case):
    losses, u = case
    n = len(losses)
    sele = sele_ref(losses, u)
    harmonic = sum(1 / i for i in range(1, n + 1))
    for ties in ("mean", "index"):
        a = aurc_ref(losses, u, ties=ties)
        assert -1e-12 <= a <= losses.max() * (1 + 1e-12)
        # The general bound: each loss is weighted at most H_n times more in AuRC than in sele.
        assert a <= harmonic * sele * (1 + 1e-12)
        assert augrc_ref(losses, u, ties=ties) <= a * (1 + 1e-12)
        assert e_aurc_ref(losses, u, ties=ties) >= -1e-12
    if len(np.unique(u)) == n:
        # sele is then exactly the AuGRC, and AuGRC <= AuRC.
        assert sele == pytest.approx(augrc_ref(losses, u), rel=1e-12)
        assert sele <= aurc_ref(losses, u) * (1 + 1e-12)
    # Theorem 8 (AuRC < 2 sele) is proven (Lemma 15) for losses non-decreasing along the
    # order, e.g. for the oracle score u = losses.
    assert aurc_ref(losses, losses) <= 2 * sele_ref(losses, losses) * (1 + 1e-12)


def test_theorem_8_does_not_hold_for_every_score():
    """Counterexample to "AuRC <= 2 sele for any s": the only error ranked most confident.

    AuRC = H_4 / 4 = 25/48 > 1/2 = 2 sele; in general AuRC / sele = H_n here."""
    losses, u = np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.0, 1.0, 2.0, 3.0])
    assert aurc_ref(losses, u, exact=True) == F(25, 48)
    assert sele_ref(losses, u, exact=True) == F(1, 4)


@given(st.permutations(range(6)), losses_and_uncertainty(min_size=6, max_size=6))
def test_reference_mean_is_row_order_invariant(perm, case):
    losses, u = case
    perm = list(perm)
    assert aurc_ref(losses[perm], u[perm]) == pytest.approx(aurc_ref(losses, u), rel=1e-12)
    assert sele_ref(losses[perm], u[perm], exact=True) == sele_ref(losses, u, exact=True)


# --------------------------------------------------------------------------- models
def test_models_hand_case_ties():
    # Bounded abstention at coverage 1/3 (n*omega = 1): half of the tied group at score 0.
    ba = bounded_abstention_ref(B_U, B_LOSS, 0.5)
    assert (ba.threshold, ba.accept_prob, ba.coverage, ba.risk) == (0.0, F(3, 4), F(1, 2), F(1, 2))
    ba = bounded_abstention_ref(B_U, B_LOSS, 5 / 6)  # 2.5 rows: group 0 and half of row 2
    assert ba.threshold == 1.0 and float(ba.accept_prob) == pytest.approx(0.5, abs=1e-15)
    assert float(ba.risk) == pytest.approx(0.4, abs=1e-15)
    # Bounded improvement: the lowest group has mean loss 1/2 > 0.4, yet accepting everything
    # has risk 1/3 <= 0.4, so the maximal coverage is 1 (feasible).
    bi = bounded_improvement_ref(B_U, B_LOSS, 0.4)
    assert (bi.feasible, bi.coverage, bi.threshold, bi.accept_prob) == (True, 1, 1.0, 1)
    bi = bounded_improvement_ref(B_U, B_LOSS, 0.5)
    assert (bi.feasible, bi.coverage, bi.risk) == (True, 1, F(1, 3))
    bi = bounded_improvement_ref(B_U, B_LOSS, 0.3)  # every positive coverage has risk >= 1/3
    assert (bi.feasible, bi.coverage, bi.threshold) == (False, 0, -math.inf)
    assert math.isnan(bi.risk)
    # Cost based: eps = 0.4 -> costs k=0: 0.4, k=2: 1.4/3, k=3: 1/3 -> accept everything
    cb = cost_based_ref(B_U, B_LOSS, 0.4)
    assert (cb.coverage, cb.risk, cb.objective) == (1, F(1, 3), F(1, 3))
    cb = cost_based_ref(B_U, B_LOSS, 0.3)  # k=0: 0.3 < 1/3 -> reject everything
    assert (cb.coverage, cb.threshold) == (0, -math.inf) and math.isnan(cb.risk)


def test_models_hand_case_fractional_single_sample():
    losses = np.array([0.0, 1.0, 0.0, 1.0])
    u = np.array([1.0, 2.0, 3.0, 4.0])
    ba = bounded_abstention_ref(u, losses, 0.3)  # 1.2 rows: row 0 and 0.2 of row 1
    assert (ba.threshold, ba.accept_prob, ba.coverage, ba.risk) == (
        2.0, F(0.3) * 4 - 1, F(0.3), (F(0.3) * 4 - 1) / (F(0.3) * 4)
    )
    assert float(ba.risk) == pytest.approx(1 / 6, abs=1e-15)
    # Bounded improvement with lambda = 1/4: row 0 (loss 0) plus nu of row 1 (loss 1):
    # nu / (1 + nu) <= 1/4 -> nu = 1/3; then nothing more (row 2 needs row 1 fully).
    # Full rows 0..2: risk 1/3 > 1/4; rows 0..3 fully: 1/2. So coverage (1 + 1/3)/4 = 1/3.
    bi = bounded_improvement_ref(u, losses, 0.25)
    assert (bi.threshold, bi.accept_prob, bi.coverage, bi.risk) == (2.0, F(1, 3), F(1, 3), F(1, 4))


def test_cost_based_ties_prefer_largest_coverage():
    losses = np.array([1.0, 0.0, 0.0, 1.0])
    u = np.array([0.0, 0.0, 1.0, 1.0])
    cb = cost_based_ref(u, losses, 0.5)  # every prefix costs exactly 0.5
    assert (cb.coverage, cb.objective, cb.threshold, cb.accept_prob) == (1, F(1, 2), 1.0, 1)


def test_monotone_lp_is_only_a_relaxation_for_non_proper_scores():
    losses, u = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert bounded_abstention_ref(u, losses, 0.5).risk == 1
    assert lp_bounded_abstention(u, losses, 0.5) == pytest.approx(0.5, abs=1e-9)


def test_model_references_against_linprog():
    rng = np.random.default_rng(4)
    for _ in range(80):
        losses, u = random_case(rng, n_max=10)
        eps = float(rng.uniform(0.05, 1.5))
        # Cost based: the monotone LP is exact for every score.
        cb = cost_based_ref(u, losses, eps)
        assert float(cb.objective) == pytest.approx(lp_cost_based(u, losses, eps), abs=1e-9)
        # Bounded models: exact when the score is proper on the sample, where even the
        # LP over ALL per-group acceptance probabilities attains a threshold rule.
        v = proper_uncertainty(rng, losses)
        omega = float(rng.uniform(0.01, 1.0))
        lam = float(rng.uniform(0.05, 1.5))
        for monotone in (True, False):
            assert float(bounded_abstention_ref(v, losses, omega).risk) == pytest.approx(
                lp_bounded_abstention(v, losses, omega, monotone=monotone), abs=1e-9
            )
            assert float(bounded_improvement_ref(v, losses, lam).coverage) == pytest.approx(
                lp_bounded_improvement(v, losses, lam, monotone=monotone), abs=1e-9
            )
            assert float(cost_based_ref(v, losses, eps).objective) == pytest.approx(
                lp_cost_based(v, losses, eps, monotone=monotone), abs=1e-9
            )


def test_model_references_are_consistent_with_metric_references():
    rng = np.random.default_rng(5)
    for _ in range(60):
        losses, u = random_case(rng, n_max=10)
        omega = float(rng.uniform(0.01, 1.0))
        ba = bounded_abstention_ref(u, losses, omega)
        assert ba.coverage == F(omega)
        assert float(ba.risk) == selective_risk_at_coverage_ref(losses, u, omega)
        eps = float(rng.uniform(0.0, 2.0))
        cb = cost_based_ref(u, losses, eps)
        assert cb.objective == empirical_cost(losses, cb.acceptance, eps)
        # no threshold rule (deterministic or not) is cheaper
        for t in [-math.inf, *np.unique(u)]:
            c = [1 if v <= t else 0 for v in u]
            assert empirical_cost(losses, c, eps) >= cb.objective


# --------------------------------------------------------------------------- scores
def test_loss_matrices():
    np.testing.assert_array_equal(zero_one_loss_ref(3), [[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    np.testing.assert_array_equal(absolute_error_loss_ref(3), [[0, 1, 2], [1, 0, 1], [2, 1, 0]])


def test_conditional_risk_hand_cases():
    proba = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.5, 0.0, 0.5], [0.25, 0.25, 0.5]])
    pred, risk = conditional_risk_ref(proba, exact=True)
    np.testing.assert_array_equal(pred, [0, 1, 0, 2])
    np.testing.assert_array_equal(risk, [0.5, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(mcp_ref(proba), risk)
    # absolute error: the expected losses of row 2 are 1, 1, 1 -> lowest index 0
    pred, risk = conditional_risk_ref(proba, absolute_error_loss_ref(3), exact=True)
    np.testing.assert_array_equal(pred, [0, 1, 0, 1])
    np.testing.assert_array_equal(risk, [0.75, 0.5, 1.0, 0.75])
    pred, risk = conditional_risk_ref(proba, absolute_error_loss_ref(3), prediction=[2, 2, 2, 2])
    np.testing.assert_array_equal(risk, [1.25, 1.0, 1.0, 0.75])
