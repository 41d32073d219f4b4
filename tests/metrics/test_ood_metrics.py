"""abstain.metrics._ood: AUROC, AUPR, FPR at TPR, OSCR, the selective risk at TPR and FPR
and their curves, on one score and on a pair, against the brute-force references in
tests/reference/ood_ref.py and against the OOD reject models."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from reference import ood_ref as R

from abstain import metrics as M
from abstain.datasets import synthetic_ood_1d
from abstain.models import BoundedTPRFPR

TOL = 1e-9


def test_risk_is_monotone_in_the_targets(rng, random_sample):
    s2, is_ood, losses = random_sample(rng, n_max=30, levels=5)
    risks = [M.selective_risk_at_tpr_fpr(losses, is_ood, s2, t, 1.0, search="exact")
             for t in (0.2, 0.4, 0.6, 0.8, 1.0)]
    assert np.all(np.diff(risks) >= -TOL)


@pytest.mark.parametrize("seed", range(40))
def test_metrics_match_double_loops(seed, random_sample):
    rng = np.random.default_rng(400 + seed)
    s2, is_ood, losses = random_sample(rng, n_max=12)
    s = s2[:, 0]
    assert math.isclose(M.auroc(is_ood, s), R.auroc_ref(is_ood, s), abs_tol=TOL)
    assert math.isclose(M.aupr_in(is_ood, s), R.average_precision_ref(~is_ood, s), abs_tol=TOL)
    assert math.isclose(M.aupr_out(is_ood, s), R.average_precision_ref(is_ood, -s), abs_tol=TOL)
    for t in (0.5, 0.95, 1.0):
        assert math.isclose(M.fpr_at_tpr(is_ood, s, t), R.rate_at_ref(s, is_ood, t), abs_tol=TOL)
        assert math.isclose(M.tnr_at_tpr(is_ood, s, t), 1 - R.rate_at_ref(s, is_ood, t),
                            abs_tol=TOL)
    b = is_ood.sum()
    for f in (0.0, 0.5, 1.0):
        # ROC: the largest TPR at FPR <= f is the BoundedTPRFPR feasibility frontier
        roc = M.ood_roc_curve(is_ood, s2, fpr=[f])
        ref = max((R.rule_stats(list(s2 @ w), is_ood, losses, t, nu)[0]
                   for w in R.directions(s2) for t in set(s2 @ w) for nu in (0.0, 1.0)
                   if R.rule_stats(list(s2 @ w), is_ood, losses, t, nu)[1] <= f * b), default=0)
        assert roc.tpr[0] >= ref / (~is_ood).sum() - TOL


def test_oscr_and_ccr_by_definition(rng, random_sample):
    s2, is_ood, _ = random_sample(rng, n_max=15)
    losses = rng.integers(0, 2, len(is_ood)).astype(float)
    s = s2[:, 1]
    n_i, n_o = (~is_ood).sum(), is_ood.sum()
    pts = [(0.0, 0.0)]
    for t in sorted(set(s)):
        acc = s <= t
        pts.append(((acc & is_ood).sum() / n_o, ((acc & ~is_ood) * (1 - losses)).sum() / n_i))
    area = sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False))
    assert math.isclose(M.oscr(losses, is_ood, s), area, abs_tol=TOL)
    assert math.isclose(M.ccr_at_fpr(losses, is_ood, s, 1.0), pts[-1][1], abs_tol=TOL)
    assert math.isclose(M.detection_rate_at_false_alarm(is_ood, s, 0.05),
                        M.tnr_at_tpr(is_ood, s, 0.95), abs_tol=TOL)


def test_risk_curve_at_fpr_matches_the_model(rng, random_sample, quiet_fit):
    s2, is_ood, losses = random_sample(rng, n_max=20, levels=4)
    tprs = np.array([0.2, 0.5, 0.8, 1.0])
    curve = M.risk_coverage_curve_at_fpr(losses, is_ood, s2[:, 0], 0.5, tpr=tprs)
    for t, r in zip(tprs, curve.risk, strict=False):
        m = quiet_fit(BoundedTPRFPR(tpr=float(t), fpr=0.5), s2[:, 0], is_ood, losses)
        assert (math.isnan(r) and not m.feasible_) or math.isclose(r, m.risk_, abs_tol=TOL)


def test_bad_metric_targets():
    with pytest.raises(ValueError, match="tpr must be in"):
        M.fpr_at_tpr([0, 1], [0.1, 0.2], 0.0)
    with pytest.raises(ValueError, match="false_alarm must be in"):
        M.detection_rate_at_false_alarm([0, 1], [0.1, 0.2], 1.0)
    with pytest.raises(ValueError, match="losses must be in"):
        M.oscr([2.0, 0.0], [0, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="one column"):
        M.aupr_in([0, 1], [[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(ValueError, match="ood_scale"):
        synthetic_ood_1d(ood_scale="sigma")


def _envelope_reference(losses, is_ood, s, gain_is_ccr, n_directions, n_points):
    """Max over the grid directions of each direction's curve, by loops over thresholds."""
    is_ood = np.asarray(is_ood, bool)
    losses = np.asarray(losses, float)
    n_id, n_ood = float((~is_ood).sum()), float(is_ood.sum())
    grid = np.linspace(0, 1, n_points)
    best = np.zeros(n_points)
    for k in range(n_directions):
        a = k * math.pi / n_directions
        p = s[:, 0] * math.cos(a) + s[:, 1] * math.sin(a)
        xs, ys = [0.0], [0.0]
        for t in sorted(set(p.tolist())):  # accept every row with p <= t
            acc = p <= t
            xs.append(float(np.sum(acc & is_ood)) / n_ood)
            gain = (1 - losses) if gain_is_ccr else np.ones_like(losses)
            ys.append(float(np.sum(gain * (acc & ~is_ood))) / n_id)
        xs, ys = np.array(xs), np.array(ys)
        for i, b in enumerate(grid):
            # the largest value at FPR <= b on the piecewise-linear curve
            val = 0.0
            for j in range(len(xs) - 1):
                if xs[j] <= b + 1e-12:
                    val = max(val, ys[j])
                    if xs[j + 1] > xs[j]:
                        f = min(max((b - xs[j]) / (xs[j + 1] - xs[j]), 0.0), 1.0)
                        val = max(val, ys[j] + f * (ys[j + 1] - ys[j]))
            if xs[-1] <= b + 1e-12:
                val = max(val, ys[-1])
            best[i] = max(best[i], val)
    return float(np.sum(np.diff(grid) * (best[1:] + best[:-1]) / 2))


@pytest.mark.parametrize("seed", range(4))
def test_double_score_auroc_and_oscr_against_loops(seed, random_sample):
    rng = np.random.default_rng(seed)
    s, is_ood, _ = random_sample(rng, n_max=12, levels=4)
    losses = rng.integers(0, 2, s.shape[0]).astype(float)
    for fn, ccr in ((lambda: M.auroc(is_ood, s, search="grid", n_directions=12, n_points=41),
                     False),
                    (lambda: M.oscr(losses, is_ood, s, search="grid", n_directions=12,
                                    n_points=41), True)):
        assert fn() == pytest.approx(_envelope_reference(losses, is_ood, s, ccr, 12, 41),
                                     abs=1e-12)


def test_double_score_area_is_at_least_each_column():
    rng = np.random.default_rng(7)
    n = 400
    is_ood = rng.random(n) < 0.4
    losses = (rng.random(n) < 0.2).astype(float)
    s = np.stack([rng.normal(size=n) + losses, rng.normal(size=n) + 1.5 * is_ood], axis=1)
    both_a, both_o = M.auroc(is_ood, s), M.oscr(losses, is_ood, s)
    for j in (0, 1):
        assert both_a >= M.auroc(is_ood, s[:, j]) - 1e-3
        assert both_o >= M.oscr(losses, is_ood, s[:, j]) - 1e-3
    with pytest.raises(ValueError, match="n_points"):
        M.auroc(is_ood, s, n_points=1)


@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("search", ["grid", "exact"])
def test_curve_bounds_outside_their_range_are_refused(pair, search):
    rng = np.random.default_rng(0)
    ood = np.r_[np.zeros(20), np.ones(10)]
    s = rng.normal(size=(30, 2)) if pair else rng.normal(size=30)
    for bad in ([2.0], [-1.0], [np.nan], [0.5, 1.5]):
        with pytest.raises(ValueError, match=r"^fpr must be in \[0, 1\]; got "):
            M.ood_roc_curve(ood, s, fpr=bad, search=search)
    for bad in ([0.0], [2.0], [np.nan], [-0.5]):  # precision at recall 0 is undefined
        with pytest.raises(ValueError, match=r"^recall must be in \(0, 1\]; got "):
            M.ood_pr_curve(ood, s, recall=bad, search=search)
    assert M.ood_roc_curve(ood, s, fpr=[0.0, 1.0], search=search).tpr[-1] == 1.0


def _least_risk_at_precision_recall(losses, is_ood, s, precision, recall, prior):
    """Least selective risk over the randomised threshold rules of one score with
    ``precision`` and ``recall`` met exactly, in rationals: per group (ascending score),
    the acceptances ``nu`` of the group that meet both constraints form an interval and the
    risk is monotone along it, so its ends are the candidates."""
    kap, rec, pi = (Fraction(str(v)) for v in (precision, recall, prior))  # as written
    n_i, n_o = sum(not o for o in is_ood), sum(bool(o) for o in is_ood)
    best = None
    for v in sorted(set(s)):
        below = [k for k in range(len(s)) if s[k] < v]
        at = [k for k in range(len(s)) if s[k] == v]
        ib, ia = (sum(not is_ood[k] for k in g) for g in (below, at))
        ob, oa = (sum(bool(is_ood[k]) for k in g) for g in (below, at))
        lb, la = (sum((Fraction(losses[k]) for k in g if not is_ood[k]), Fraction(0))
                  for g in (below, at))
        lo, hi = Fraction(0), Fraction(1)
        # c0 + nu * c1 >= 0 for each constraint (recall; precision as TP (1 - kap) >= kap FP)
        for c0, c1 in ((ib - rec * n_i, Fraction(ia)),
                       ((1 - pi) * (1 - kap) * Fraction(ib, n_i) - kap * pi * Fraction(ob, n_o),
                        (1 - pi) * (1 - kap) * Fraction(ia, n_i) - kap * pi * Fraction(oa, n_o))):
            if c1 > 0:
                lo = max(lo, -c0 / c1)
            elif c1 < 0:
                hi = min(hi, -c0 / c1)
            elif c0 < 0:
                hi = Fraction(-1)
        for nu in ((lo, hi) if lo <= hi else ()):
            if ib + nu * ia > 0:
                r = (lb + nu * la) / (ib + nu * ia)
                best = r if best is None else min(best, r)
    return best


def test_selective_risk_at_precision_recall_keeps_the_best_end_where_precision_is_at_its_target():
    """At prior 0.1, precision 0.9 is TPR >= FPR, met exactly along the group at score 3 for
    every acceptance; the least risk is at full acceptance (0.5625), not at the least
    acceptance that meets the recall (4/7, where round-off of the target dropped the end)."""
    is_ood = [True, True, False, False, False, False]
    s = [3.0, 1.0, 3.0, 2.0, 3.0, 1.0]
    losses = [np.nan, 0.0, 0.0, 0.25, 1.0, 1.0]
    got = M.selective_risk_at_precision_recall(losses, is_ood, s, precision=0.9, recall=0.875,
                                               ood_prior=0.1)
    assert got == 0.5625
    from abstain.models import BoundedPrecisionRecall
    rule = BoundedPrecisionRecall(0.9, 0.875, ood_prior=0.1).fit(s, is_ood, losses)
    assert (rule.risk_, rule.accept_prob_) == (0.5625, 1.0)
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(3, 8))
        is_ood = rng.random(n) < 0.4
        if is_ood.all() or not is_ood.any():
            continue
        s = rng.integers(0, 4, n).astype(float)
        losses = np.where(is_ood, np.nan, rng.choice([0.0, 0.25, 0.5, 1.0], n))
        prior = float(rng.choice([0.1, 0.2, 0.25, 0.5]))
        prec, rec = float(rng.choice([0.5, 0.8, 0.9])), float(rng.choice([0.25, 0.5, 0.875]))
        ref = _least_risk_at_precision_recall(losses, is_ood, list(s), prec, rec, prior)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = M.selective_risk_at_precision_recall(losses, is_ood, s, precision=prec,
                                                       recall=rec, ood_prior=prior)
        if ref is None:
            assert math.isnan(got)
        else:
            assert got == pytest.approx(float(ref), abs=1e-12)


@pytest.mark.parametrize("c", [1.0, 2.0**-1000, 2.0**-1040, 2.0**-1060])
def test_selective_risk_at_tpr_fpr_scales_with_subnormal_losses(c):
    """The risks compare relative to their size down to the subnormal range (below about
    1e-312 every risk compared equal and the largest ID mass won: 4/3 for 1/2)."""
    losses = np.array([0.5, 1.0, 3.0]) * c
    risk = M.selective_risk_at_tpr_fpr(losses, [0, 1, 0], [2.0, 3.0, 3.0], tpr=1 / 3, fpr=0.5)
    assert risk == 0.5 * c


def test_a_rate_bound_is_not_exceeded_by_its_slack():
    """0.58 * 50 rounds below 29: the tolerant end of the group above the bound (an
    acceptance of about 2e-12) is round-off of no flat constraint, so the exact end, clipped,
    is kept; the applied FPR stays at or below 0.58."""
    from abstain.models import BoundedTPRFPR

    s = np.r_[np.full(10, -1.0), np.zeros(29), np.ones(21), np.ones(10)]
    is_ood = np.r_[np.zeros(10), np.ones(29), np.ones(21), np.zeros(10)].astype(bool)
    losses = np.r_[np.ones(10), np.zeros(29), np.zeros(21), np.zeros(10)]
    rule = BoundedTPRFPR(tpr=0.5, fpr=0.58).fit(s, is_ood, losses)
    applied = sum(Fraction(float(v)) for v in rule.accept_proba(s)[is_ood]) / 50
    assert applied <= Fraction(58, 100) and rule.fpr_ <= 0.58
