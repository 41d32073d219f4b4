"""The counting path of the shared grouping for heavily tied scores (``counting.binned_totals``):
the groups of the sort, each total the sum of the group's weights in row order, and the
sort whenever two distinct values would share a bin (values one ulp apart included)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference.metrics_ref import expected_prefix_losses_ref
from reference.metrics_ref import sorted_group_totals as _sorted_totals

from abstain._core import counting, groups
from abstain.metrics import augrc, aurc

N = counting._BINNED_MIN_ROWS + 11


def _rounded(rng, n=N, scale=1.0):
    u = np.round(rng.normal(0.0, 1.0, n), 1) * scale  # about 60 distinct values
    u[:3], u[3:6] = -0.0, 0.0  # one group of zeros
    return u


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e6])
def test_counting_path_gives_the_groups_of_the_sort(scale) -> None:
    rng = np.random.default_rng(0)
    u = _rounded(rng, scale=scale)
    binary = (rng.random(N) < 0.3).astype(float)
    whole = rng.integers(0, 5, N).astype(np.int64)
    continuous = rng.random(N) * np.exp(rng.normal(size=N) * 5)  # sums depend on their order
    assert counting.binned_totals(u, (continuous,)) is not None  # the path under test applies
    values, counts, (b, w, c) = groups.group_totals(u, binary, whole, continuous)
    ref_values, ref_counts, (rb, rw, rc) = _sorted_totals(u, binary, whole, continuous)
    assert np.array_equal(values, ref_values) and np.all(np.diff(values) > 0)
    assert not np.any(np.signbit(values) & (values == 0))  # -0.0 and +0.0: one group, +0.0
    assert np.array_equal(counts, ref_counts) and counts.dtype == np.int64
    assert np.array_equal(b, rb) and np.array_equal(w, rw) and w.dtype == np.int64
    np.testing.assert_allclose(c, rc, rtol=1e-12)
    for g in np.argsort(counts)[-3:]:  # each continuous total to about its last digit
        exact = math.fsum(continuous[u == values[g]].tolist())
        assert c[g] == pytest.approx(exact, rel=4.5e-16, abs=0.0)


def test_counting_path_refuses_distinct_values_in_one_bin() -> None:
    """Values one ulp apart, far apart from the rest: they share a bin, so the sort groups
    them, apart."""
    rng = np.random.default_rng(1)
    u = rng.choice([0.25, 0.5, np.nextafter(0.5, 1.0), 1e300], N)
    w = rng.random(N)
    assert counting.binned_totals(u, (w,)) is None
    values, counts, (sums,) = groups.group_totals(u, w)
    ref_values, ref_counts, (ref_sums,) = _sorted_totals(u, w)
    assert values.size == 4
    assert np.array_equal(values, ref_values) and np.array_equal(counts, ref_counts)
    assert np.array_equal(sums, ref_sums)


def test_counting_path_tells_neighbouring_floats_apart_when_they_have_bins() -> None:
    """A narrow span (scores a few ulps apart) leaves every key its own bin."""
    rng = np.random.default_rng(2)
    u = 1.0 + rng.integers(0, 50, N) * np.finfo(float).eps
    w = rng.random(N)
    assert counting.binned_totals(u, (w,)) is not None
    values, counts, (sums,) = groups.group_totals(u, w)
    ref_values, ref_counts, (ref_sums,) = _sorted_totals(u, w)
    assert values.size == 50
    assert np.array_equal(values, ref_values) and np.array_equal(counts, ref_counts)
    np.testing.assert_allclose(sums, ref_sums, rtol=1e-12)


def test_counting_path_applies_only_where_it_can() -> None:
    rng = np.random.default_rng(3)
    u = _rounded(rng)
    w = rng.random(N)
    assert counting.binned_totals(u[:1000], (w[:1000],)) is None  # few rows: the sort
    assert counting.binned_totals(rng.random(N), (w,)) is None  # few ties: the sort
    assert counting.binned_totals(u, (w.astype(np.float32),)) is None  # totals keep the dtype
    assert counting.binned_totals(u.astype(np.float32), (w,)) is None


def test_metrics_on_rounded_scores_equal_the_brute_force_reference() -> None:
    """AuRC and AUGRC ("mean" ties) with continuous losses on the counting path, from their
    definition: per group, the expected loss of every prefix."""
    rng = np.random.default_rng(4)
    u = _rounded(rng)
    losses = rng.random(N) * (u - u.min())
    expected = expected_prefix_losses_ref(losses, u)  # E[loss of first i rows]
    i = np.arange(1, N + 1)
    assert aurc(losses, u) == pytest.approx(np.sum(expected / i) / N, rel=1e-12)
    assert augrc(losses, u) == pytest.approx(np.sum(expected) / N / N, rel=1e-12)


def test_counting_path_reads_rows_spread_over_sorted_input() -> None:
    """Sorted input whose first 1,024 rows are one value still takes the counting path."""
    rng = np.random.default_rng(5)
    u = np.sort(np.round(rng.exponential(1.0, N), 2))
    u[:2000] = 0.0
    w = rng.random(N)
    assert counting.binned_totals(u, (w,)) is not None
    values, counts, _ = groups.group_totals(u, w)
    ref_values, ref_counts, _ = _sorted_totals(u, w)
    assert np.array_equal(values, ref_values) and np.array_equal(counts, ref_counts)


@pytest.mark.parametrize("scores", ["binned", "float16"])
def test_the_counting_paths_sum_a_large_group_to_its_last_digits(scores):
    # one by one, 4,000,000 losses of 0.1 summed to 1.3e-11 relative off (the sort path's
    # pairwise sums to 1e-16), so the value depended on which path the data took
    from abstain import ScoreTable
    from abstain.metrics import selective_risk_at_coverage

    n = 1 << 21
    rng = np.random.default_rng(0)
    u = rng.integers(0, 3, n).astype(float) if scores == "binned" else \
        rng.normal(size=n).astype(np.float16).astype(float)
    losses = np.full(n, 0.1)
    assert selective_risk_at_coverage(losses, u, 1.0) == pytest.approx(0.1, rel=1e-15)
    table = ScoreTable.from_arrays(u, losses)
    exact = np.bincount(np.unique(u, return_inverse=True)[1].ravel()) * 0.1
    np.testing.assert_allclose(table.loss_sums, exact, rtol=4e-16)


def test_subnormal_weights_on_the_counting_paths_are_summed():
    # the grid of the two-part sums underflowed to 0 for weights near the subnormals: NaN
    from abstain import ScoreTable
    from abstain.metrics import aurc

    rng = np.random.default_rng(0)
    u = rng.integers(0, 50, 40_000).astype(float)
    losses = (rng.random(40_000) < 0.3) * 1e-315
    want = aurc(losses * 2.0**900, u) / 2.0**900
    assert aurc(losses, u) == pytest.approx(want, rel=1e-9)
    assert ScoreTable.from_arrays(u, losses).loss_sums.sum() == pytest.approx(
        math.fsum(losses.tolist()), rel=1e-9)
