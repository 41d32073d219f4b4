"""The stable order of the shared grouping (``stable_order``: one sort of packed integer keys
from 4,096 rows on, an argsort with tie groups put in row order below): NumPy's stable
argsort, whatever the span, signs and ties of the scores; and the totals of
``group_totals`` with continuous weights, reduceat sums in that order, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abstain._core import groups

#: rerun by ``make test`` under NumPy's CPU features disabled (other sort kernels)
pytestmark = pytest.mark.cpu_exact


def _reference(u):
    """The stable order (ties by row) and its tie-group starts, from NumPy's stable sort."""
    order = np.argsort(u, kind="stable")
    s = u[order]
    starts = np.concatenate(([0], np.flatnonzero(s[1:] != s[:-1]) + 1))
    return order, (None if starts.size >= u.size else starts)  # also 0 rows


def _check(u) -> None:
    order, starts = groups.stable_order(u)
    want_order, want_starts = _reference(u)
    assert np.array_equal(order, want_order)
    if want_starts is None:
        assert starts is None
    else:
        assert starts is not None and np.array_equal(starts, want_starts)


@pytest.fixture
def every_size(monkeypatch):
    """The packed-key path for any number of rows (it starts at 4,096 otherwise)."""
    monkeypatch.setattr(groups, "_KEYED_MIN_ROWS", 1)


SCORES = {
    "unit interval": lambda rng, n: rng.random(n),
    "rounded, many ties": lambda rng, n: np.round(rng.random(n), 3),
    "one value": lambda rng, n: np.full(n, 0.25),
    "both signs, wide": lambda rng, n: rng.normal(size=n) * 1e300,
    "zeros of both signs and extremes": lambda rng, n: rng.choice(
        [-0.0, 0.0, 1.0, -2.0, 1e300, -1e300, 5e-324, -5e-324, 2.0], size=n),
    # a huge span: the shift merges neighbours 1 + k * 2**-50 into runs that mix values
    "close values under a huge span": lambda rng, n: np.concatenate(
        [[-1e308, 1e308], 1.0 + rng.integers(0, max(n // 4, 1), max(n - 2, 0)) * 2.0**-50])[:n],
    "mixed runs everywhere": lambda rng, n: np.concatenate(
        [[-1e308, 1e308], 1.0 + rng.permutation(max(n - 2, 0)) * 2.0**-52])[:n],
}


@pytest.mark.parametrize("kind", sorted(SCORES))
@pytest.mark.parametrize("n", [1, 2, 3, 17, 5000])
def test_stable_order_is_numpys_stable_argsort(every_size, kind, n) -> None:
    _check(SCORES[kind](np.random.default_rng(n), n))


def test_both_paths_above_and_below_the_size_threshold() -> None:
    rng = np.random.default_rng(7)
    for n in (groups._KEYED_MIN_ROWS - 1, groups._KEYED_MIN_ROWS, 20_000):
        for make in SCORES.values():
            _check(make(rng, n))


def test_runs_that_mix_values_fall_back_to_the_argsort_where_they_are_many(
        every_size, monkeypatch) -> None:
    u = SCORES["mixed runs everywhere"](np.random.default_rng(1), 3000)
    assert groups._keyed_order(u) is None  # most rows share a key with another value
    _check(u)
    few = SCORES["close values under a huge span"](np.random.default_rng(2), 3000)
    few[100:] = np.random.default_rng(3).random(2900)  # a few close values among spread ones
    assert groups._keyed_order(few) is not None
    _check(few)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([-0.0, 0.0, 1.0, 1.0 + 2.0**-52, 1.0 + 2.0**-51, -3.5,
                                 1e308, -1e308, 5e-324, 0.1, 0.1 + 2.0**-56]),
                min_size=1, max_size=300),
       st.randoms(use_true_random=False))
def test_stable_order_on_ties_and_near_ties(values, rnd) -> None:
    old = groups._KEYED_MIN_ROWS
    groups._KEYED_MIN_ROWS = 1
    try:
        u = np.array(values)
        _check(u)
        _check(u[::-1].copy())
        rnd.shuffle(values)
        _check(np.array(values))
    finally:
        groups._KEYED_MIN_ROWS = old


@pytest.mark.parametrize("kind", sorted(SCORES))
def test_group_totals_of_continuous_weights_are_reduceat_sums_in_row_order(
        every_size, kind) -> None:
    rng = np.random.default_rng(11)
    u = SCORES[kind](rng, 3000)
    w = rng.random(3000) * np.exp(rng.normal(size=3000) * 10)  # sums depend on their order
    order, starts = _reference(u)
    starts = np.arange(u.size) if starts is None else starts
    values, counts, (sums,) = groups.group_totals(u, w)
    assert np.array_equal(values, u[order][starts] + 0.0)
    assert not np.any(np.signbit(values) & (values == 0))
    assert np.array_equal(counts, np.diff(np.append(starts, u.size)))
    assert np.array_equal(sums, np.add.reduceat(w[order], starts))
    _, counts2, (sums2,) = groups.group_totals(u, w, values=False)
    assert np.array_equal(counts2, counts) and np.array_equal(sums2, sums)


def test_the_order_does_not_depend_on_the_row_order_of_ties_in_the_sort(every_size) -> None:
    """Tied rows come out in row order: the kernel's order of equal keys cannot show."""
    u = np.repeat(np.random.default_rng(5).random(40), 100)
    order, starts = groups.stable_order(u)
    assert starts is not None
    for a, b in zip(starts, np.append(starts[1:], u.size), strict=True):
        assert np.all(np.diff(order[a:b]) > 0)


@pytest.mark.parametrize("n", [5, 300, 511, 512, 3000])
def test_stable_orders_of_rows_are_the_stable_argsorts(n: int) -> None:
    """Each row's order is its stable argsort (ties in column order, -0.0 equal to +0.0) and
    ``change`` marks where the sorted row's next value differs, on both sides of the
    packed-key threshold."""
    rng = np.random.default_rng(n)
    rows = np.stack([rng.normal(size=n), np.round(rng.normal(size=n), 1),
                     np.where(rng.random(n) < 0.5, -0.0, 0.0), rng.integers(0, 3, n) * 1e300,
                     np.full(n, 2.5)])
    order, change = groups.stable_orders(rows)
    want = np.argsort(rows, axis=1, kind="stable")
    assert np.array_equal(order, want)
    s = np.take_along_axis(rows, want, axis=1)
    assert np.array_equal(change, s[:, 1:] != s[:, :-1])
