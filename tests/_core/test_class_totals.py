"""The 0/1-weight path of the shared grouping (``group_totals`` by one sort of packed keys,
or per-class sorts and a merge): the same groups and totals as the argsort path, bit for bit,
whatever the signs and span of the scores and the number of classes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.metrics_ref import sorted_group_totals as _argsort_totals

from abstain._core import groups

#: rerun by ``make test`` under NumPy's CPU features disabled (other sort kernels)
pytestmark = pytest.mark.cpu_exact



def _assert_same(got, want) -> None:
    values, counts, totals = got
    assert np.array_equal(values, want[0])
    assert not np.any(np.signbit(values) & (values == 0))  # -0.0 joins +0.0
    assert counts.dtype == np.int64 and np.array_equal(counts, want[1])
    assert len(totals) == len(want[2])
    for t, w in zip(totals, want[2], strict=True):
        assert t.dtype == w.dtype and np.array_equal(t, w)


@pytest.fixture
def every_size(monkeypatch):
    """The class path for any number of rows (it starts at 4,096 otherwise)."""
    monkeypatch.setattr(groups, "_CLASS_MIN_ROWS", 1)


SCORES = {
    "unit interval": lambda rng, n: rng.random(n),
    "rounded, many ties": lambda rng, n: np.round(rng.random(n), 2),
    "both signs near zero": lambda rng, n: np.round(rng.normal(size=n), 1),
    "both signs, wide": lambda rng, n: rng.normal(size=n) * 1e3,
    "negative only": lambda rng, n: -np.abs(np.round(rng.normal(size=n) * 50, 1)),
    "no negative value, zeros of both signs": lambda rng, n: rng.choice(
        [-0.0, 0.0, 5e-324, 0.5, 1.0, 1.5, 1e300], size=n),
    "zeros of both signs and extremes": lambda rng, n: rng.choice(
        [-0.0, 0.0, 1.0, -2.0, 1e300, -1e300, 5e-324, -5e-324, 2.0], size=n),
}


@pytest.mark.parametrize("kind", sorted(SCORES))
@pytest.mark.parametrize("n", [1, 2, 7, 5000])
def test_class_path_equals_the_argsort_path(every_size, kind, n) -> None:
    rng = np.random.default_rng(n)
    u = SCORES[kind](rng, n)
    ood = (rng.random(n) < 0.3).astype(np.float64)
    err = ((rng.random(n) < 0.4) & (ood == 0)).astype(np.float64)
    for weights in [(err,), (1.0 - ood, ood, err), (ood.astype(np.int64),), (np.ones(n),),
                    (np.zeros(n), np.ones(n)), (np.zeros(n),), (), (err, err)]:
        assert groups._class_totals(u, weights) is not None
        _assert_same(groups.group_totals(u, *weights), _argsort_totals(u, *weights))


def test_wide_span_with_three_classes_merges_sorted_classes(every_size, monkeypatch) -> None:
    rng = np.random.default_rng(3)
    u = np.round(rng.normal(size=3000) * 100, 1)  # both signs far from zero: no room for 2 bits
    ood = (rng.random(3000) < 0.3).astype(np.float64)
    err = ((rng.random(3000) < 0.4) & (ood == 0)).astype(np.float64)
    merged = []
    real = groups._merged_classes
    monkeypatch.setattr(groups, "_merged_classes",
                        lambda *a: merged.append(1) or real(*a))
    weights = (1.0 - ood, ood, err)
    _assert_same(groups.group_totals(u, *weights), _argsort_totals(u, *weights))
    assert merged  # the fallback ran
    merged.clear()
    far = np.abs(u) + 1.0  # one sign, away from zero: the span leaves room for the class bits
    _assert_same(groups.group_totals(far, *weights), _argsort_totals(far, *weights))
    assert not merged


def test_weights_other_than_zero_and_one_take_the_argsort_path(every_size) -> None:
    u = np.arange(10.0)
    for w in (np.full(10, 0.5), np.r_[np.zeros(9), 2.0], np.r_[np.ones(9), np.nan],
              np.r_[np.zeros(2000), 0.5]):
        assert groups._class_totals(u, (w,)) is None
    assert groups._class_totals(u, (np.ones(10, dtype=np.float32),)) is None  # keeps dtypes
    assert groups._class_totals(u.astype(np.float32), (np.ones(10),)) is None


def test_few_rows_take_the_argsort_path() -> None:
    u = np.arange(groups._CLASS_MIN_ROWS - 1.0)
    assert groups._class_totals(u, (np.ones(u.size),)) is None
    u = np.arange(float(groups._CLASS_MIN_ROWS))[::-1].copy()
    assert groups._class_totals(u, (np.ones(u.size),)) is not None


def test_ascending_values_are_their_own_groups() -> None:
    u = np.array([-3.0, -0.0, 1.0, 2.5])
    w = np.array([0.25, 1.0, 0.0, 7.0])
    values, counts, (t,) = groups.group_totals(u, w)
    assert values.tolist() == [-3.0, 0.0, 1.0, 2.5] and not np.signbit(values[1])
    assert counts.tolist() == [1, 1, 1, 1] and t.tolist() == w.tolist()
    t[0] = 5.0
    assert w[0] == 0.25  # the totals are a copy


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_permuting_rows_changes_no_total(data) -> None:
    n = data.draw(st.integers(1, 60))
    pool = data.draw(st.lists(st.sampled_from([-2.0, -0.0, 0.0, 0.5, 1.0, 3.0, 1e308, -1e-308]),
                              min_size=1, max_size=5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    u = rng.choice(pool, size=n)
    weights = tuple(rng.integers(0, 2, n).astype(np.float64)
                    for _ in range(data.draw(st.integers(0, 3))))
    want = _argsort_totals(u, *weights)
    saved = groups._CLASS_MIN_ROWS
    groups._CLASS_MIN_ROWS = 1
    try:
        perm = rng.permutation(n)
        _assert_same(groups.group_totals(u, *weights), want)
        _assert_same(groups.group_totals(u[perm], *(w[perm] for w in weights)), want)
    finally:
        groups._CLASS_MIN_ROWS = saved
