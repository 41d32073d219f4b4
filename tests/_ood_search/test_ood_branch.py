"""The branch-and-bound double-score search (``_ood_search.branch.branch_search``, what
``search="exact"`` runs) against the full sweep over every swap (``exact_search``) and the
brute-force references in tests/reference/ood_ref.py: the same rule (objective, masses,
direction, threshold anchor), on random data with many ties, 0/1 and continuous losses,
weights, all three problems and infeasible targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import ood_ref as R

from abstain._ood_search.branch import branch_search
from abstain._ood_search.sample import (
    Sample,
    ood_fraction,
    precision_recall_constraint,
    tpr_fpr_constraint,
)
from abstain._ood_search.search import exact_search
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD

#: rerun by ``make test`` under another BLAS kernel and NumPy CPU features
pytestmark = pytest.mark.cpu_exact


def _data(rng, n, levels, weighted=False, loss="mixed"):
    """Scores with ``levels`` integer values per column (0: continuous), both classes."""
    ood = rng.random(n) < 0.4
    ood[0], ood[1] = True, False
    if levels:
        s = rng.integers(0, levels, (n, 2)).astype(float)
    else:
        s = rng.normal(size=(n, 2))
        s[:, 1] += 1.5 * ood
    kind = loss if loss != "mixed" else ("01", "half", "cont")[int(rng.integers(3))]
    if kind == "01":
        ls = (rng.random(n) < 0.3).astype(float)
    elif kind == "half":
        ls = rng.integers(0, 3, n) / 2.0
    else:
        ls = rng.random(n)
    w = rng.random(n) + 0.25 if weighted else None
    return s, ood, np.where(ood, 0.0, ls), w


def _problem(rng, sample, kind):
    """A constraint (TPR/FPR, precision/recall) or linear slopes, some of them infeasible."""
    if kind == 0:
        tpr = float(rng.choice([0.3, 0.5, 0.8, 1.0]))
        fpr = float(rng.choice([0.0, 0.1, 0.3, 0.6, 1.0]))
        return tpr_fpr_constraint(sample, tpr, fpr), None
    if kind == 1:
        kappa, recall = float(rng.choice([0.5, 0.7, 0.95])), float(rng.choice([0.3, 0.6, 1.0]))
        return precision_recall_constraint(sample, kappa, recall, ood_fraction(sample)), None
    pi = ood_fraction(sample)
    a, b = (1 - pi) / sample.n_id, pi / sample.n_ood
    e1 = float(rng.choice([0.1, 0.3, 0.6]))
    return None, (-a * e1, b * float(rng.choice([0.5, 1.0])), a)


def _same(got, ref):
    if ref is None:
        assert got is None
        return
    assert got is not None
    # the same anchor, direction and state; the masses are sums of the same numbers, whose
    # last bit may differ (the full sweep itself sums batches of anchors by matrix products)
    assert got.best.at == ref.best.at
    assert got.angle == ref.angle and got.critical == ref.critical
    assert np.array_equal(got.weights, ref.weights)
    for a, b in zip(got.best[1:], ref.best[1:], strict=True):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("seed", range(90))
def test_branch_and_bound_equals_the_full_sweep(seed):
    """Forced through the bounds (``sweep_below=0``) with leaves of every size: the rule of
    the full sweep, ties and tie-breaking included."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 90))
    s, ood, ls, w = _data(rng, n, int(rng.choice([0, 2, 3, 5, 12])), weighted=seed % 4 == 3)
    sample = Sample.of(s, ood, ls, w)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=float(rng.choice([0.5, 3.0, 30.0, 1e4])),
                        start=int(rng.choice([1, 2, 5, 32])))
    _same(got, ref)


@pytest.mark.parametrize("seed", range(30))
def test_branch_and_bound_against_brute_force(seed):
    """The objective equals the exhaustive search over every direction where two pairs tie,
    one direction in every gap, and every threshold (references written from the paper)."""
    rng = np.random.default_rng(500 + seed)
    s, ood, ls, _ = _data(rng, int(rng.integers(4, 13)), int(rng.choice([2, 3, 4])))
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=1.0, start=int(rng.choice([1, 3])))
    _same_as_brute_force(got, s, ood, ls, con, slopes)


def _same_as_brute_force(got, s, ood, ls, con, slopes):
    """``got`` has the optimum of the exhaustive search of tests/reference/ood_ref.py."""
    if con is None:
        ref = R.best_linear_2d(s, ood, ls, slopes)
        assert got is not None and math.isclose(got.best.objective, ref, abs_tol=1e-12)
        return
    ref = R.best_ratio_2d(s, ood, ls, con.a, con.b, con.k)
    assert (got is None) == (ref is None)
    if ref is not None:
        assert math.isclose(got.best.objective, ref[0], abs_tol=1e-12)


@pytest.mark.parametrize("problem", range(3))
def test_the_fits_use_it_beyond_the_full_sweep_size(problem):
    """Above ``SWEEP_BELOW`` distinct pairs the models run the branch and bound: each fitted
    rule equals the full sweep's, and no grid (the paper's 1602 angles) does better."""
    rng = np.random.default_rng(40 + problem)
    n = 400
    s, ood, ls, _ = _data(rng, n, 0, loss=("01", "cont", "01")[problem])
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    model, grid = [
        (BoundedTPRFPR(0.7, 0.3, search="exact"), BoundedTPRFPR(0.7, 0.3, n_directions=1602)),
        (BoundedPrecisionRecall(0.8, 0.5, search="exact"),
         BoundedPrecisionRecall(0.8, 0.5, n_directions=1602)),
        (CostBasedOOD(0.3, 1.0, 0.0, search="exact"), CostBasedOOD(0.3, 1.0, 0.0,
                                                                     n_directions=1602)),
    ][problem]
    model.fit(s, ood, ls)
    grid.fit(s, ood, ls)
    con, slopes = [(tpr_fpr_constraint(sample, 0.7, 0.3), None),
                   (precision_recall_constraint(sample, 0.8, 0.5, ood_fraction(sample)), None),
                   _problem(np.random.default_rng(0), sample, 2)][problem]
    if problem == 2:
        pi = ood_fraction(sample)
        a, b = (1 - pi) / sample.n_id, pi / sample.n_ood
        slopes = (-a * 0.3, b * 1.0, a)
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    assert ref is not None and pts.shape[0] == n
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    _same(got, ref)
    assert model.weights_ == list(ref.weights)
    if problem == 2:
        assert model.cost_ <= grid.cost_ + 1e-12
    else:
        assert model.risk_ == pytest.approx(ref.best.objective, abs=1e-15)
        assert model.risk_ <= grid.risk_ + 1e-12


def test_infeasible_targets_and_the_tie_plateau():
    """No feasible rule: None, as the full sweep; all losses zero (every feasible rule ties
    at risk 0): the tie is broken as the full sweep breaks it (largest TPR first)."""
    rng = np.random.default_rng(7)
    s, ood, ls, _ = _data(rng, 300, 0, loss="01")
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    for tpr, fpr in ((1.0, 0.0), (0.99, 0.01)):
        con = tpr_fpr_constraint(sample, tpr, fpr)
        assert exact_search(pts, x, con, None, sample.n_id, sample.n_ood) is None
        assert branch_search(pts, x, con, None, sample.n_id, sample.n_ood) is None
    zero = Sample.of(s, ood, np.zeros(300))
    pts, x = zero.pairs()
    con = tpr_fpr_constraint(zero, 0.5, 0.2)
    ref = exact_search(pts, x, con, None, zero.n_id, zero.n_ood)
    assert ref is not None and ref.best.objective == 0.0
    _same(branch_search(pts, x, con, None, zero.n_id, zero.n_ood), ref)


@given(st.integers(0, 10**6))
def test_property_equal_to_the_full_sweep_under_rescaling(seed):
    """Positive rescaling of a column, tied or continuous data: the same optimum as the full
    sweep of the rescaled data (whose directions then differ)."""
    rng = np.random.default_rng(seed)
    s, ood, ls, _ = _data(rng, int(rng.integers(5, 60)), int(rng.choice([0, 3, 6])))
    s = s * np.array([float(rng.choice([1.0, 0.01, 37.5])), float(rng.choice([1.0, 250.0]))])
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, int(rng.integers(3)))
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    _same(branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=float(rng.choice([1.0, 10.0]))), ref)


@pytest.mark.parametrize("seed", range(40))
def test_pairs_on_a_line_through_an_anchor_tie(seed):
    """Integer pairs over wide ranges (many on one line through another, on both sides):
    the swaps on each side of the line are one exact event, so the optimum is the brute force's,
    also after an exact rescaling of a column."""
    rng = np.random.default_rng(900 + seed)
    n = int(rng.integers(4, 11))
    s = np.stack((rng.integers(0, 6, n), rng.integers(-15, 15, n)), 1).astype(float)
    if seed == 0:  # the pairs (4, 7), (5, 8) and (3, 6) on a line, with (4, 0)
        s = np.array([[4.0, 7.0], [3.0, 6.0], [5.0, 8.0], [4.0, 0.0]])
    ood = rng.random(len(s)) < 0.5
    ood[0], ood[1] = True, False
    ls = np.where(ood, 0.0, rng.integers(0, 2, len(s)).astype(float))
    for scale in (1.0, 128.0, 3.0):
        t = s * np.array([scale, 1.0])
        sample = Sample.of(t, ood, ls)
        pts, x = sample.pairs()
        con, slopes = _problem(rng, sample, seed % 3)
        got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                            leaf_work=3.0)
        full = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
        if con is None:
            ref = R.best_linear_2d(t, ood, ls, slopes)
            assert math.isclose(got.best.objective, ref, abs_tol=1e-12)
            assert math.isclose(full.best.objective, ref, abs_tol=1e-12)
            continue
        ref = R.best_ratio_2d(t, ood, ls, con.a, con.b, con.k)
        assert (got is None) == (ref is None) == (full is None)
        if ref is not None:
            assert math.isclose(got.best.objective, ref[0], abs_tol=1e-12)
            assert math.isclose(full.best.objective, ref[0], abs_tol=1e-12)


def test_swaps_on_both_sides_of_an_anchor_tie_exactly():
    """Offsets ``v`` and ``-t v`` (two pairs on one line through the anchor) swap with it at
    one exact angle: one group of swaps, whatever the rounding of any angle."""
    from abstain._core.exact import sorted_events

    rng = np.random.default_rng(0)
    v = rng.integers(-200, 200, (20000, 2)).astype(float)
    v = v[v[:, 0] != 0]
    t = rng.integers(1, 9, len(v)).astype(float)[:, None]
    e = rng.integers(-50, 50, (len(v), 2)).astype(float)
    n = len(v)
    row = np.repeat(np.arange(n), 2)
    pts = np.stack((e + v, e - t * v), axis=1).reshape(-1, 2)
    anchor = np.repeat(e, 2, axis=0)
    order, new = sorted_events(row, anchor[:, 0], anchor[:, 1], pts[:, 0], pts[:, 1])
    assert np.array_equal(row[order], row) and not new[1::2].any() and new[0::2].all()


def _fan(rng, n, weighted):
    """Pairs along a line with tiny second scores (many swaps within 1e-9 of pi/2, as a
    likelihood ratio that underflows), a normal cluster, a few far points, exact ties."""
    k = n // 2
    line = np.stack((rng.random(k), 10.0 ** rng.uniform(-40, -9, k)), 1)
    line[: k // 4, 1] = 0.0
    blob = rng.normal(size=(n - k - 3, 2)) * [0.2, 1.0] + [0.3, 2.0]
    far = np.array([[40.0, -3.0], [-25.0, 60.0], [0.5, 1e4]])
    s = np.concatenate((line, blob, far))
    s = np.concatenate((s, s[rng.integers(0, len(s), n // 10)]))  # exact ties
    ood = rng.random(len(s)) < 0.3
    ood[0], ood[1] = True, False
    ls = np.where(ood, 0.0, (rng.random(len(s)) < 0.3) * rng.choice([1.0, 0.4], len(s)))
    w = rng.random(len(s)) + 0.25 if weighted else None
    return s, ood, ls, w


@pytest.mark.parametrize("seed", range(24))
def test_band_bounds_and_cost_sweeps_equal_the_full_sweep(seed):
    """Near-collinear pairs (swaps packed near pi/2), far points that widen the outer bands,
    ties, float weights, all three objectives, band bounds on or off: the full sweep's rule."""
    rng = np.random.default_rng(3000 + seed)
    s, ood, ls, w = _fan(rng, int(rng.integers(40, 160)), weighted=seed % 2 == 1)
    sample = Sample.of(s, ood, ls, w)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=float(rng.choice([0.3, 1.0, 5.0])),
                        start=int(rng.choice([2, 8, 32])), refine=bool(seed % 4 < 2))
    _same(got, ref)


@pytest.mark.parametrize("seed", range(12))
def test_band_bounds_against_brute_force(seed):
    """Integer pairs, most on two nearly parallel lines (many swaps near one angle), with a
    far point: the linear and ratio optima equal the exhaustive search's."""
    rng = np.random.default_rng(4000 + seed)
    n = int(rng.integers(6, 12))
    s = np.stack((rng.integers(0, 40, n), rng.integers(0, 2, n)), 1).astype(float)
    s[-1] = (float(rng.integers(-300, 300)), float(rng.integers(-50, 50)))
    ood = rng.random(n) < 0.4
    ood[0], ood[1] = True, False
    ls = np.where(ood, 0.0, rng.integers(0, 3, n) / 2.0)
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=0.3, refine=True)
    _same_as_brute_force(got, s, ood, ls, con, slopes)


@pytest.mark.parametrize("seed", range(6))
def test_bands_hold_every_point_that_can_move(seed):
    """Outside an anchor's bands a point keeps its side of the anchor on the whole interval
    (its swap angle, as the sweep computes it, lies outside), and the masses certainly
    below are those of the points outside the bands below it."""
    from abstain._core.exact import dot_sign
    from abstain._ood_search.branch import IntervalSearch
    from abstain._ood_search.search import unit_weights

    rng = np.random.default_rng(5000 + seed)
    s, ood, ls, w = _fan(rng, 120, weighted=True)
    sample = Sample.of(s, ood, ls, w)
    pts, x = sample.pairs()
    m = len(pts)
    con, slopes = _problem(rng, sample, 2)
    search = IntervalSearch(pts, x, con, slopes, sample.n_id, sample.n_ood)
    for a0, a1 in ((0.0, 0.3), (1.5, math.pi / 2), (math.pi / 2, math.pi / 2 + 1e-9),
                   (2.0, 2.0 + 1e-4), (3.0, math.pi)):
        e = np.arange(m)
        split = search.split(a0, a1, e, (np.arange(m), np.zeros(4)))
        for i in rng.choice(m, 25, replace=False):
            inside = np.zeros(m, dtype=bool)
            for lo, hi in zip(split.lo[i], split.hi[i], strict=True):
                inside[split.order[lo:hi]] = True
            out = np.flatnonzero(~inside)
            dr, dg = pts[out, 0] - pts[i, 0], pts[out, 1] - pts[i, 1]
            # the exact side of each swap against the interval's ends (as the sweep does)
            ends = []
            for a in (a0, a1):
                w = unit_weights(np.array([a]))[0]
                ends.append(np.sign(dr) * dot_sign(pts[out, 0], pts[out, 1],
                                                   np.full(out.size, pts[i, 0]),
                                                   np.full(out.size, pts[i, 1]), *w))
            t0, t1 = ends
            assert not np.any((dr != 0) & (t0 >= 0) & (t1 <= 0))
            below = np.where(dr == 0, dg < 0, np.where(dr < 0, t0 >= 0, t0 < 0))
            mass = np.concatenate((x[out[below]], np.ones((below.sum(), 1))), axis=1)
            assert np.allclose(split.C[i], mass.sum(axis=0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize("form", ["scale", "line"])
def test_pairs_within_the_rounding_slack_are_swept_not_halved(form, kind, call_limit):
    """A first score with few values and a second of a far smaller scale (or the pairs near
    one line): near the first score's direction the points of one value are within the
    bounds' rounding slack of each other, so no halving sheds them. Such intervals are swept
    (``INSEPARABLE``) instead of being halved down to ``MIN_WIDTH`` (about 2^20 intervals;
    a cost-based fit on 2,000 rows ran for minutes)."""
    from abstain._ood_search import branch as BR

    rng = np.random.default_rng(11)
    n = 400
    ood = rng.random(n) < 0.4
    a = rng.integers(0, 6, n).astype(float)
    b = rng.normal(size=n) + ood
    s = np.stack((a, 1e-9 * b if form == "scale" else a + 1e-9 * b), axis=1)
    ls = np.where(ood, 0.0, rng.random(n) < 0.3).astype(float)
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    con, slopes = _problem(np.random.default_rng(kind), sample, kind)
    calls = call_limit(BR.IntervalSearch, "bounds", 5000)
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0)
    _same(got, ref)
    assert 0 < len(calls) < 1000


@pytest.mark.parametrize("n", [60, 400, 4096])
def test_bands_are_cut_between_tight_clusters_only(n):
    """``band_edges``: a coordinate with a few values (plus offsets far below their gaps,
    equally spaced, so that three clusters in a band have gaps of exactly half its span)
    gets no band holding two values; continuous samples keep the quantile edges."""
    from abstain._ood_search.branch import BANDS, band_edges

    rng = np.random.default_rng(n)
    for sample in (rng.normal(size=n), rng.standard_cauchy(size=n), rng.exponential(size=n) ** 3):
        sample = np.sort(sample)
        assert np.array_equal(band_edges(sample), np.quantile(sample, BANDS))
    for levels in (3, 6, 13) if n >= 400 else (3, 6):  # 4 sample points or more a value
        value = rng.integers(0, levels, n) * 2.24
        t = np.sort(value + 1e-9 * rng.normal(size=n))
        edges = band_edges(t)
        band = np.searchsorted(edges[1:-1], t, side="right")
        for j in np.unique(band):
            assert np.ptp(np.round(t[band == j], 3)) == 0  # one value per band


def clustered_draw(seed):
    """A draw of the random stress run of the branch and bound (weighted where ``seed % 4``
    is 3): a first score with few values and a second of a far smaller scale, or near one
    line; the generator, its state after the draw, and the sample."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 700))
    _, ood, ls, w = _data(rng, n, int(rng.choice([0, 2, 3, 5, 12, 40])), weighted=seed % 4 == 3)
    rng.random()
    levels, k = int(rng.integers(2, 16)), int(rng.choice([0, 1, -1, 2]))
    scale = float(rng.choice([1e-12, 1e-9, 1e-6, 1e-3]))
    a = rng.integers(0, levels, n).astype(float)
    return rng, Sample.of(np.stack((a, k * a + scale * rng.normal(size=n)), 1), ood, ls, w)


@pytest.mark.parametrize("seed", [650001, 1363002, 1804002, 22002])
def test_bounds_that_never_shed_fall_back_to_the_full_sweep(seed, call_limit):
    """Draws of a random stress run (few values of the first score, a second far smaller,
    near one line) where neither the band cuts nor the rounding rule stop the halving: past
    ``INTERVALS_PER_POINT`` bounded intervals per point the search runs the full sweep
    (before, a fit of 53 to 468 rows ran for minutes)."""
    from abstain._ood_search import branch as BR

    rng, sample = clustered_draw(seed)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    calls = call_limit(BR.IntervalSearch, "bounds", 4 * BR.INTERVALS_PER_POINT * len(pts))
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=float(rng.choice([0.5, 3.0, 30.0])),
                        start=int(rng.choice([1, 2, 5, 32])))
    _same(got, ref)
    assert len(calls) <= BR.INTERVALS_PER_POINT * len(pts) + 1
