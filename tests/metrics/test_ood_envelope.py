"""Exact two-score OOD metrics (``search="exact"``): the envelope over every direction of
the half-circle (AUROC, OSCR, ROC and PR curves, FPR at TPR, detection rate) against the
brute-force references of tests/reference/ood_ref.py (every order of the projected pairs,
plus a dense scan of angles), against the grid, and their invariance to a positive
rescaling of either column."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from reference import ood_ref as R

from abstain import InfeasibleTargetWarning
from abstain import metrics as M
from abstain.metrics._ood import exact_envelope_metrics

#: rerun by ``make test`` under another BLAS kernel and NumPy CPU features
pytestmark = pytest.mark.cpu_exact

TOL = 1e-10


def _tie_sample(seed, random_sample):
    rng = np.random.default_rng(seed)
    s, is_ood, _ = random_sample(rng, n_max=12, levels=4)
    losses = rng.integers(0, 3, s.shape[0]) / 2.0  # CCR gains 1, 0.5, 0
    return s, is_ood, losses


@pytest.mark.parametrize("seed", range(10))
def test_exact_areas_against_the_brute_force_envelope(seed, random_sample):
    s, is_ood, losses = _tie_sample(seed, random_sample)
    n_id, n_ood = float(np.sum(~is_ood)), float(np.sum(is_ood))
    for gain, got in ((np.ones(s.shape[0]), M.auroc(is_ood, s, search="exact")),
                      (1 - losses, M.oscr(losses, is_ood, s, search="exact"))):
        segs = R.envelope_segments(s, is_ood, gain, n_dense=90)
        assert got == pytest.approx(R.envelope_area_ref(segs) / (n_id * n_ood), abs=TOL)


@pytest.mark.parametrize("seed", range(10))
def test_exact_roc_curve_and_rates_against_the_brute_force(seed, random_sample):
    s, is_ood, _ = _tie_sample(seed, random_sample)
    n_id, n_ood = float(np.sum(~is_ood)), float(np.sum(is_ood))
    segs = R.envelope_segments(s, is_ood, np.ones(s.shape[0]))
    fpr = np.unique(np.concatenate((np.linspace(0, 1, 37), np.arange(n_ood + 1) / n_ood)))
    curve = M.ood_roc_curve(is_ood, s, fpr=fpr, search="exact")
    want = [R.envelope_value_ref(segs, f * n_ood, n_id) / n_id for f in fpr]
    np.testing.assert_allclose(curve.tpr, want, atol=TOL)
    for t in (0.1, 0.3, 0.5, 0.75, 0.95, 1.0):
        got = M.fpr_at_tpr(is_ood, s, t, search="exact")
        assert got == pytest.approx(R.best_fpr_at_tpr_ref(s, is_ood, t), abs=TOL)
        assert M.tnr_at_tpr(is_ood, s, t, search="exact") == pytest.approx(1 - got, abs=TOL)
    got = M.detection_rate_at_false_alarm(is_ood, s, 0.25, search="exact")
    assert got == pytest.approx(1 - R.best_fpr_at_tpr_ref(s, is_ood, 0.75), abs=TOL)


def _grid_area(s, is_ood, gain, d):
    """Exact area under the envelope of the d grid directions (brute force)."""
    segs = set()
    for k in range(d):
        w = (math.cos(k * math.pi / d), math.sin(k * math.pi / d))
        segs.update(R.curve_segments(R.project(s, w), is_ood, gain))
    return R.envelope_area_ref(sorted(segs)) / (np.sum(~is_ood) * np.sum(is_ood))


@pytest.mark.parametrize("seed", range(4))
def test_exact_is_never_worse_than_a_grid_or_a_column(seed, random_sample):
    s, is_ood, losses = _tie_sample(seed, random_sample)
    ex_auc = M.auroc(is_ood, s, search="exact")
    ex_oscr = M.oscr(losses, is_ood, s, search="exact")
    ex_fpr = M.fpr_at_tpr(is_ood, s, 0.8, search="exact")
    for d in (1, 2, 7, 12, 360):
        if d <= 12:  # the grid's exact envelope area, and the metric's trapezoids: at most
            # half a point spacing above (they cut the corners of the envelope's jumps)
            for ex, gain, grid in (
                (ex_auc, np.ones(s.shape[0]), M.auroc(is_ood, s, n_directions=d)),
                (ex_oscr, 1 - losses, M.oscr(losses, is_ood, s, n_directions=d)),
            ):
                assert ex >= _grid_area(s, is_ood, gain, d) - TOL
                assert ex >= grid - 1 / 4000 - TOL
        assert ex_fpr <= M.fpr_at_tpr(is_ood, s, 0.8, n_directions=d) + TOL
    for j in range(2):
        assert ex_auc >= M.auroc(is_ood, s[:, j]) - TOL


def test_grid_rate_on_two_columns_is_its_best_direction(random_sample):
    s, is_ood, _ = _tie_sample(3, random_sample)
    for d in (1, 12):
        per = [R.rate_at_ref(R.project(s, (math.cos(k * math.pi / d), math.sin(k * math.pi / d))),
                             is_ood, 0.6) for k in range(d)]
        assert M.fpr_at_tpr(is_ood, s, 0.6, n_directions=d) == pytest.approx(min(per), abs=TOL)


def _continuous(seed, n=300):
    rng = np.random.default_rng(seed)
    is_ood = rng.random(n) < 0.4
    losses = (rng.random(n) < 0.2).astype(float)
    s = np.stack([rng.normal(size=n) + losses, rng.normal(size=n) + 1.5 * is_ood], axis=1)
    return s, is_ood, losses


@pytest.mark.parametrize("scale", [(100.0, 1.0), (1.0, 1e-3), (0.37, 2.5e4)])
def test_exact_metrics_are_unit_free(scale):
    s, is_ood, losses = _continuous(1)
    t = s * np.asarray(scale) + np.array([5.0, -3.0])  # a shift changes no order either
    assert M.auroc(is_ood, t, search="exact") == pytest.approx(
        M.auroc(is_ood, s, search="exact"), abs=1e-12)
    assert M.oscr(losses, is_ood, t, search="exact") == pytest.approx(
        M.oscr(losses, is_ood, s, search="exact"), abs=1e-12)
    assert M.fpr_at_tpr(is_ood, t, 0.9, search="exact") == pytest.approx(
        M.fpr_at_tpr(is_ood, s, 0.9, search="exact"), abs=1e-12)
    # and a permutation of the rows changes nothing
    p = np.random.default_rng(0).permutation(s.shape[0])
    assert M.auroc(is_ood[p], s[p], search="exact") == pytest.approx(
        M.auroc(is_ood, s, search="exact"), abs=1e-12)
    # the grid is not: it depends on the units
    assert M.auroc(is_ood, s * [1e4, 1.0], search="grid") != M.auroc(is_ood, s, search="grid")


@pytest.mark.parametrize("seed", range(3))
def test_exact_metrics_are_unit_free_with_ties(seed, random_sample):
    s, is_ood, losses = _tie_sample(seed, random_sample)
    for scale in ((3.0, 1.0), (1.0, 0.25), (7.0, 2.0)):
        t = s * np.asarray(scale)
        assert M.auroc(is_ood, t, search="exact") == pytest.approx(
            M.auroc(is_ood, s, search="exact"), abs=1e-12)
        assert M.oscr(losses, is_ood, t, search="exact") == pytest.approx(
            M.oscr(losses, is_ood, s, search="exact"), abs=1e-12)
        assert M.fpr_at_tpr(is_ood, t, 0.7, search="exact") == pytest.approx(
            M.fpr_at_tpr(is_ood, s, 0.7, search="exact"), abs=1e-12)


def test_exact_one_column_and_errors():
    is_ood, s = [0, 1, 0, 1], [0.1, 0.2, 0.2, 0.4]
    assert M.auroc(is_ood, s, search="exact") == M.auroc(is_ood, s) == 0.875
    assert M.fpr_at_tpr(is_ood, s, 0.75, search="exact") == 0.25
    pair = [[0.1, 1.0], [0.2, 0.0], [0.2, 2.0], [0.4, 1.0]]
    with pytest.raises(ValueError, match="search"):
        M.auroc(is_ood, pair, search="dense")
    with pytest.raises(ValueError, match="search"):
        M.fpr_at_tpr(is_ood, pair, 0.5, search="all")
    with pytest.raises(ValueError, match="fpr"):
        M.ood_roc_curve(is_ood, pair, fpr=[0.5, 1.5], search="exact")
    with pytest.raises(ValueError, match="losses"):
        M.oscr([2.0, 0.0, 0.0, 0.0], is_ood, pair, search="exact")


@pytest.mark.parametrize("seed", range(5))
def test_exact_pr_curve_against_the_brute_force(seed, random_sample):
    s, is_ood, _ = _tie_sample(seed, random_sample)
    recall = np.array([0.05, 0.2, 0.5, 0.6, 0.8, 0.95, 1.0])
    for prior in (None, 0.3):
        got = M.ood_pr_curve(is_ood, s, recall=recall, ood_prior=prior, search="exact")
        pi = float(np.mean(is_ood)) if prior is None else prior
        want = [R.best_precision_ref(s, is_ood, r, pi) for r in recall]
        np.testing.assert_allclose(got.precision, want, atol=TOL)
        grid = M.ood_pr_curve(is_ood, s, recall=recall, ood_prior=prior, n_directions=12)
        assert np.all(got.precision >= grid.precision - TOL)


@pytest.mark.parametrize("seed", range(8))
def test_exact_risk_coverage_curve_at_fpr_against_the_brute_force(seed, random_sample):
    s, is_ood, losses = _tie_sample(seed, random_sample)
    n_id, n_ood = float(np.sum(~is_ood)), float(np.sum(is_ood))
    tpr = np.array([0.1, 0.25, 1 / 3, 0.5, 0.6, 0.75, 0.9, 1.0])
    for fpr in (0.0, 0.25, 0.5, 1.0):
        got = M.risk_coverage_curve_at_fpr(losses, is_ood, s, fpr=fpr, tpr=tpr, search="exact")
        assert got.tpr is tpr or np.array_equal(got.tpr, tpr)
        want = []
        for t in tpr:  # every rule of every direction in [0, pi] (the exact fits' set)
            best = R.best_ratio_2d(s, is_ood, losses, t * n_id, fpr * n_ood)
            want.append(math.nan if best is None else best[0])
        np.testing.assert_allclose(got.risk, want, atol=TOL, equal_nan=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleTargetWarning)
            one = [M.selective_risk_at_tpr_fpr(losses, is_ood, s, t, fpr, search="exact")
                   for t in tpr]
        np.testing.assert_allclose(got.risk, one, atol=TOL, equal_nan=True)
        grid = M.risk_coverage_curve_at_fpr(losses, is_ood, s, fpr=fpr, tpr=tpr,
                                            n_directions=12)
        assert np.all(np.isnan(grid.risk) | (got.risk <= grid.risk + TOL))


def test_exact_risk_coverage_curve_at_fpr_is_unit_free_and_checks_its_input():
    s, is_ood, losses = _continuous(2)
    got = M.risk_coverage_curve_at_fpr(losses, is_ood, s, fpr=0.3, search="exact")
    scaled = M.risk_coverage_curve_at_fpr(losses, is_ood, s * [100.0, 1e-3], fpr=0.3,
                                          search="exact")
    np.testing.assert_allclose(scaled.risk, got.risk, atol=1e-12, equal_nan=True)
    assert got.tpr.size == 100 and np.isfinite(got.risk[:50]).all()
    one = M.risk_coverage_curve_at_fpr(losses, is_ood, s[:, 0], fpr=0.3, search="exact")
    np.testing.assert_array_equal(
        one.risk, M.risk_coverage_curve_at_fpr(losses, is_ood, s[:, 0], fpr=0.3).risk)
    with pytest.raises(ValueError, match="search"):
        M.risk_coverage_curve_at_fpr(losses, is_ood, s, fpr=0.3, search="all")
    for bad in ([[0.5]], []):  # [] gave an empty curve, where the ROC and PR curves refuse
        with pytest.raises(ValueError, match="tpr must be a non-empty 1-D array"):
            M.risk_coverage_curve_at_fpr(losses, is_ood, s, fpr=0.3, tpr=bad, search="exact")
    # the bounds of the ROC and PR curves too (a 0-d recall gave a curve of two shapes)
    for scores in (s, s[:, 0]):
        for bad in (0.5, np.array(0.5), [[0.25], [0.5]], []):  # [] ended in an IndexError
            with pytest.raises(ValueError, match=r"^fpr must be a non-empty 1-D array; got "):
                M.ood_roc_curve(is_ood, scores, fpr=bad)
            with pytest.raises(ValueError, match=r"^recall must be a non-empty 1-D array; "):
                M.ood_pr_curve(is_ood, scores, recall=bad)
    with pytest.raises(ValueError, match="tpr"):
        M.risk_coverage_curve_at_fpr(losses, is_ood, s, fpr=0.3, tpr=[0.0], search="exact")
    with pytest.raises(ValueError, match="fpr"):
        M.risk_coverage_curve_at_fpr(losses, is_ood, s, fpr=1.5, search="exact")


def test_exact_envelope_with_pairs_on_a_line_on_both_sides_of_a_point():
    # (3, 6), (4, 7), (5, 8) lie on a line; x128 on the first column keeps them on it exactly
    s = np.array([[4.0, 7.0], [3.0, 6.0], [5.0, 8.0], [4.0, 0.0]])
    is_ood = np.array([True, False, False, True])
    segs = R.envelope_segments(s, is_ood, np.ones(4))
    want = R.envelope_area_ref(segs) / 4
    assert M.auroc(is_ood, s, search="exact") == pytest.approx(want, abs=TOL)  # 0.5625
    assert M.auroc(is_ood, s * [128.0, 1.0], search="exact") == pytest.approx(want, abs=TOL)


@pytest.mark.parametrize("seed", range(6))
def test_one_sweep_of_several_gains_equals_one_sweep_each(seed, random_sample):
    from abstain._ood_search import envelope as env

    s, is_ood, losses = _tie_sample(seed, random_sample)
    ood = is_ood.astype(float)
    gains = np.column_stack([1.0 - ood, (1.0 - ood) * (1 - losses), (1.0 - ood) * losses])
    both = env.envelopes(s, ood, gains)
    for c, lines in enumerate(both):
        one = env.envelope_lines(s, ood, gains[:, c])
        for got, want in zip(lines, one, strict=True):
            np.testing.assert_array_equal(got, want)
    want = {"auroc": M.auroc(is_ood, s, search="exact"),
            "fpr_at_tpr": M.fpr_at_tpr(is_ood, s, 0.7, search="exact"),
            "oscr": M.oscr(losses, is_ood, s, search="exact")}
    assert exact_envelope_metrics(losses, is_ood, s, 0.7, True) == want


def test_the_grid_ties_exact_projections_so_it_never_rises_above_the_exact_envelope():
    # at 45 degrees the float direction is (0.7071067811865476, 0.7071067811865475): rounded
    # projections tied (2, 2) with (1, 3) and not with (3, 1), an order no direction gives,
    # and the grid's FPR at TPR 0.3 (0.2143) fell below the exact optimum (0.2857)
    from abstain.metrics import auroc, fpr_at_tpr

    pts = np.array([[4, 4], [2, 2], [3, 1], [3, 2], [4, 3], [1, 3], [2, 4], [5, 4], [3, 1],
                    [1, 1], [3, 3], [0, 1]], dtype=float)
    y = np.array([1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1], dtype=bool)
    for scale in (1.0, 3.0):
        assert fpr_at_tpr(y, scale * pts, 0.3, search="grid") >= fpr_at_tpr(
            y, pts, 0.3, search="exact") == 2 / 7
        assert auroc(y, scale * pts, search="grid") <= auroc(y, pts, search="exact") + 1 / 4000
    rng = np.random.default_rng(2)
    for _ in range(20):
        lattice = rng.integers(0, 5, (40, 2)).astype(float)
        y = rng.random(40) < 0.5
        y[:2] = [True, False]
        assert fpr_at_tpr(y, lattice, 0.5, search="grid") >= fpr_at_tpr(
            y, lattice, 0.5, search="exact") * (1 - 1e-12)  # interpolated: its round-off
        # the grid's area joins n_points FPR values by trapezoids: above by at most half
        # their spacing, 1/4000 (plus round-off)
        exact = auroc(y, lattice, search="exact")
        assert auroc(y, lattice, search="grid") <= exact + 1 / 4000 + 1e-12


def test_the_grid_pr_curve_ties_exact_projections_as_the_roc_envelope_does():
    """At 45 degrees the rounded projections of (1, 3) and (2, 2) tie, exactly (1, 3) is
    below: ``ood_pr_curve(search="grid")`` grouped the rounded projections and gave a
    precision of 0.6 at recall 1, where the grid's own ROC envelope reaches TPR 1 at FPR
    0.5 (precision 0.75 at the OOD share 2/5), as the exact curve does."""
    from abstain.metrics import ood_pr_curve, ood_roc_curve

    s = np.array([[2.0, 2.0], [1.0, 1.0], [2.0, 1.0], [1.0, 3.0], [2.0, 1.0]])
    y = np.array([True, False, True, False, False])
    assert ood_roc_curve(y, s, fpr=[0.5], search="grid", n_directions=4).tpr[0] == 1.0
    grid = ood_pr_curve(y, s, recall=[1.0], search="grid", n_directions=4).precision[0]
    exact = ood_pr_curve(y, s, recall=[1.0], search="exact").precision[0]
    assert grid == exact == pytest.approx(0.75, abs=1e-15)


def test_rows_whose_projections_overflow_keep_their_exact_tie_groups_on_the_grid():
    """Scores near 1e308 beside a subnormal one are not divided (the subnormal would be
    lost), so projections overflow: two identical rows, one ID and one OOD, both project to
    inf, whose gap is NaN, and the envelope's exact tie groups took NaN for far apart and
    split them (AUROC 1.0 and FPR at TPR 1.0 of 0.0 on every grid, where the exact envelope
    and the same rows at 1.5e307 give 5/6 and 1.0)."""
    import warnings

    from abstain.metrics import PairResampler, auroc, fpr_at_tpr

    s = np.array([[1.5e308, 1.5e308], [1.5e308, 0.0], [1.5e308, 1.5e308], [1e-310, 0.0]])
    y = np.array([False, False, True, False])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the projections' overflow
        for d in (4, 360):
            assert auroc(y, s, search="grid", n_directions=d) == pytest.approx(5 / 6, abs=1e-15)
            assert fpr_at_tpr(y, s, 1.0, search="grid", n_directions=d) == 1.0
        row = PairResampler(np.zeros(4), y, s, tpr=1.0, fpr=1.0, search="grid",
                            n_directions=4).row(np.ones(4, dtype=np.int64))
        assert row["auroc"] == pytest.approx(5 / 6, abs=1e-15) and row["fpr_at_tpr"] == 1.0


def test_the_grid_area_exceeds_the_exact_one_by_at_most_half_a_point_spacing():
    """The grid's envelope is at most the exact one at every FPR, but its trapezoids cut the
    corner of a jump: on three rows the exact AUROC is 0.5 and the grid's 0.50025, the
    documented bound 1 / (2 (n_points - 1)) reached."""
    from abstain.metrics import auroc

    y = np.array([True, True, False])
    s = np.array([[0.1, 0.2], [0.3, 0.1], [0.2, 0.2]])
    exact, grid = auroc(y, s, search="exact"), auroc(y, s, search="grid")
    assert exact == 0.5 and grid == pytest.approx(0.5 + 1 / 4000, abs=1e-15)
    for n_points in (11, 101):
        assert auroc(y, s, search="grid", n_points=n_points) == pytest.approx(
            0.5 + 1 / (2 * (n_points - 1)), abs=1e-15)


@pytest.mark.parametrize("sweep_below", [None, 10])
def test_exact_envelope_of_a_table_with_millions_of_rows_per_pair(sweep_below):
    """The envelope's pieces are cut at the segments' ends, not at every OOD row: a table of
    60 distinct pairs with 2e6 OOD rows gives the metrics of its counts divided by 1e5 (the
    same curves, scaled), in little memory (units of OOD rows took 2 kB per row), by the
    full sweep and by the branch and bound (``sweep_below``)."""
    import tracemalloc

    from abstain._ood_search import envelope as env

    rng = np.random.default_rng(8)
    v = np.unique(np.round(rng.normal(size=(60, 2)), 1), axis=0)
    m = v.shape[0]
    ood, gid = rng.integers(0, 4, m) * 1.0, rng.integers(0, 4, m) * 1.0
    ood[0], gid[1] = 1.0, 1.0
    got = []
    for scale in (1.0, 1e5):
        x = np.column_stack((ood * scale, gid * scale))
        tracemalloc.start()
        lines = env._lines(v, x, sweep_below)[0]
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        n_ood, n_id = float(x[:, 0].sum()), float(x[:, 1].sum())
        got.append((env.area(lines) / (n_ood * n_id),
                    env.first_reach(lines, 0.6 * n_id) / n_ood,
                    env.value_at(lines, np.array([0.3, 0.77]) * n_ood) / n_id))
        if scale > 1:
            assert peak < 64 * 2**20 + (sweep_below is not None) * 40 * n_ood
    (a1, f1, v1), (a2, f2, v2) = got
    assert math.isclose(a1, a2, rel_tol=1e-12) and math.isclose(f1, f2, rel_tol=1e-12)
    assert np.allclose(v1, v2, rtol=1e-12, atol=0)
