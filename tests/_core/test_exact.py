"""Exact predicates (``abstain._core.exact``) against the rational-arithmetic references of
tests/reference/exact_ref.py: orientation and projection signs, the exact order and tie
groups of swaps and of projections, on data with many ties, collinear points, decimals that
are not dyadic, tiny and huge magnitudes; and unit vectors from basic operations only."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import exact_ref as R

from abstain._core import exact as X

#: rerun by ``make test`` under another BLAS kernel and NumPy CPU features
pytestmark = pytest.mark.cpu_exact


def _points(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    """(n, 3, 2) triples: integer grids, 2-decimal probabilities, collinear decimals,
    magnitudes from 1e-60 to 1e60, and magnitudes beyond the exact products' range."""
    if kind == 0:
        return rng.integers(-5, 6, (n, 3, 2)).astype(float)
    if kind == 1:
        return np.round(rng.random((n, 3, 2)), 2)
    if kind == 2:
        p = np.round(rng.random((n, 3, 2)), 1)
        p[:, 2] = p[:, 0] + (p[:, 1] - p[:, 0]) * rng.integers(-3, 4, (n, 1))
        return p
    if kind == 3:
        return rng.random((n, 3, 2)) * 10.0 ** rng.integers(-60, 60, (n, 3, 2))
    if kind == 4:
        return 10.0 ** rng.uniform(-300, 300, (n, 3, 2)) * rng.choice([-1, 1], (n, 3, 2))
    if kind == 5:
        # a few values from 1e300 down to subnormals: differences and products 2,000 binary
        # orders apart, whose large parts cancel exactly (points on one line), so the small
        # ones decide (they were summed in rationals, 240 times slower than the rest)
        pool = np.array([0.0, 1.0, -1.0, 0.5, 1e300, -1e300, 3e299, 1e-300, -1e-300, 2e-300,
                         5e-324, 1e-310, 0.75])
        return rng.choice(pool, (n, 3, 2))
    # decided without expansions: a coordinate shared by two or three points (a constant
    # score; tiny offsets whose products underflow, huge ones whose differences overflow),
    # and points whose coordinates are equal or opposite (a score paired with itself)
    scale = 10.0 ** rng.choice([-200, -160, 0, 150, 307], (n, 3, 1))
    with np.errstate(over="ignore"):  # finite, with differences that overflow
        v = np.clip(rng.normal(size=(n, 3, 2)) * 10 * scale, -1.7e308, 1.7e308)
    share = rng.integers(0, 4, (n, 1))
    for a, b in ((0, 1), (0, 2), (1, 2)):
        col = rng.integers(0, 2, n)
        same = (share[:, 0] == 3) | ((share[:, 0] == a) & (rng.random(n) < 0.5))
        v[same, b, col[same]] = v[same, a, col[same]]
    line = rng.random(n) < 0.3
    v[line, :, 1] = v[line, :, 0] * rng.choice([-1.0, 1.0], (line.sum(), 1))
    return v


@pytest.mark.parametrize("kind", range(7))
def test_orient_is_the_sign_of_the_exact_cross_product(kind):
    rng = np.random.default_rng(kind)
    p = _points(rng, 3000, kind)
    got = X.orient(*(p[:, i, j] for i in range(3) for j in range(2)))
    ref = [R.orient(*p[i]) for i in range(len(p))]
    assert got.tolist() == ref
    if kind in (0, 2, 6):
        assert ref.count(0) > 100  # many collinear triples: the exact path decides
    if kind == 6:
        assert min(ref.count(1), ref.count(-1)) > 300


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 5])
def test_dot_sign_is_the_sign_of_the_exact_projection(kind):
    rng = np.random.default_rng(10 + kind)
    p = _points(rng, 3000, kind)
    for w in ((1.0, 1.0), (math.cos(0.7), math.sin(0.7)), (0.0, 1.0), (-0.3, 0.1)):
        got = X.dot_sign(p[:, 0, 0], p[:, 0, 1], p[:, 1, 0], p[:, 1, 1], *w)
        assert got.tolist() == [R.dot(p[i, 0], p[i, 1], w) for i in range(len(p))]


def test_dot_sign_takes_differences_beyond_float64_exactly():
    # 1e308 - -1e308 overflowed: the exact fallback was given inf (OverflowError)
    px = np.array([1e308, 5e-324, -1e308, 1e308])
    py = np.array([0.0, 1e308, 1e308, -1e308])
    qx = np.array([-1e308, 0.0, 1e308, -1e308])
    qy = np.array([5e-324, -1e308, 0.0, 1e308])
    for w in ((1.0, 0.0), (0.0, 1.0), (math.cos(0.7), math.sin(0.7)), (1.0, -1.0)):
        got = X.dot_sign(px, py, qx, qy, *w)
        want = [R.dot((px[i], py[i]), (qx[i], qy[i]), w) for i in range(4)]
        assert got.tolist() == want


# factors of an exact product: 0 or magnitudes in [2^-480, 2^480] (exact.py's range)
_factor = st.one_of(st.just(0.0), st.floats(2.0**-480, 2.0**480),
                    st.floats(-(2.0**480), -(2.0**-480)))


@given(st.lists(_factor, min_size=2, max_size=2), st.lists(_factor, min_size=2, max_size=2))
def test_two_sum_and_two_prod_are_exact(a, b):
    x, y = np.array(a), np.array(b)
    s, e = X.two_sum(x, y)
    p, f = X.two_prod(x, y)
    for i in range(2):
        assert Fraction(s[i]) + Fraction(e[i]) == Fraction(a[i]) + Fraction(b[i])
        assert Fraction(p[i]) + Fraction(f[i]) == Fraction(a[i]) * Fraction(b[i])


def _anchor_rows(rng, pts, rows):
    e = pts[rng.integers(0, len(pts), rows)]
    row = np.repeat(np.arange(rows), len(pts))
    return row, np.repeat(e, len(pts), axis=0), np.tile(pts, (rows, 1))


@pytest.mark.parametrize("seed", range(40))
def test_sorted_events_equal_the_exact_order_of_slopes(seed):
    """Swaps ordered by the exact slope ``dg / dr`` (the angle increases with it), one group
    per exact slope of a row, the points of the anchor's first score last and alone."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 50))
    kind = seed % 4
    if kind == 0:
        pts = rng.integers(-4, 5, (m, 2)).astype(float)
    elif kind == 1:
        pts = np.round(rng.random((m, 2)), 1)
    elif kind == 2:  # a likelihood ratio that underflows: swaps packed near pi / 2
        pts = rng.random((m, 2))
        pts[: m // 2, 1] = 10.0 ** rng.uniform(-40, -9, m // 2)
    else:
        pts = np.round(rng.random((m, 2)) * 3, 1) / 7
    rows = int(rng.integers(1, 4))
    row, e, p = _anchor_rows(rng, pts, rows)
    args = (row, e[:, 0], e[:, 1], p[:, 0], p[:, 1])
    for width in (None, m):
        order, new = X.sorted_events(*args, width=width)
        keys, ref_new = R.sorted_events(*args)
        got = []
        for i in order.tolist():
            sl = R.swap_slope(e[i], p[i])
            got.append((int(row[i]), sl is None) + ((sl,) if sl is not None else ()))
        assert [k[:2] for k in got] == [k[:2] for k in keys]
        assert [k[2:] for k in got] == [k[2:] for k in keys]
        assert new.tolist() == ref_new


@pytest.mark.parametrize("seed", range(20))
def test_sorted_projection_groups_exactly_equal_projections(seed):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(1, 80))
    pts = (rng.integers(-6, 7, (m, 2)) if seed % 2 else np.round(rng.random((m, 2)), 1))
    pts = pts.astype(float)
    for w in (np.array([1.0, 0.0]), np.array([0.0, 1.0]), X.cos_sin(np.array([0.25 * math.pi])),
              np.array([0.6, 0.8]), np.array([1.0, -2.0])):
        w = np.array([float(np.ravel(w[0])[0]), float(np.ravel(w[1])[0])])
        order, new = X.sorted_projection(pts[:, 0], pts[:, 1], w)
        vals, ref_new = R.projection_groups(pts[:, 0], pts[:, 1], w)
        got = [Fraction(float(pts[i, 0])) * Fraction(float(w[0]))
               + Fraction(float(pts[i, 1])) * Fraction(float(w[1])) for i in order.tolist()]
        assert got == vals and new.tolist() == ref_new


@pytest.mark.parametrize("rounds", [X.ROUNDS, 1])
def test_refine_finishes_long_runs_of_distinct_values_by_a_comparison_sort(rounds, monkeypatch):
    """100 projections one ulp apart: in one round the pivots split off little, and the
    comparison sort orders what is left when the rounds run out (``rounds=1``); the order and
    groups are exact either way."""
    monkeypatch.setattr(X, "ROUNDS", rounds)
    x = 1.0 + np.arange(100) * 2.0**-52
    pr = np.concatenate((x[::-1], x[:5]))
    order, new = X.sorted_projection(pr, np.zeros(pr.size), np.array([1.0, 0.0]))
    vals, ref_new = R.projection_groups(pr, np.zeros(pr.size), (1.0, 0.0))
    assert [Fraction(float(pr[i])) for i in order] == vals and new.tolist() == ref_new


def test_cos_sin_uses_basic_operations_only(monkeypatch):
    """Within 2 ulps of the C library, exact at 0 and pi, and independent of NumPy's and the
    C library's transcendental functions (which differ between CPUs)."""
    a = np.linspace(-3.0, 6.0, 20001)
    ref_c, ref_s = np.cos(a), np.sin(a)

    def refuse(*args, **kwargs):
        raise AssertionError("a transcendental function was called")

    for name in ("cos", "sin", "tan", "arctan2"):
        monkeypatch.setattr(np, name, refuse)
    c, s = X.cos_sin(a)
    assert np.all(np.abs(c - ref_c) <= 2 * np.spacing(np.maximum(np.abs(ref_c), 1e-300)) + 1e-17)
    assert np.all(np.abs(s - ref_s) <= 2 * np.spacing(np.maximum(np.abs(ref_s), 1e-300)) + 1e-17)
    c, s = X.cos_sin(np.array([0.0, math.pi]))
    assert c.tolist() == [1.0, -1.0] and s[0] == 0.0 and abs(s[1]) < 1.3e-16


_coord = st.sampled_from([0.0, -0.0, 0.1, 0.2, 0.3, -0.7, 1.0, 3.0, 1e-30, 2.5e-300, 1e200,
                          -1e150, 0.30000000000000004, 1.0 + 2.0**-52])


@given(st.lists(st.tuples(_coord, _coord), min_size=2, max_size=14), st.integers(0, 13))
def test_property_sorted_events_equal_the_rational_order(points, a):
    """Any float pairs drawn from values with ties, signed zeros, decimals, one ulp apart,
    tiny and huge magnitudes (the rational fallback): the exact order and groups."""
    pts = np.array(points, dtype=float)
    e = pts[a % len(pts)]
    row = np.zeros(len(pts), dtype=np.intp)
    er, eg = np.full(len(pts), e[0]), np.full(len(pts), e[1])
    order, new = X.sorted_events(row, er, eg, pts[:, 0], pts[:, 1])
    keys, ref_new = R.sorted_events(row, er, eg, pts[:, 0], pts[:, 1])
    got = [R.swap_slope(e, pts[i]) for i in order.tolist()]
    assert [k is None for k in got] == [k[1] for k in keys]
    assert [k for k in got if k is not None] == [k[2] for k in keys if not k[1]]
    assert new.tolist() == ref_new


@pytest.mark.parametrize("kind", range(4))
def test_dot_sign_takes_one_direction_per_point(kind):
    rng = np.random.default_rng(20 + kind)
    p = _points(rng, 2000, kind)
    c, s = X.cos_sin(rng.uniform(0.0, math.pi, 2000))
    c[:200], s[:200] = 1.0, 1.0  # exact ties on the integer grid
    got = X.dot_sign(p[:, 0, 0], p[:, 0, 1], p[:, 1, 0], p[:, 1, 1], c, s)
    assert got.tolist() == [R.dot(p[i, 0], p[i, 1], (c[i], s[i])) for i in range(len(p))]


def _slots_ref(e: np.ndarray, q: np.ndarray, w: np.ndarray) -> set[int]:
    """The slots (-1 before ``w[0]``, j between ``w[j]`` and ``w[j + 1]``, k after ``w[k]``)
    holding the exact swap of ``q`` with ``e``, from the exact signs at each direction."""
    side = 1 if q[0] > e[0] else -1
    sig = [side * R.dot(q, e, wj) for wj in w]  # < 0: the swap lies before w[j]
    k = len(w) - 1
    out = {j for j in range(k) if sig[j] >= 0 and sig[j + 1] <= 0}
    if sig[0] < 0:
        out.add(-1)
    if sig[k] > 0:
        out.add(k)
    return out


@pytest.mark.parametrize("kind", range(5))
@pytest.mark.parametrize("span", [(0.3, 0.31), (0.05, 3.0), (1.5707, 1.5709)])
def test_swap_slots_hold_the_exact_swap(kind, span):
    rng = np.random.default_rng(kind)
    k = 8
    c, s = X.cos_sin(np.linspace(*span, k + 1))
    w = np.stack((c, s), axis=1)
    p = _points(rng, 1500, kind)
    e, q = p[:, 0], p[:, 1]
    if kind < 4:
        # offsets that swap exactly at a cut, and one unit in the last place beside it
        j = rng.integers(0, k + 1, 300)
        base = np.zeros((300, 2))
        off = np.stack((w[j, 1], -w[j, 0]), axis=1) * rng.choice([-1.0, 1.0], (300, 1))
        off[100:200, 1] = np.nextafter(off[100:200, 1], np.inf)
        off[200:, 0] = np.nextafter(off[200:, 0], -np.inf)
        e = np.concatenate((e, base))
        q = np.concatenate((q, base + off))
        assert np.array_equal(q[-300:] - e[-300:], off)  # the differences are exact
    got = X.swap_slots(q[:, 0] - e[:, 0], q[:, 1] - e[:, 1], w)
    assert got is not None
    u, v = got
    exact_cut = 0
    for i in range(len(e)):
        if q[i, 0] == e[i, 0]:
            assert u[i] == v[i] == k + 1
            continue
        ref = _slots_ref(e[i], q[i], w)
        assert min(ref) >= u[i] and max(ref) <= v[i], (i, ref, u[i], v[i])
        assert v[i] - u[i] <= 1 or (u[i], v[i]) == (-1, k)
        exact_cut += len(ref) == 2
    if kind < 4:  # the swaps exactly at an inner cut (about 7 in 9 of 100) lie in two slots
        assert exact_cut >= 50


def test_swap_slots_refuse_directions_too_close_to_tell_apart():
    w = np.array([[0.6, 0.8], [0.6, 0.8], [0.0, 1.0]])
    assert X.swap_slots(np.ones(3), np.ones(3), w) is None


@pytest.mark.parametrize(("values", "exact"), [
    ([0.0, 1.0, 0.125, 3.0], True), ([0.1, 0.2], False), ([2.0**60, 1.0], False),
    ([5e-324, 1e-300], False), ([5e-324, 3 * 5e-324], True), ([0.5, 2.0**52], False),
    ([0.5, 2.0**51], True), ([], True), ([0.0, 0.0], True), ([-1.0, 0.25], True),
    # a unit far below 1 beside 1: the total in units overflowed (math range error)
    ([5e-324, 1.0], False), ([1e-300, 1.0], False), ([2.0**1000, 2.0**1000], True),
    ([1e308, 1e308], False),
])
def test_sums_exact_says_whether_every_sum_is_exact(values, exact):
    assert X.sums_exact(np.asarray(values, dtype=float)) is exact


def test_offsets_beyond_float64_raise_no_numpy_warning():
    # the exact search computed the differences first: 12 lines of RuntimeWarning (an
    # error under warnings-as-errors) before its own result or message
    import warnings

    from abstain.metrics import auroc

    s = np.array([[1e308, 5e-324], [-1e308, 0.0], [0.0, -1e308], [5e-324, 1e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0.0 <= auroc(np.array([1, 1, 0, 0], bool), s, search="exact") <= 1.0


def test_refine_splits_runs_of_nearly_aligned_swaps_without_the_comparison_sort(monkeypatch):
    """A pair whose second score is an affine copy of the first, ``3 r + 1`` in float64, has
    the swap keys of every anchor within round-off of each other. Pivots taken at the
    middle of each run were its least or largest entry round after round, and after 64
    rounds a Python comparison sort ordered what was left (seconds at 1,000 rows); scrambled
    pivots finish in the vectorised rounds, with the exact order of the rational reference."""
    from abstain.metrics import auroc

    def refuse(*args):
        raise AssertionError("refine fell back to its comparison sort")

    monkeypatch.setattr(X, "_sort_clusters", refuse)
    rng = np.random.default_rng(0)
    is_ood = rng.random(500) < 0.3
    r = rng.random(500)
    for g in (3 * r + 1, 0.5 * r + 0.25, r + 1):
        assert 0.0 <= auroc(is_ood, np.stack([r, g], 1), search="exact") <= 1.0
    # one anchor's swaps with 200 points of the pair: the rational order of their slopes
    row, e = np.zeros(200, dtype=np.intp), np.full(200, r[200])
    args = (row, e, 3 * e + 1, r[:200], 3 * r[:200] + 1)
    order, new = X.sorted_events(*args)
    keys, ref_new = R.sorted_events(*args)
    got = [R.swap_slope((args[1][i], args[2][i]), (args[3][i], args[4][i])) for i in order]
    assert got == [k[2] for k in keys] and new.tolist() == ref_new


@given(st.lists(st.sampled_from([0.1, 0.2, 0.3, 1 / 3, 7.0, -2.5, 1e-3, 0.0]), min_size=1,
                max_size=40), st.randoms(use_true_random=False))
def test_exact_deviation_depends_on_the_multiset_alone_and_is_the_deviation(xs, rnd):
    n = len(xs)
    got = X.exact_deviation(np.array(xs))
    # within a few ulps of the deviation of the exact values (rationals), 0 for equal ones
    mean = sum(map(Fraction, xs)) / n
    exact = math.sqrt(float(sum((Fraction(v) - mean) ** 2 for v in xs) / n))
    assert abs(got - exact) <= 8 * math.ulp(max(exact, 1e-300)) + 1e-16 * max(map(abs, xs))
    if len(set(xs)) == 1:
        assert got == 0.0
    # the same float for the values in any order, and grouped into counts
    shuffled = list(xs)
    rnd.shuffle(shuffled)
    assert X.exact_deviation(np.array(shuffled)) == got
    values, counts = np.unique(np.array(xs), return_counts=True)
    assert X.exact_deviation(values, counts.astype(float)) == got


@pytest.mark.parametrize("seed", range(12))
def test_grid_orders_are_exact_on_points_of_every_magnitude(seed):
    """The near neighbours are found from the largest magnitude first, then tested with
    their own: points from 1e-300 to 1e300, some one ulp apart or exactly tied, ordered and
    grouped as their rational projections on every direction of a grid."""
    from abstain._ood_search.search import grid_orders, grid_weights

    rng = np.random.default_rng(300 + seed)
    m = int(rng.integers(2, 60))
    scale = 2.0 ** rng.integers(-990, 990, (m, 2)) if seed % 3 == 0 else (
        10.0 ** rng.integers(-8, 9, (m, 2)))
    pts = rng.integers(-4, 5, (m, 2)) * scale
    if seed % 2:  # neighbours one ulp apart, and exact copies
        pts[: m // 2] = np.nextafter(pts[m // 2 : 2 * (m // 2)], np.inf)
        pts[-3:] = pts[:3]
    w = grid_weights(24)
    # points offset along the normal of a direction: their projections on it are equal but
    # for the rounding of the offset, and their rounded projections a few ulps apart
    k = rng.integers(0, 24, m)
    pts = np.concatenate((pts, pts + rng.random((m, 1)) * np.abs(pts).max(axis=1, keepdims=True)
                          * np.column_stack((w[k, 1], -w[k, 0]))))
    orders = grid_orders(pts, w, exact=True)
    for k in range(w.shape[0]):
        vals, ref_new = R.projection_groups(pts[:, 0], pts[:, 1], w[k])
        got = [Fraction(float(pts[i, 0])) * Fraction(float(w[k, 0]))
               + Fraction(float(pts[i, 1])) * Fraction(float(w[k, 1]))
               for i in orders.order[k].tolist()]
        assert got == vals and orders.change[k].tolist() == ref_new[1:]


def test_take_rows_is_take_along_axis():
    from abstain._core.groups import take_rows

    rng = np.random.default_rng(7)
    for d, n, k in ((1, 50, 50), (4, 30, 12), (3, 1, 1), (0, 5, 5), (2, 0, 0),
                    (3, 2000, 1500), (2, 1024, 1024)):  # long rows: gathered row by row
        for a in (rng.normal(size=(d, n)), rng.random((d, n)) < 0.5):
            order = rng.integers(0, max(n, 1), (d, k)) if n else np.zeros((d, 0), np.intp)
            assert np.array_equal(take_rows(a, order), np.take_along_axis(a, order, axis=1))
            assert take_rows(a, order).dtype == a.dtype


@pytest.mark.parametrize("outlier", [None, 1e12, 1e300])
def test_projections_near_is_the_bound_of_each_pair(outlier):
    """The near neighbours found from the largest magnitude first (or, where a huge score
    makes most pairs candidates, from every pair's own magnitudes) are those within each
    pair's own error bound, and no rows give no pairs."""
    from abstain._core.groups import stable_orders
    from abstain._ood_search.search import along, grid_weights

    rng = np.random.default_rng(11)
    pts = np.round(rng.normal(size=(3000, 2)), 3)
    pts[::7] = np.nextafter(pts[1::7][: pts[::7].shape[0]], np.inf)
    if outlier is not None:
        pts[0] = [outlier, -outlier]
    w = grid_weights(12)
    proj = along(pts[None, :, 0], pts[None, :, 1], w[:, :1], w[:, 1:])
    order, _ = stable_orders(proj)
    ss = np.take_along_axis(proj, order, axis=1)
    a, b = np.abs(pts[None, :, 0] * w[:, :1]), np.abs(pts[None, :, 1] * w[:, 1:])
    mag = np.take_along_axis(a + b, order, axis=1)
    want = ss[:, 1:] - ss[:, :-1] <= 4.0 * X._U * (mag[:, 1:] + mag[:, :-1]) + X._ABS
    got = X.projections_near(pts[:, 0], pts[:, 1], w, proj, order)
    assert want.any() and np.array_equal(got, want)
    empty = np.zeros((12, 0))
    assert X.projections_near(np.zeros(0), np.zeros(0), w, empty,
                              np.zeros((12, 0), np.intp)).shape == (12, 0)
