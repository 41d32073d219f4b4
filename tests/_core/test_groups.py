"""The float16 path of the shared grouping (``group_totals``): the same groups and totals
as the sort, and the metrics and fits on fp16 scores equal to a brute-force reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference.metrics_ref import expected_prefix_losses_ref
from reference.metrics_ref import sorted_group_totals as _sorted_totals

from abstain import BoundedAbstention, ScoreTable
from abstain._core import counting, groups, prefix
from abstain.metrics import augrc, aurc

N = counting._HALF_MIN_ROWS + 7


def _fp16_rows(rng, n=N):
    u = rng.normal(0.0, 30.0, n).astype(np.float16).astype(np.float64)
    u[:3], u[3:6] = -0.0, 0.0  # one group of zeros
    u[6], u[7] = 65504.0, -65504.0  # the extreme finite float16 numbers
    u[8] = 2.0 ** -24  # the smallest subnormal
    return u


@pytest.mark.parametrize("seed", [0, 1])
def test_float16_path_gives_the_groups_of_the_sort(seed) -> None:
    rng = np.random.default_rng(seed)
    u = _fp16_rows(rng)
    binary = (rng.random(N) < 0.3).astype(float)
    whole = rng.integers(0, 5, N).astype(np.int64)
    continuous = rng.random(N)
    assert counting.half_totals(u, (binary,)) is not None  # the path under test applies
    values, counts, (b, w, c) = groups.group_totals(u, binary, whole, continuous)
    ref_values, ref_counts, (rb, rw, rc) = _sorted_totals(u, binary, whole, continuous)
    assert np.array_equal(values, ref_values) and np.all(np.diff(values) > 0)
    assert np.array_equal(counts, ref_counts) and counts.dtype == np.int64
    assert np.array_equal(b, rb) and np.array_equal(w, rw) and w.dtype == np.int64
    np.testing.assert_allclose(c, rc, rtol=1e-12)
    # each continuous group total to about its last digit (the sum of its rows in row
    # order lost about n eps of a large group)
    g = int(np.argmax(counts))
    exact = math.fsum(continuous[u == values[g]].tolist())
    assert c[g] == pytest.approx(exact, rel=4.5e-16, abs=0.0)


def test_float16_path_sums_the_zero_group_whatever_the_zeros_sign() -> None:
    # +0.0 and -0.0 were two bins added at the end: the group's sum depended on the signs
    rng = np.random.default_rng(3)
    u = _fp16_rows(rng)
    u[rng.random(N) < 0.05] = 0.0
    continuous = rng.random(N)
    mixed = u.copy()
    zeros = np.flatnonzero(u == 0.0)
    mixed[zeros[rng.random(zeros.size) < 0.5]] = -0.0
    values, _, (c,) = groups.group_totals(u, continuous)
    _, _, (c_mixed,) = groups.group_totals(mixed, continuous)
    assert np.array_equal(c_mixed, c)
    exact = math.fsum(continuous[u == 0.0].tolist())
    assert c[np.flatnonzero(values == 0.0)[0]] == pytest.approx(exact, rel=4.5e-16, abs=0.0)
    assert aurc(continuous, mixed) == aurc(continuous, u)


def test_float16_path_applies_only_where_it_can() -> None:
    rng = np.random.default_rng(2)
    u = _fp16_rows(rng)
    w = np.ones(N)
    assert counting.half_totals(u[:1000], (w[:1000],)) is None  # few rows: the sort
    late = u.copy()
    late[-1] = 0.1  # not a float16 number, after the first rows
    wide = u.copy()
    wide[-1] = 1e6  # beyond float16 (no overflow warning escapes)
    for other in (late, wide):
        with np.errstate(all="raise"):
            assert counting.half_totals(other, (w,)) is None
        values, counts, _ = groups.group_totals(other, w)
        assert np.array_equal(values, np.unique(other)) and counts.sum() == N
    assert counting.half_totals(u, (w.astype(np.float32),)) is None  # totals keep the dtype
    assert counting.half_totals(u.astype(np.float32), (w,)) is None


def test_metrics_and_fit_on_fp16_scores_equal_the_brute_force_reference() -> None:
    """AuRC and AUGRC ("mean" ties) from their definition: per group, the expected loss of
    every prefix, and the fit against the table built from halves."""
    rng = np.random.default_rng(3)
    u = -rng.beta(8.0, 1.5, N).astype(np.float16).astype(np.float64)
    losses = (rng.random(N) < -u * 0.3).astype(float)
    expected = expected_prefix_losses_ref(losses, u)  # E[loss of first i rows]
    i = np.arange(1, N + 1)
    assert aurc(losses, u) == pytest.approx(np.sum(expected / i) / N, rel=1e-12)
    assert augrc(losses, u) == pytest.approx(np.sum(expected) / N / N, rel=1e-12)
    table = ScoreTable.merge(ScoreTable.from_arrays(u[: N // 2], losses[: N // 2]),
                             ScoreTable.from_arrays(u[N // 2 :], losses[N // 2 :]))
    assert table == ScoreTable.from_arrays(u, losses)
    assert aurc(table) == aurc(losses, u) and augrc(table) == augrc(losses, u)
    on_rows, on_table = BoundedAbstention(0.8).fit(u, losses), BoundedAbstention(0.8).fit(table)
    assert (on_rows.threshold_, on_rows.accept_prob_) == (on_table.threshold_,
                                                          on_table.accept_prob_)


def test_group_totals_do_not_depend_on_the_sort_kernels_tie_order(monkeypatch):
    """Group totals are sums in row order: a sort kernel that orders tied scores otherwise
    (another CPU's SIMD sort) gives the same totals bit for bit, and -0.0 joins +0.0."""
    from perturb import shuffled_ties

    from abstain._core.groups import group_totals

    rng = np.random.default_rng(3)
    u = rng.integers(0, 7, 5000).astype(float)
    u[:50] = -0.0
    u[50:100] = 0.0
    w = rng.random(5000) * 10.0 ** rng.integers(-8, 8, 5000)
    counts = rng.integers(0, 3, 5000)
    ref = group_totals(u, w, counts)
    stable = np.argsort(u, kind="stable")  # ties in row order
    starts = np.searchsorted(u[stable], ref[0])
    assert np.array_equal(ref[2][0], np.add.reduceat(w[stable], starts))
    assert ref[2][1].dtype == np.int64
    assert str(ref[0][0]) == "0.0"
    for seed in range(3):
        with monkeypatch.context() as mp:
            shuffled_ties(mp, seed)
            got = group_totals(u, w, counts)
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
        assert all(np.array_equal(a, b) for a, b in zip(got[2], ref[2], strict=True))


def test_loss_sums_are_kept_in_units_of_a_power_of_two_only_when_they_could_overflow():
    from abstain._core.groups import loss_scale, tie_groups

    big = float(np.finfo(np.float64).max)
    assert loss_scale(1.0, 10**9) == 1.0 and loss_scale(2.0**900, 2**100) == 1.0
    assert loss_scale(big, 1) == 2.0**9  # n * top below 2**1016 after scaling
    assert loss_scale(0.0, 5) == 1.0
    g = tie_groups(np.array([big, big, 1.0]), np.array([0.1, 0.1, 0.2]))
    assert g.scale == 2.0**10 and np.all(np.isfinite(g.unit_cum_sums))
    assert np.isinf(g.cum_sums[0])  # the loss sum itself exceeds float64; the risks do not
    assert g.risk_of(*g.rule_at(2.0)) == big
    assert g.risk_of(*g.rule_at(3.0)) == (2 * (big / 2**10) + 2.0**-10) / 3 * 2**10
    assert g.rescaled(1.0) is g and g.rescaled(big * 0.5).scale == g.scale
    ordinary = tie_groups(np.array([0.5, 1.0, 0.0]), np.array([0.1, 0.1, 0.2]))
    assert ordinary.scale == 1.0 and ordinary.cum_sums is ordinary.unit_cum_sums
    assert ordinary.rescaled(big).scale == 2.0**10  # 3 rows: 2**(1024 + 2 - 1016)
    np.testing.assert_array_equal(ordinary.rescaled(big).unit_cum_sums * 2.0**10,
                                  ordinary.cum_sums)


def _prefix_areas_exactly(counts: np.ndarray, sums: np.ndarray) -> tuple[float, float]:
    """The definition, in rationals: E[L(i)] of each accepted prefix, summed over i."""
    from fractions import Fraction

    inverse, plain, done, prior = Fraction(0), Fraction(0), 0, Fraction(0)
    for m, s in zip(counts.tolist(), sums.tolist(), strict=True):
        for k in range(1, m + 1):
            expected = prior + Fraction(s) * k / m
            inverse += expected / (done + k)
            plain += expected
        done, prior = done + m, prior + Fraction(s)
    return float(inverse), float(plain)


@pytest.mark.parametrize("seed", range(6))
def test_expected_prefix_areas_of_single_rows_and_of_ties(seed) -> None:
    """Groups of one row take the plain prefix area, ties the harmonic form: both equal the
    definition, alone (continuous scores) and mixed."""
    rng = np.random.default_rng(seed)
    g = 300
    for counts in (np.ones(g, dtype=np.int64),  # every score distinct
                   rng.choice([1, 1, 1, 2, 5, 70], size=g),  # mostly single, some ties
                   rng.integers(1, 4, size=g)):
        sums = rng.integers(0, 2, size=g) * counts * rng.random(g)
        got = prefix.expected_prefix_areas(counts, sums)
        want = _prefix_areas_exactly(counts, sums)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_expected_prefix_areas_of_a_single_row_after_many() -> None:
    """A row after 10**8 others: (P + S) / (B + 1), with no harmonic series evaluated."""
    counts = np.array([10**8, 1])
    sums = np.array([3.0, 1.0])
    inverse, _ = prefix.expected_prefix_areas(counts, sums)
    # the group of 10**8 rows: sum_k (k S / m) / k = S; the single row: (3 + 1) / (10**8 + 1)
    assert inverse == pytest.approx(3.0 + 4.0 / (10**8 + 1), rel=1e-15)


@pytest.mark.parametrize("m", [2, 3, 7, 64, 65, 200, 5000])
@pytest.mark.parametrize("before", [0, 1, 10, 63, 1000, 10**6, 10**9, 10**12])
def test_tie_excess_is_the_sum_of_its_terms_without_cancellation(m, before):
    # m - B dH = sum_k k / (B + k); the difference of floats kept only m / (2 B eps) of it
    from fractions import Fraction

    from abstain._core.prefix import harmonic_difference, tie_excess

    b, mm = np.array([float(before)]), np.array([float(m)])
    got = tie_excess(b, mm, harmonic_difference(b, mm))[0]
    k_max = min(m, 5000)
    exact = sum(Fraction(k, before + k) for k in range(1, k_max + 1))
    assert got == pytest.approx(float(exact), rel=1e-13, abs=0.0)


def test_aurc_of_a_small_tie_group_after_many_rows_keeps_its_digits():
    from fractions import Fraction

    from abstain.metrics import aurc
    from abstain.tables import ScoreTable

    for n in (10**6, 10**9, 10**12):  # correct rows, then 2 errors tied at the top
        # E[L(n + 1)] = 1, E[L(n + 2)] = 2: the mean of E[L(i)] / i over the n + 2 rows
        exact = (Fraction(1, n + 1) + Fraction(2, n + 2)) / (n + 2)
        table = ScoreTable.from_totals([0.0, 1.0], [n, 2], [0.0, 2.0], loss_values=[0.0, 1.0],
                                       loss_counts=[n, 2])
        assert aurc(table) == pytest.approx(float(exact), rel=1e-13, abs=0.0)
