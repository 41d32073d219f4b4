"""Constrained optima and ties of the double-score search that round-off used to decide:
the end of a segment where a constraint holds with equality, masses that are equal sums in
another order, a starting interval as wide as the half circle, and a zero risk that
round-off made negative. References: the exact
brute force of tests/reference/ood_ref.py (rational arithmetic) and the full sweep."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from reference import ood_ref as R
from test_ood_branch import _data, _problem, _same, clustered_draw

from abstain._ood_search.best import RTOL, Best, Constraint, better, rows_best_ratio
from abstain._ood_search.branch import branch_search
from abstain._ood_search.sample import (
    Sample,
    ood_fraction,
    precision_recall_constraint,
    tpr_fpr_constraint,
)
from abstain._ood_search.search import exact_search
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR

#: rerun by ``make test`` under another BLAS kernel and NumPy CPU features
pytestmark = pytest.mark.cpu_exact


def _segment(con, i0, o0, l0, di, do, dl, scale_i, scale_o):
    one = [np.array([v]) for v in (i0, o0, l0, di, do, dl)]
    return rows_best_ratio(np.zeros(1, dtype=np.intp), np.zeros(1, dtype=np.intp), *one, 1,
                           con, scale_i, scale_o)


def test_a_segment_ends_where_the_ood_constraint_holds_with_equality():
    """A segment of a weighted precision/recall fit whose best point has ``O - k I = b``:
    the end used to be placed at ``b`` plus the tolerance, where the round-off of ``nu * e``
    failed the check half the time; the segment then offered only ``nu = 0`` and the fit
    kept a rule of risk 0.49800 instead of 0.49718."""
    con = Constraint(a=76.88616485993441, b=0.0, k=0.42857142857142866)
    r = _segment(con, 80.91696136938397, 33.62687269465813, 40.35901104844274,
                 0.6172130858550613, 1.659739977248059, 0.1365865397742012,
                 128.14360809989068, 57.571963749128926)
    assert r.found[0]
    assert r.nu[0] == pytest.approx(0.7538775048, rel=1e-9)
    assert r.O[0] - con.k * r.I[0] == pytest.approx(con.b, abs=1e-12)
    assert r.objective[0] == pytest.approx(0.4971842557022853, rel=1e-12)


def test_a_falling_constraint_is_met_at_its_own_end():
    """Where ``O - k I`` falls along the segment (``e < 0``) the constraint holds from
    ``nu = room / e`` on, and the best point of a segment whose risk rises is that end; the
    tolerance widens the range (it used to narrow it, by ``tol / |e|``: ``nu`` 0.5 plus
    7.5e-12 here, and a segment whose ``e`` is below the tolerance was lost)."""
    con = Constraint(a=0.0, b=0.0, k=0.5)
    # O - k I = 1.5 - 0.5 (1 + 4 nu) = 1 - 2 nu <= 0 from nu = 0.5 on; risk 2 nu / (1 + 4 nu)
    r = _segment(con, 1.0, 1.5, 0.0, 4.0, 0.0, 2.0, 10.0, 10.0)
    assert r.found[0] and r.nu[0] == 0.5
    assert r.objective[0] == pytest.approx(1 / 3, rel=1e-15)


@pytest.mark.parametrize("seed", range(48))
def test_constrained_optimum_equals_the_exact_brute_force(seed):
    """Weighted (mostly) TPR/FPR and precision/recall problems on small integer grids,
    solved in rational arithmetic with the search's own tolerance: the full sweep and the
    branch and bound reach the optimum (before, 3 of these 48 draws lost it to the
    round-off of a segment's end, and 6 of 300)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 30))
    s, ood, ls, w = _data(rng, n, int(rng.choice([2, 3, 4])), weighted=bool(rng.random() < 0.7))
    sample = Sample.of(s, ood, ls, w)
    pts, x = sample.pairs()
    con, _ = _problem(rng, sample, int(rng.integers(2)))
    ref = R.best_ratio_2d_exact(pts, x, con.a, con.b, con.k, RTOL * sample.n_id,
                                RTOL * (sample.n_ood + con.k * sample.n_id))
    full = exact_search(pts, x, con, None, sample.n_id, sample.n_ood)
    pruned = branch_search(pts, x, con, None, sample.n_id, sample.n_ood, sweep_below=0,
                           leaf_work=float(rng.choice([0.5, 30.0])))
    for got in (full, pruned):
        assert (got is None) == (ref is None)
        if ref is not None:
            assert got.best.objective == pytest.approx(ref[0], rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("seed", range(600))
def test_weighted_one_score_fits_reach_the_exact_optimum(seed):
    """``BoundedTPRFPR`` and ``BoundedPrecisionRecall`` on one score with ``sample_weight``
    (the grid path of the same segment ends): the fitted risk is the optimum of the exact
    search in rational arithmetic along that score (5 of these 600 draws kept a worse rule
    before)."""
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(10, 60))
    s, ood, ls, w = _data(rng, n, int(rng.choice([3, 5, 8])), weighted=True)
    s = s[:, 0]
    sample = Sample.of(s, ood, ls, w)
    if seed % 2:
        model = BoundedTPRFPR(tpr=float(rng.choice([0.3, 0.5, 0.8])),
                              fpr=float(rng.choice([0.1, 0.3, 0.6])))
        con = tpr_fpr_constraint(sample, model.tpr, model.fpr)
    else:
        model = BoundedPrecisionRecall(precision=float(rng.choice([0.5, 0.7, 0.95])),
                                       recall=float(rng.choice([0.3, 0.6, 1.0])))
        con = precision_recall_constraint(sample, model.precision, model.recall,
                                          ood_fraction(sample))
    pts, x = sample.pairs()  # one column: the score along the direction (1, 0)
    pts = np.column_stack((pts[:, 0], np.zeros(len(pts))))
    ref = R.best_ratio_2d_exact(pts, x, con.a, con.b, con.k, RTOL * sample.n_id,
                                RTOL * (sample.n_ood + con.k * sample.n_id),
                                directions=[(1, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an infeasible target warns
        fit = model.fit(s, ood, ls, sample_weight=w)
    assert fit.feasible_ == (ref is not None)
    if ref is not None:
        assert fit.risk_ == pytest.approx(ref[0], rel=1e-10, abs=1e-12)


def test_masses_equal_up_to_round_off_tie():
    """Two rules of one objective whose ID masses are the same sum added in another order
    (2 ulps apart): the smaller OOD mass wins, whichever is found first."""
    i = 306.6253034257709
    a = Best(at=0, nu=1.0, I=i, O=196.17467918754255, L=159.37, objective=0.5197589656746798)
    b = Best(at=1, nu=0.0, I=np.nextafter(np.nextafter(i, 400.0), 400.0), O=196.7003152830457,
             L=159.37, objective=0.5197589656746796)
    assert better(a, False, b, False) and not better(b, False, a, False)
    # masses that differ beyond round-off still decide: the larger ID mass first
    c = b._replace(I=i * (1 + 1e-9))
    assert better(c, False, a, False) and not better(a, False, c, False)
    # a full tie keeps the first found, but an open state beats a critical one
    assert not better(a, False, a._replace(at=5), False)
    assert better(a, False, a, True) and not better(a, True, a, False)


@pytest.mark.parametrize("seed", [7, 309007, 1206007, 1289007, 2223007])
def test_ties_of_masses_summed_in_another_order_are_broken_alike(seed):
    """Draws where the optimal rules' ID masses are one sum in exact arithmetic but the
    full sweep's and a leaf's totals differ in the last bits: the two searches used to keep
    different rules (each the larger of its own round-off); now both keep the one with the
    smaller OOD mass."""
    rng, sample = clustered_draw(seed)  # all five weighted (seed % 4 == 3)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=float(rng.choice([0.5, 3.0, 30.0])),
                        start=int(rng.choice([1, 2, 5, 32])))
    _same(got, ref)


@pytest.mark.parametrize("seed", range(12))
def test_a_start_interval_as_wide_as_the_half_circle(seed):
    """``start=1`` bounds ``[0, pi]`` at once, where the band bounds multiply the normal
    coordinate by ``tan`` up to 1.6e16: its round-off must widen the bands. Before, pairs of
    one first score were taken as above the anchor on the whole interval, so its state at
    angle 0 (where they tie with it) lost them and offered a rule that does not exist."""
    rng = np.random.default_rng(900 + seed)
    s, ood, ls, w = _data(rng, int(rng.integers(100, 250)), 5, weighted=True)
    sample = Sample.of(s, ood, ls, w)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    ref = exact_search(pts, x, con, slopes, sample.n_id, sample.n_ood)
    got = branch_search(pts, x, con, slopes, sample.n_id, sample.n_ood, sweep_below=0,
                        leaf_work=1e4, start=1)
    _same(got, ref)


@pytest.mark.parametrize("seed", [100209, 100331, 100345, 100449, 100678, 100710])
def test_a_zero_risk_rule_is_not_lost_to_round_off(seed):
    """Rules that accept no loss, whose loss total comes out as -3e-16 (running sums
    subtracted): the incumbent went negative, and with it the finalists' tie
    (``opt * (1 + TIE)`` below ``opt``), so the branch and bound reported no feasible rule
    where the full sweep and the exact brute force find risk 0 (the last two draws with the
    search's own start and leaves too)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    levels = int(rng.choice([0, 2, 3, 4, 6]))
    s, ood, ls, w = _data(rng, n, levels, weighted=bool(rng.random() < 0.6))
    if levels == 0 and rng.random() < 0.5:
        s = np.round(s, 1)
    sample = Sample.of(s, ood, ls, w)
    pts, x = sample.pairs()
    con, _ = _problem(rng, sample, int(rng.integers(2)))
    ref = exact_search(pts, x, con, None, sample.n_id, sample.n_ood)
    assert ref is not None and ref.best.objective == 0.0 and ref.best.O >= 0.0
    for start, leaf in ((1, 30.0), (2, 30.0), (32, 30.0), (32, 0.5)):  # the last: defaults
        got = branch_search(pts, x, con, None, sample.n_id, sample.n_ood, sweep_below=0,
                            leaf_work=leaf, start=start)
        _same(got, ref)
