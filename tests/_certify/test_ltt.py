"""Learn-then-Test p-values and fixed-sequence search against the brute-force references,
and the validity of each p-value checked exactly against binomial laws."""

import itertools
import math

import numpy as np
import pytest
from reference.ltt_ref import (
    PVALUE_REF,
    binomial_cdf_ref,
    hb_pvalue_ref,
    ltt_ref,
)
from scipy import stats

from abstain._certify.ltt import (
    binomial_pvalue,
    hb_pvalue,
    ltt_least,
    ltt_search,
    upper_bound,
    wsr_pvalue,
)

DELTAS = (0.05, 0.1, 0.3)


def _pvalue(bound, xs, a, d):
    xs = np.asarray(xs, float)
    if bound == "wsr":
        return float(wsr_pvalue(xs, np.ones((1, xs.size), bool), a, d)[0])
    m = np.array(float(xs.size))
    if bound == "binomial":
        return float(binomial_pvalue(np.array(float(round(xs.sum()))), m, a))
    return float(hb_pvalue(np.array(xs.sum()), m, a))


@pytest.mark.parametrize("bound", ["binomial", "hb", "wsr"])
def test_pvalues_match_reference(bound):
    rng = np.random.default_rng(1)
    for _ in range(150):
        m = int(rng.integers(0, 50))
        a = float(rng.choice([0.01, 0.05, 0.2, 0.5, 0.9, 1.0, 1.5]))
        d = float(rng.choice(DELTAS))
        xs = (rng.random(m) < rng.random()).astype(float)
        if bound != "binomial" and rng.random() < 0.5:
            xs = rng.random(m) ** 3
        ref = PVALUE_REF[bound](xs.tolist(), a, d)
        assert _pvalue(bound, xs, a, d) == pytest.approx(ref, rel=1e-9, abs=1e-300)


def test_wsr_rows_of_a_mask_are_separate_sequences():
    rng = np.random.default_rng(2)
    x = rng.random(40)
    mask = rng.random((6, 40)) < 0.5
    mask[0] = False
    got = wsr_pvalue(x, mask, 0.3, 0.1)
    want = [PVALUE_REF["wsr"](x[row].tolist(), 0.3, 0.1) for row in mask]
    np.testing.assert_allclose(got, want, rtol=1e-9)
    assert got[0] == 1.0


@pytest.mark.parametrize("bound", ["binomial", "hb"])
def test_pvalue_is_valid_exactly_for_bernoulli_losses(bound):
    # Under the least favourable null (mean exactly a), P(p <= delta) <= delta, summed
    # exactly over the binomial law of the number of errors.
    for m in range(1, 80):
        for a in (0.02, 0.1, 0.35):
            k = np.arange(m + 1.0)
            if bound == "binomial":
                p = binomial_pvalue(k, np.full(k.size, float(m)), a)
            else:
                p = hb_pvalue(k, np.full(k.size, float(m)), a)
            pmf = stats.binom.pmf(k, m, a)
            for d in DELTAS:
                assert pmf[p <= d].sum() <= d * (1 + 1e-12)


def test_wsr_pvalue_is_valid_exactly_for_bernoulli_sequences():
    # Every 0/1 sequence of length m, weighted by its probability under mean a.
    for m in (1, 3, 6, 10):
        seqs = np.array(list(itertools.product((0.0, 1.0), repeat=m)))
        for a in (0.1, 0.3):
            weight = a ** seqs.sum(axis=1) * (1 - a) ** (m - seqs.sum(axis=1))
            for d in DELTAS:
                p = np.array([_pvalue("wsr", s, a, d) for s in seqs])
                assert weight[p <= d].sum() <= d * (1 + 1e-12)


def test_binomial_tail_reference_agrees_with_scipy():
    for m, k, a in [(10, 0, 0.1), (50, 3, 0.05), (200, 30, 0.2)]:
        assert binomial_cdf_ref(k, m, a) == pytest.approx(stats.binom.cdf(k, m, a), rel=1e-12)


def test_binomial_upper_bound_is_clopper_pearson():
    rng = np.random.default_rng(4)
    for _ in range(30):
        m = int(rng.integers(1, 400))
        k = int(rng.integers(0, m))
        x = np.zeros(m)
        x[:k] = 1.0
        d = float(rng.choice(DELTAS))
        got = upper_bound("binomial", np.zeros(m), x, 0.0, d)
        assert got == pytest.approx(stats.beta.ppf(1 - d, k + 1, m - k), rel=1e-9)
        assert binomial_pvalue(np.array(float(k)), np.array(float(m)), got) <= d


@pytest.mark.parametrize("bound", ["hb", "wsr"])
def test_upper_bound_passes_and_is_least(bound):
    rng = np.random.default_rng(5)
    for _ in range(10):
        m = int(rng.integers(1, 200))
        x = rng.random(m) ** 2
        d = float(rng.choice(DELTAS))
        b = upper_bound(bound, np.zeros(m), x, 0.0, d)
        if b < 1.0:
            assert PVALUE_REF[bound](x.tolist(), b, d) <= d
            assert PVALUE_REF[bound](x.tolist(), b * (1 - 1e-8), d) > d


@pytest.mark.parametrize("bound", ["binomial", "hb", "wsr"])
def test_search_matches_reference_with_ties(bound):
    rng = np.random.default_rng(6)
    for _ in range(20):
        n = int(rng.integers(1, 250))
        u = rng.integers(0, int(rng.integers(1, 30)), n).astype(float)  # many ties
        if bound == "binomial":
            x = (rng.random(n) < 0.3 * u / max(u.max(), 1.0)).astype(float)
        else:
            x = rng.random(n) * u / max(u.max(), 1.0)
        a = float(rng.choice([0.02, 0.1, 0.2, 0.4]))
        d = float(rng.choice(DELTAS))
        got = ltt_search(u, x, a, d, bound)
        want = ltt_ref(u.tolist(), x.tolist(), a, d, bound)
        if want is None:
            assert math.isnan(got.threshold) and math.isnan(got.bound)
        else:
            assert got.threshold == pytest.approx(want, rel=1e-12)
            assert got.bound <= a


def test_hb_reference_hand_case():
    # 0 errors in 30: Hoeffding gives (1 - a)^30, Bentkus e (1 - a)^30: the first is smaller
    assert hb_pvalue_ref([0.0] * 30, 0.1) == pytest.approx(0.9**30)


@pytest.mark.parametrize("bound", ["binomial", "hb", "wsr"])
def test_least_target_is_the_least_the_reference_search_meets(bound):
    # Feasibility on a grid of targets by the reference search: never below the least target;
    # the search meets the least target and not the float below it; from an infeasible target
    # above it, the least at or above that one. (The edges are checked with the search itself:
    # the reference's p-values differ from it in the last bits.)
    rng = np.random.default_rng(8)
    grid = np.linspace(0.005, 0.995, 67)
    for _ in range(6):
        n = int(rng.integers(20, 160))
        u = rng.integers(0, int(rng.integers(2, 25)), n).astype(float)  # many ties
        x = (rng.random(n) < rng.random()).astype(float)
        if bound != "binomial":
            x = x * np.round(rng.random(n) * 8) / 8
        d = float(rng.choice(DELTAS))

        def meets(a, scale=1.0, u=u, x=x, d=d):
            return not math.isnan(ltt_search(u, x, a / scale, d, bound).threshold)

        feasible = np.array([ltt_ref(u.tolist(), x.tolist(), a, d, bound) is not None
                             for a in grid])
        least = ltt_least(u, x, d, bound)
        assert meets(least) and not meets(math.nextafter(least, 0.0))
        assert not np.any(feasible[grid < least])
        for above in grid[~feasible & (grid > least)][:2]:
            after = ltt_least(u, x, d, bound, above=float(above))
            assert meets(after) and not meets(math.nextafter(after, 0.0))
            assert not np.any(feasible[(grid >= above) & (grid < after)])
        # in the units of a loss bound of 2: the least target of the search on x = loss / 2
        scaled = ltt_least(u, x, d, bound, scale=2.0)
        assert meets(scaled, 2.0) and not meets(math.nextafter(scaled, 0.0), 2.0)


@pytest.mark.parametrize("bound", ["binomial", "hb", "wsr"])
def test_the_bound_of_a_rule_at_its_least_target_is_at_most_the_target(bound):
    # the bisection's upper end once lay up to a relative 1e-12 above the target its
    # threshold had passed at: a feasible rule reported a bound above its own target
    from abstain import BoundedImprovement
    from abstain.models import least_risk_bound

    u = np.arange(60) / 60.0
    ls = np.zeros(60)
    ls[[5, 17, 29, 41, 44, 47, 50, 53, 56, 58, 59]] = 1.0
    t = least_risk_bound(u, ls, 0.1, bound=bound)
    m = BoundedImprovement(t, delta=0.1, bound=bound).fit(u, ls)
    assert m.feasible_ and m.risk_bound_ <= t


def test_the_bound_reads_the_loss_total_the_search_read():
    # the search summed the accepted losses in score order, the bound in row order: one
    # target passed the search's test and failed the bound's, which then came out above it
    from abstain import BoundedImprovement
    from abstain.models import least_risk_bound

    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(20, 300))
        u = rng.integers(0, 12, n).astype(float) / 10
        loss = np.round(rng.random(n) * (0.1 + u / 3), 1)
        delta = float(rng.choice([0.05, 0.1, 0.3]))
        t = least_risk_bound(u, loss, delta, bound="hb")
        m = BoundedImprovement(t, delta=delta, bound="hb").fit(u, loss)
        assert m.feasible_ and m.risk_bound_ <= t, (n, delta, t)


def test_hb_takes_the_ceil_of_the_loss_total_itself():
    # m * (k / m) is 26.000000000000004 for k = 26, m = 398: its ceil, 27, made the Bentkus
    # term 60 % too large
    m, k, a = 398.0, 26.0, 0.1
    bentkus = math.e * stats.binom.cdf(k, m, a)
    assert hb_pvalue(np.array(k), np.array(m), a) == pytest.approx(min(bentkus, 1.0), rel=1e-9)


def test_hb_takes_the_ceil_of_the_exact_loss_total_of_the_rows():
    # twenty 1.0s, twenty 0.1s and sixty 0s: the float 0.1 is above 1/10, so the exact total
    # is above 22, but the running sum rounds to 22.0; its ceil, 22, made the Bentkus term
    # too small and certified targets that the exact test rejects
    from fractions import Fraction

    from abstain.models import least_risk_bound

    n = 112  # rows 0, 10, ..., 110 fix the grid; the other 100 test it
    test = np.arange(n) % 10 != 0
    loss = np.zeros(n)
    loss[test] = [1.0] * 20 + [0.1] * 20 + [0.0] * 60
    total = sum(Fraction(v) for v in loss[test].tolist())
    assert total > 22 and float(np.cumsum(np.sort(loss[test]))[-1]) == 22.0

    def exact_pvalue(a: float) -> float:
        r = float(total / 100)
        h = r * math.log(r / a) + (1 - r) * math.log((1 - r) / (1 - a))
        return min(math.exp(-100 * h), math.e * stats.binom.cdf(math.ceil(total), 100, a), 1.0)

    least = least_risk_bound(np.zeros(n), loss, delta=0.1, bound="hb")
    assert exact_pvalue(least) <= 0.1 * (1 + 1e-12)  # the reference's own round-off
    assert least > 0.3165  # not the 0.30581 of the rounded total
