"""abstain.metrics against the brute-force references, properties, ties and bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference.metrics_ref import (
    as_list,
    augrc_linearity_ref,
    augrc_ref,
    aurc_linearity_ref,
    aurc_ref,
    e_aurc_ref,
    n_sorting_permutations,
    risk_coverage_curve_ref,
    sele_ref,
    selective_risk_at_coverage_ref,
)
from reference.models_ref import bounded_improvement_ref
from reference.strategies import (
    BAD_ARRAYS,
    increasing_remap,
    increasing_values,
    losses_and_uncertainty,
    random_case,
)

from abstain import BoundedImprovement
from abstain.metrics import (
    augrc,
    aurc,
    coverage_at_risk,
    e_aurc,
    risk_coverage_curve,
    sele_loss,
    selective_risk_at_coverage,
)

TIES = ("mean", "index")
N_RANDOM = 250


def close(got, expected, rel=1e-9, abs_=1e-12) -> bool:
    got, expected = float(got), float(expected)
    if math.isnan(expected):
        return math.isnan(got)
    return math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)


def assert_close(got, expected, what: str, losses, uncertainty, rel=1e-9, abs_=1e-12):
    assert close(got, expected, rel, abs_), (
        f"{what}: expected {float(expected)!r}, got {float(got)!r}\n"
        f"  losses={np.asarray(losses).tolist()!r}\n"
        f"  uncertainty={np.asarray(uncertainty).tolist()!r}"
    )


def boundary_risks(losses, uncertainty) -> list[float]:
    """Risks of the deterministic threshold rules, when every float sum is exact.

    Only for dyadic losses (multiples of 1/4): there a float implementation computes the
    risk of a rule without rounding, so a target exactly at an achievable risk tests the
    ``<=`` and not the rounding of a sum (which depends on the summation order)."""
    if not np.all(np.asarray(losses) * 4 == np.round(np.asarray(losses) * 4)):
        return []
    loss = as_list(losses, exact=True)
    u = as_list(uncertainty)
    out = []
    for t in set(u):
        accepted = [loss[j] for j in range(len(u)) if u[j] <= t]
        r = sum(accepted, Fraction(0)) / len(accepted)
        if r > 0 and Fraction(float(r)) == r:
            out.append(float(r))
    return out


# --------------------------------------------------------------------------- vs references
@pytest.fixture(scope="module")
def random_cases():
    rng = np.random.default_rng(12345)
    cases = []
    while len(cases) < N_RANDOM:
        losses, u = random_case(rng, n_max=8)
        if n_sorting_permutations(u) <= 5040:
            cases.append((losses, u))
    return cases


def assert_area_metrics_match(losses, u):
    """aurc, augrc and e_aurc equal their permutation references under both tie rules."""
    for ties in TIES:
        for fast, ref in ((aurc, aurc_ref), (augrc, augrc_ref), (e_aurc, e_aurc_ref)):
            assert_close(fast(losses, u, ties=ties), ref(losses, u, ties=ties),
                         f"{fast.__name__}(ties={ties!r})", losses, u)


def test_area_metrics_match_permutation_reference(random_cases):
    for losses, u in random_cases:
        assert_area_metrics_match(losses, u)
        assert_close(aurc(losses, u), aurc_ref(losses, u), "aurc default ties", losses, u)
        assert_close(sele_loss(losses, u), sele_ref(losses, u), "sele_loss", losses, u)


def test_area_metrics_match_linearity_reference_on_larger_inputs():
    rng = np.random.default_rng(7)
    for n in (9, 17, 40, 101):
        for _ in range(4):
            losses, u = random_case(rng, n_min=n, n_max=n)
            assert_close(aurc(losses, u), aurc_linearity_ref(losses, u), "aurc", losses, u)
            assert_close(augrc(losses, u), augrc_linearity_ref(losses, u), "augrc", losses, u)
            assert_close(aurc(losses, u, ties="index"), aurc_ref(losses, u, ties="index"),
                         "aurc(index)", losses, u)
            assert_close(sele_loss(losses, u), sele_ref(losses, u), "sele_loss", losses, u)


def test_risk_coverage_curve_matches_reference(random_cases):
    for losses, u in random_cases:
        got = risk_coverage_curve(losses, u)
        ref = risk_coverage_curve_ref(losses, u)
        np.testing.assert_array_equal(got.thresholds, ref.thresholds)
        np.testing.assert_allclose(got.coverage, ref.coverage, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.risk, ref.risk, rtol=1e-9, atol=1e-12)


def test_risk_coverage_curve_is_a_named_tuple():
    curve = risk_coverage_curve([1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    assert curve._fields == ("coverage", "risk", "thresholds")
    coverage, risk, thresholds = curve
    np.testing.assert_allclose(coverage, [2 / 3, 1.0], rtol=1e-15)
    np.testing.assert_allclose(risk, [0.5, 1 / 3], rtol=1e-15)
    np.testing.assert_array_equal(thresholds, [0.0, 1.0])


def test_selective_risk_at_coverage_matches_reference(random_cases):
    rng = np.random.default_rng(8)
    for losses, u in random_cases:
        n = len(losses)
        coverages = {1.0, 1 / n, float(rng.uniform(1e-3, 1.0)), float(rng.uniform(0.5, 1.0))}
        coverages |= {i / n for i in range(1, n + 1)}
        for cov in sorted(coverages):
            assert_close(selective_risk_at_coverage(losses, u, cov),
                         selective_risk_at_coverage_ref(losses, u, cov),
                         f"selective_risk_at_coverage(coverage={cov!r})", losses, u)


def test_coverage_at_risk_matches_reference(random_cases):
    rng = np.random.default_rng(9)
    for losses, u in random_cases:
        targets = {float(rng.uniform(0.01, 1.2)), float(rng.uniform(0.01, 0.5))}
        targets |= set(boundary_risks(losses, u))  # exact ties with an achievable risk
        for lam in sorted(targets):
            ref = bounded_improvement_ref(u, losses, lam)
            assert_close(coverage_at_risk(losses, u, lam), ref.coverage,
                         f"coverage_at_risk(target_risk={lam!r})", losses, u)


def test_coverage_at_risk_opens_the_next_group_by_a_slack_of_a_few_ulps():
    """Distinct scores, so the group sums are the losses: the first rows lie a few ulps
    below the target, the next a hair above it (beyond the 1e-12 that meets a target); the
    largest coverage accepts that row with the probability whose risk is exactly the
    target, computed in rationals. The slack is within the round-off of the running sums,
    and was taken as none."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        lam = float(rng.uniform(0.05, 0.95))
        k = int(rng.integers(1, 4))
        first = [lam - int(rng.integers(1, 9)) * math.ulp(lam) for _ in range(k)]
        nxt = lam * (1 + float(rng.uniform(1.5, 50)) * (k + 1) * 1e-12)
        losses, u = [*first, nxt, 1.0], [*range(k + 2)]
        slack = Fraction(lam) * k - sum(map(Fraction, first))
        nu = slack / (Fraction(nxt) - Fraction(lam))
        expected = float((k + min(nu, Fraction(1))) / (k + 2))
        got = coverage_at_risk(losses, u, lam)
        assert got == pytest.approx(expected, rel=1e-12, abs=0), (lam, first, nxt)
        rule = BoundedImprovement(lam).fit(u, losses)
        assert rule.coverage_ == pytest.approx(expected, rel=1e-12, abs=0)


def test_coverage_at_risk_is_the_same_in_subnormal_units():
    # losses and targets scaled by 2**-1070 (exact: whole numbers times a power of two);
    # the risks, divided as subnormals, kept too few bits: a risk above its target met it
    rng = np.random.default_rng(11)
    for _ in range(2000):
        n = int(rng.integers(2, 12))
        losses = rng.integers(0, 4, n).astype(float)
        u = rng.integers(0, 4, n).astype(float)
        lam = float(rng.integers(1, 48)) / 16
        tiny = coverage_at_risk(np.ldexp(losses, -1070), u, math.ldexp(lam, -1070))
        assert tiny == coverage_at_risk(losses, u, lam), (losses, u, lam)


@given(losses_and_uncertainty(max_size=6), st.floats(0.001, 1.0), st.floats(0.01, 2.0))
def test_all_metrics_match_references_hypothesis(case, coverage, target_risk):
    losses, u = case
    assert_area_metrics_match(losses, u)
    assert_close(sele_loss(losses, u), sele_ref(losses, u), "sele_loss", losses, u)
    assert_close(selective_risk_at_coverage(losses, u, coverage),
                 selective_risk_at_coverage_ref(losses, u, coverage),
                 f"selective_risk_at_coverage(coverage={coverage!r})", losses, u)
    assert_close(coverage_at_risk(losses, u, target_risk),
                 bounded_improvement_ref(u, losses, target_risk).coverage,
                 f"coverage_at_risk(target_risk={target_risk!r})", losses, u)
    got, ref = risk_coverage_curve(losses, u), risk_coverage_curve_ref(losses, u)
    np.testing.assert_array_equal(got.thresholds, ref.thresholds)
    np.testing.assert_allclose(got.coverage, ref.coverage, rtol=1e-12)
    np.testing.assert_allclose(got.risk, ref.risk, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- hand cases
def test_hand_computed_values():
    losses, u = [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]
    assert aurc(losses, u, ties="mean") == pytest.approx(4 / 9, abs=1e-15)
    assert aurc(losses, u, ties="index") == pytest.approx(11 / 18, abs=1e-15)
    assert aurc([0.0, 1.0, 0.0], u, ties="index") == pytest.approx(5 / 18, abs=1e-15)
    assert augrc(losses, u, ties="mean") == pytest.approx(5 / 18, abs=1e-15)
    assert augrc(losses, u, ties="index") == pytest.approx(1 / 3, abs=1e-15)
    assert e_aurc(losses, u) == pytest.approx(4 / 9 - 1 / 9, abs=1e-15)
    assert sele_loss(losses, u) == pytest.approx(1 / 3, abs=1e-15)
    assert selective_risk_at_coverage(losses, u, 0.5) == pytest.approx(0.5, abs=1e-15)
    assert selective_risk_at_coverage(losses, u, 5 / 6) == pytest.approx(0.4, abs=1e-15)
    # the lowest tie group (mean loss 1/2) misses 0.4, accepting everything (1/3) meets it
    assert coverage_at_risk(losses, u, 0.4) == pytest.approx(1.0, abs=1e-15)
    assert coverage_at_risk(losses, u, 0.5) == pytest.approx(1.0, abs=1e-15)
    assert coverage_at_risk(losses, u, 0.3) == 0.0
    # distinct scores, lambda = 1/4: row 0 plus 1/3 of row 1
    assert coverage_at_risk([0, 1, 0, 1], [1, 2, 3, 4], 0.25) == pytest.approx(1 / 3, abs=1e-15)
    assert selective_risk_at_coverage([0, 1, 0, 1], [1, 2, 3, 4], 0.3) == pytest.approx(
        1 / 6, abs=1e-15
    )
    assert aurc([1, 0, 1, 0], [0.1, 0.2, 0.3, 0.4]) == pytest.approx(2 / 3, abs=1e-15)


def test_single_sample():
    for ties in TIES:
        assert aurc([0.7], [3.0], ties=ties) == pytest.approx(0.7)
        assert augrc([0.7], [3.0], ties=ties) == pytest.approx(0.7)
        assert e_aurc([0.7], [3.0], ties=ties) == pytest.approx(0.0, abs=1e-15)
    assert sele_loss([0.7], [3.0]) == pytest.approx(0.7)
    assert selective_risk_at_coverage([0.7], [3.0], 0.25) == pytest.approx(0.7)
    assert coverage_at_risk([0.7], [3.0], 0.7) == pytest.approx(1.0)
    assert coverage_at_risk([0.7], [3.0], 0.5) == 0.0


def test_integer_inputs_are_accepted():
    losses = np.array([1, 0, 0, 1, 0])
    u = np.array([3, 1, 1, 2, 3])
    for ties in TIES:
        assert aurc(losses, u, ties=ties) == pytest.approx(aurc_ref(losses, u, ties=ties))
    assert sele_loss(losses, u) == pytest.approx(sele_ref(losses, u))


# --------------------------------------------------------------------------- the tie demo
def test_all_tied_scores_thirty_percent_errors_ten_row_orders():
    """ties='mean' is exactly the error rate whatever the row order; ties='index' is not."""
    rng = np.random.default_rng(30)
    base = np.array([1.0] * 3 + [0.0] * 7)
    u = np.full(10, 0.42)
    orders = set()
    while len(orders) < 10:
        orders.add(tuple(rng.permutation(10)))
    mean_values, index_values = [], []
    for order in sorted(orders):
        losses = base[list(order)]
        mean_values.append(aurc(losses, u, ties="mean"))
        index_values.append(aurc(losses, u, ties="index"))
        assert index_values[-1] == pytest.approx(aurc_ref(losses, u, ties="index"), abs=1e-15)
        assert augrc(losses, u, ties="mean") == pytest.approx(0.3 * 11 / 20, abs=1e-15)
    for v in mean_values:
        assert v == pytest.approx(0.30, abs=1e-15), mean_values
    assert len(set(mean_values)) == 1, f"ties='mean' depends on row order: {mean_values}"
    assert len(set(np.round(index_values, 12))) >= 5, index_values
    assert max(index_values) - min(index_values) > 0.1, index_values


def test_all_tied_scores_thirty_percent_errors_is_0_30():
    """With one tie group the expectation is the group mean loss, 3/10, whatever n and row
    order: the same float every time, within float64 round-off (a few ulp) of 0.3."""
    rng = np.random.default_rng(30)
    base = np.array([1.0] * 3 + [0.0] * 7)
    got = [aurc(base[rng.permutation(10)], np.full(10, 0.42)) for _ in range(10)]
    assert len(set(got)) == 1, got
    assert got[0] == pytest.approx(0.3, rel=1e-15, abs=0.0)
    big = np.array([1.0] * 300_000 + [0.0] * 700_000)
    assert aurc(big, np.zeros(big.size)) == pytest.approx(0.3, rel=1e-12, abs=0.0)


# --------------------------------------------------------------------------- properties
@given(losses_and_uncertainty(), st.data())
def test_mean_metrics_are_row_order_invariant(case, data):
    losses, u = case
    perm = list(data.draw(st.permutations(range(len(losses)))))
    lp, up = losses[perm], u[perm]
    for f in (aurc, augrc, e_aurc):
        assert close(f(lp, up), f(losses, u)), f.__name__
    assert close(sele_loss(lp, up), sele_loss(losses, u))
    for cov in (0.3, 0.75, 1.0):
        assert close(selective_risk_at_coverage(lp, up, cov),
                     selective_risk_at_coverage(losses, u, cov))
    for lam in (0.25, 0.6):
        assert close(coverage_at_risk(lp, up, lam), coverage_at_risk(losses, u, lam))
    a, b = risk_coverage_curve(lp, up), risk_coverage_curve(losses, u)
    np.testing.assert_array_equal(a.thresholds, b.thresholds)
    np.testing.assert_allclose(a.risk, b.risk, rtol=1e-12, atol=1e-12)


@given(losses_and_uncertainty(), st.data())
def test_metrics_invariant_to_strictly_increasing_transforms(case, data):
    losses, u = case
    v = increasing_remap(u, data.draw(increasing_values(len(np.unique(u)))))
    for ties in TIES:
        for f in (aurc, augrc, e_aurc):
            assert f(losses, v, ties=ties) == f(losses, u, ties=ties), f.__name__
    assert sele_loss(losses, v) == sele_loss(losses, u)
    for cov in (0.2, 0.5, 1.0):
        assert selective_risk_at_coverage(losses, v, cov) == selective_risk_at_coverage(
            losses, u, cov
        )
    for lam in (0.1, 0.5, 2.0):
        assert coverage_at_risk(losses, v, lam) == coverage_at_risk(losses, u, lam)
    a, b = risk_coverage_curve(losses, v), risk_coverage_curve(losses, u)
    np.testing.assert_array_equal(a.coverage, b.coverage)
    np.testing.assert_array_equal(a.risk, b.risk)


@given(losses_and_uncertainty(max_size=12))
def test_bounds(case):
    losses, u = case
    n = len(losses)
    tol = 1e-12 * max(1.0, float(losses.max()))
    sele = sele_loss(losses, u)
    harmonic = sum(1 / i for i in range(1, n + 1))
    for ties in TIES:
        a = aurc(losses, u, ties=ties)
        assert -tol <= a <= losses.max() + tol
        assert augrc(losses, u, ties=ties) <= a + tol
        assert e_aurc(losses, u, ties=ties) >= -tol
        assert a <= harmonic * sele + tol  # see test_theorem_8_needs_sorted_losses
    if len(np.unique(u)) == n:
        assert sele <= aurc(losses, u) + tol
        assert sele == pytest.approx(augrc(losses, u), rel=1e-9, abs=tol)
    # Theorem 8 holds where its proof applies: losses non-decreasing along the order.
    assert aurc(losses, losses) <= 2 * sele_loss(losses, losses) + tol
    assert 0.0 <= coverage_at_risk(losses, u, 0.5) <= 1.0
    r = selective_risk_at_coverage(losses, u, 0.5)
    assert -tol <= r <= losses.max() + tol
    assert selective_risk_at_coverage(losses, u, 1.0) == pytest.approx(losses.mean(), abs=tol)


def test_theorem_8_needs_sorted_losses():
    """Known limitation of the paper's Theorem 8 ("AuRC < 2 sele for any s"): its proof
    assumes losses non-decreasing along the order. Only error ranked most confident:
    AuRC = H_4/4 = 25/48 > 1/2 = 2 sele."""
    losses, u = [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 2.0, 3.0]
    assert aurc(losses, u) == pytest.approx(25 / 48, abs=1e-15)
    assert sele_loss(losses, u) == pytest.approx(1 / 4, abs=1e-15)


@given(losses_and_uncertainty(max_size=12))
def test_aurc_is_the_mean_selective_risk_over_coverages_i_over_n(case):
    losses, u = case
    n = len(losses)
    risks = [selective_risk_at_coverage(losses, u, i / n) for i in range(1, n + 1)]
    assert close(aurc(losses, u), math.fsum(risks) / n)
    assert close(augrc(losses, u), math.fsum(r * i / n for i, r in enumerate(risks, 1)) / n)


@given(losses_and_uncertainty(max_size=10), st.lists(st.floats(0.01, 3.0), min_size=2,
                                                      max_size=5))
def test_coverage_at_risk_is_non_decreasing_in_target(case, targets):
    losses, u = case
    coverages = [coverage_at_risk(losses, u, lam) for lam in sorted(targets)]
    assert all(b >= a - 1e-12 for a, b in zip(coverages, coverages[1:], strict=False)), coverages
    assert coverage_at_risk(losses, u, float(losses.max()) + 1.0) == 1.0


@given(losses_and_uncertainty(max_size=10))
def test_ties_agree_when_scores_are_distinct(case):
    losses, u = case
    if len(np.unique(u)) == len(u):
        for f in (aurc, augrc, e_aurc):
            assert close(f(losses, u, ties="mean"), f(losses, u, ties="index"))


# --------------------------------------------------------------------------- bad input
METRICS = {
    "risk_coverage_curve": risk_coverage_curve,
    "aurc": aurc,
    "aurc_index": lambda losses, u: aurc(losses, u, ties="index"),
    "e_aurc": e_aurc,
    "augrc": augrc,
    "sele_loss": sele_loss,
    "selective_risk_at_coverage": lambda losses, u: selective_risk_at_coverage(losses, u, 0.5),
    "coverage_at_risk": lambda losses, u: coverage_at_risk(losses, u, 0.2),
}

nan, inf = float("nan"), float("inf")


@pytest.mark.parametrize("metric", list(METRICS))
@pytest.mark.parametrize("bad", list(BAD_ARRAYS))
def test_bad_arrays_raise_value_error_naming_the_argument(metric, bad):
    losses, u, match = BAD_ARRAYS[bad]
    with pytest.raises(ValueError, match=match):
        METRICS[metric](losses, u)


@pytest.mark.parametrize("coverage", [0.0, -0.1, 1.5, nan, inf])
def test_bad_coverage(coverage):
    with pytest.raises(ValueError, match="coverage"):
        selective_risk_at_coverage([0.0, 1.0], [0.0, 1.0], coverage)


@pytest.mark.parametrize("target_risk", [0.0, -0.5, nan])
def test_bad_target_risk(target_risk):
    with pytest.raises(ValueError, match="target_risk"):
        coverage_at_risk([0.0, 1.0], [0.0, 1.0], target_risk)


@pytest.mark.parametrize("metric", [aurc, e_aurc, augrc])
@pytest.mark.parametrize("ties", ["foo", "min", "Mean", None])
def test_unknown_ties(metric, ties):
    with pytest.raises(ValueError, match="ties"):
        metric([0.0, 1.0], [0.0, 1.0], ties=ties)


def test_the_three_areas_check_ties_and_tables_alike_and_scale_losses_alike():
    """aurc, augrc and e_aurc share one path: the same refusals, the same power-of-two scale."""
    from abstain.tables import ScoreTable

    table = ScoreTable.from_arrays([0.1, 0.2, 0.2], [0.0, 1.0, 0.0])
    for f in (aurc, augrc, e_aurc):
        with pytest.raises(ValueError, match=r"^ties must be one of 'mean', 'index'; got 'x'\.$"):
            f([0, 1], [0.1, 0.2], ties="x")
        with pytest.raises(ValueError, match=r"^ties='index' needs the row order, which a "
                                             r"ScoreTable does not keep"):
            f(table, ties="index")
        assert f(table) == f([0.0, 1.0, 0.0], [0.1, 0.2, 0.2])
        for ties in TIES:  # losses scaled by a power of two: the metric scales exactly
            small = f([0.0, 1.0, 0.5], [0.3, 0.1, 0.2], ties=ties)
            assert f([0.0, 2.0**1000, 2.0**999], [0.3, 0.1, 0.2], ties=ties) == small * 2.0**1000


def test_risk_at_coverage_is_the_risk_bounded_abstention_reports():
    # the docstring's claim, to the last bit: 92 of 1,200 such cases differed by one ulp
    from abstain import BoundedAbstention

    rng = np.random.default_rng(21)
    for _ in range(300):
        n = int(rng.integers(1, 30))
        u = rng.integers(0, 5, n) / 4.0
        losses = rng.choice([0.0, 1.0, 0.3, 0.7], n)
        for c in (rng.uniform(0.01, 1.0), (int(rng.integers(1, n + 1))) / n):
            rule = BoundedAbstention(c).fit(u, losses)
            assert selective_risk_at_coverage(losses, u, c) == rule.risk_


def test_risk_at_a_subnormal_coverage_is_the_first_groups_mean_loss():
    # coverage * n * loss underflowed: 0.0, or 0.5 above the largest loss
    from abstain import BoundedAbstention

    for losses, u, want in (([0.3], [0.1], 0.3), ([0.3, 0.0], [0.1, 0.2], 0.3),
                            ([1e-300, 0.0], [0.1, 0.2], 1e-300),
                            ([1e-300, 1e-300, 0.0], [0.1, 0.1, 0.2], 1e-300)):
        for c in (5e-324, 1e-300, 1e-17):
            assert selective_risk_at_coverage(losses, u, c) == want
            assert BoundedAbstention(c).fit(u, losses).risk_ == want


def test_a_tables_target_given_in_the_place_of_uncertainty_is_named():
    # "coverage must be a real number; got None" for the natural call f(table, 0.5)
    from abstain import ScoreTable

    table = ScoreTable.from_arrays([0.1, 0.2], [0.0, 1.0])
    with pytest.raises(ValueError, match=r"^coverage must be given by name with a ScoreTable "
                                         r".*selective_risk_at_coverage\(table, coverage=0\.5\)"):
        selective_risk_at_coverage(table, 0.5)
    with pytest.raises(ValueError, match=r"^target_risk must be given by name .*"
                                         r"coverage_at_risk\(table, target_risk=0\.5\)"):
        coverage_at_risk(table, 0.5)
    with pytest.raises(ValueError, match=r"^coverage must be given; got None\.$"):
        selective_risk_at_coverage([0.0, 1.0], [0.1, 0.2])
    assert selective_risk_at_coverage(table, coverage=0.5) == 0.0
