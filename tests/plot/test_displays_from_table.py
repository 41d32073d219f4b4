"""Displays drawn from a ScoreTable: the curve, area, references and rule point of the rows
it summarises; histograms of weighted entries equal to those of the rows."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import BoundedAbstention, ScoreTable
from abstain.models import BoundedTPRFPR
from abstain.plot import (
    GeneralizedRiskCoverageDisplay,
    OODPrecisionRecallDisplay,
    OODRocDisplay,
    RiskAtFPRDisplay,
    RiskCoverageDisplay,
    plot_score_histograms,
)

Figure = pytest.importorskip("matplotlib.figure").Figure


def _rows(seed: int, continuous: bool):
    rng = np.random.default_rng(seed)
    n = 400
    s = np.round(rng.random(n), 1)  # many ties
    ood = rng.random(n) < 0.3 + 0.4 * s
    loss = rng.random(n) * s if continuous else (rng.random(n) < s).astype(float)
    loss[ood] = 0.0
    return s, ood, loss


def _same(a, b, rel):
    np.testing.assert_allclose(b.x, a.x, rtol=rel)
    np.testing.assert_allclose(b.y, a.y, rtol=rel)
    assert (a.area is None and b.area is None) or b.area == pytest.approx(a.area, rel=rel)
    assert a.references.keys() == b.references.keys()
    for k in a.references:
        for u, v in zip(a.references[k], b.references[k], strict=True):
            np.testing.assert_allclose(v, u, rtol=rel)
    assert a.point is not None and b.point is not None
    # randomised acceptance at the threshold: sums of fractions, in another order
    np.testing.assert_allclose(b.point, a.point, rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("continuous", [False, True])
def test_from_table_draws_what_from_predictions_draws(seed, continuous):
    s, ood, loss = _rows(seed, continuous)
    rel = 1e-12 if continuous else 0.0
    ids = ScoreTable.from_arrays(s[~ood], loss[~ood])
    marked = ScoreTable.from_arrays(s, loss, is_ood=ood)
    sel = BoundedAbstention(0.6).fit(s[~ood], loss[~ood])
    for display in (RiskCoverageDisplay, GeneralizedRiskCoverageDisplay):
        _same(display.from_predictions(loss[~ood], s[~ood], rule=sel, ax=Figure().subplots()),
              display.from_table(ids, rule=sel, ax=Figure().subplots()), rel)
    rule = BoundedTPRFPR(tpr=0.5, fpr=0.4).fit(s, ood, losses=loss)
    for display in (OODRocDisplay, OODPrecisionRecallDisplay):
        _same(display.from_predictions(ood, s, rule=rule, ax=Figure().subplots()),
              display.from_table(marked, rule=rule, ax=Figure().subplots()), rel)
    a = RiskAtFPRDisplay.from_predictions(loss, ood, s, fpr=0.4, rule=rule,
                                          ax=Figure().subplots())
    b = RiskAtFPRDisplay.from_table(marked, fpr=0.4, rule=rule, ax=Figure().subplots())
    np.testing.assert_allclose(b.y, a.y, rtol=rel)
    _same(a, b, rel)


def test_from_table_refuses_the_wrong_table():
    s, ood, loss = _rows(0, False)
    marked = ScoreTable.from_arrays(s, loss, is_ood=ood)
    with pytest.raises(ValueError, match="ScoreTable of ID rows, built without is_ood"):
        RiskCoverageDisplay.from_table(marked)
    for display in (OODRocDisplay, OODPrecisionRecallDisplay, RiskAtFPRDisplay):
        with pytest.raises(ValueError, match="ScoreTable built with is_ood"):
            display.from_table(ScoreTable.from_arrays(s, loss))
        with pytest.raises(ValueError, match="must hold ID and OOD rows"):
            display.from_table(ScoreTable.from_arrays(s, loss, is_ood=np.zeros(s.size)))
    no_oracle = ScoreTable.from_arrays(s, loss, oracle=False)
    d = RiskCoverageDisplay.from_table(no_oracle, ax=Figure().subplots())
    assert list(d.references) == ["random"]
    with pytest.raises(ValueError, match="no 'oracle' curve"):
        d.plot(Figure().subplots(), references=["oracle"])


@pytest.mark.parametrize("small", [0, 30])
def test_weighted_histograms_equal_those_of_the_rows(small):
    s, ood, _ = _rows(1, False)
    rows = plot_score_histograms(s, ood, ax=Figure().subplots(), small=small)
    t = ScoreTable.from_arrays(s, np.zeros(s.size), is_ood=ood)
    assert t.ood_counts is not None
    drawn = plot_score_histograms(np.r_[t.values, t.values], np.repeat([False, True], t.n_groups),
                                  weights=np.r_[t.id_counts, t.ood_counts],
                                  ax=Figure().subplots(), small=small)
    heights = [list(p.get_data().values) for p in drawn.patches]
    assert len(heights) == len(rows.patches) > 0
    for got, want in zip(heights, (p.get_data().values for p in rows.patches), strict=True):
        assert got == pytest.approx(list(want), rel=1e-12)
    assert drawn.get_legend_handles_labels()[1] == rows.get_legend_handles_labels()[1]
    for bad in (np.ones(2 * t.n_groups), -np.ones(2 * t.n_groups, int), np.ones(3, int)):
        with pytest.raises(ValueError, match="weights must be non-negative whole counts"):
            plot_score_histograms(np.r_[t.values, t.values],
                                  np.repeat([False, True], t.n_groups), weights=bad)
