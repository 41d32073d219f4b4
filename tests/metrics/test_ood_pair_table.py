"""The two-score OOD metrics on a PairTable: the same values as on the rows it summarises
(grid and exact search, 0/1 and continuous losses, many tied pairs), and clear refusals of
what a table of pairs cannot give."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from abstain import InfeasibleTargetWarning, PairTable, ScoreTable
from abstain import metrics as M


def _rows(tied_pairs, seed: int, n: int = 300, continuous: bool = False):
    return tied_pairs(seed, n, 0.35, continuous, continuous_divisor=1.3)


def _metrics(search: str):
    """Every metric that takes two columns, as (name, on rows, on a table)."""
    kw = {"search": search}
    tpr = np.array([0.2, 0.5, 0.8, 0.95])
    return [
        ("auroc", lambda ls, o, s: M.auroc(o, s, **kw), lambda t: M.auroc(t, **kw)),
        ("oscr", lambda ls, o, s: M.oscr(ls, o, s, **kw), lambda t: M.oscr(t, **kw)),
        ("fpr_at_tpr", lambda ls, o, s: M.fpr_at_tpr(o, s, 0.9, **kw),
         lambda t: M.fpr_at_tpr(t, tpr=0.9, **kw)),
        ("tnr_at_tpr", lambda ls, o, s: M.tnr_at_tpr(o, s, 0.7, **kw),
         lambda t: M.tnr_at_tpr(t, tpr=0.7, **kw)),
        ("detection", lambda ls, o, s: M.detection_rate_at_false_alarm(o, s, 0.1, **kw),
         lambda t: M.detection_rate_at_false_alarm(t, false_alarm=0.1, **kw)),
        ("roc", lambda ls, o, s: M.ood_roc_curve(o, s, fpr=[0, 0.1, 0.5, 1], **kw).tpr,
         lambda t: M.ood_roc_curve(t, fpr=[0, 0.1, 0.5, 1], **kw).tpr),
        ("pr", lambda ls, o, s: M.ood_pr_curve(o, s, recall=[0.3, 0.9], **kw).precision,
         lambda t: M.ood_pr_curve(t, recall=[0.3, 0.9], **kw).precision),
        ("risk_tpr_fpr", lambda ls, o, s: M.selective_risk_at_tpr_fpr(ls, o, s, 0.6, 0.3, **kw),
         lambda t: M.selective_risk_at_tpr_fpr(t, tpr=0.6, fpr=0.3, **kw)),
        ("risk_pr", lambda ls, o, s: M.selective_risk_at_precision_recall(
            ls, o, s, precision=0.8, recall=0.5, **kw),
         lambda t: M.selective_risk_at_precision_recall(t, precision=0.8, recall=0.5, **kw)),
        ("risk_curve", lambda ls, o, s: M.risk_coverage_curve_at_fpr(
            ls, o, s, fpr=0.3, tpr=tpr, **kw).risk,
         lambda t: M.risk_coverage_curve_at_fpr(t, fpr=0.3, tpr=tpr, **kw).risk),
    ]


@pytest.mark.parametrize("search", ["grid", "exact"])
@pytest.mark.parametrize("continuous", [False, True])
def test_every_pair_metric_on_a_merged_table_equals_the_rows(search, continuous, tied_pairs):
    s, ood, loss = _rows(tied_pairs, 3, continuous=continuous)
    parts = [PairTable.from_arrays(s[i::3], loss[i::3], is_ood=ood[i::3]) for i in range(3)]
    table = PairTable.merge(*parts)
    assert table.n_pairs < s.shape[0] / 2  # many rows share a pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for name, on_rows, on_table in _metrics(search):
            want, got = on_rows(loss, ood, s), on_table(table)
            if continuous:  # the loss sums are added in another order
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=name)
            else:  # whole-number masses: bit for bit
                np.testing.assert_array_equal(got, want, err_msg=name)


def test_a_table_of_pairs_with_every_row_its_own_pair_equals_the_rows():
    rng = np.random.default_rng(1)
    ood = rng.random(60) < 0.5
    s = rng.integers(0, 3, (60, 2)) + 0.0
    loss = rng.integers(0, 2, 60) + 0.0
    table = PairTable.from_arrays(s, loss, is_ood=ood)
    assert M.auroc(table, search="exact") == M.auroc(ood, s, search="exact")
    assert M.oscr(table, n_directions=7) == M.oscr(loss, ood, s, n_directions=7)


def test_what_a_pair_table_cannot_give(tied_pairs):
    s, ood, loss = _rows(tied_pairs, 0, n=60)
    table = PairTable.from_arrays(s, loss, is_ood=ood)
    for metric in (M.aupr_in, M.aupr_out):
        with pytest.raises(ValueError, match="one column .*PairTable holds two"):
            metric(table)
    with pytest.raises(ValueError, match="one column .*PairTable holds two"):
        M.ccr_at_fpr(table, fpr=0.1)
    with pytest.raises(ValueError, match="scores must be omitted when a PairTable"):
        M.auroc(table, s)
    with pytest.raises(ValueError, match="is_ood must be omitted when a PairTable"):
        M.oscr(table, ood)
    with pytest.raises(ValueError, match="only OOD in the PairTable"):
        M.auroc(PairTable.from_arrays(s[ood], loss[ood], is_ood=ood[ood]))
    with pytest.raises(ValueError, match="must not be empty"):
        M.auroc(PairTable())
    big = PairTable.from_arrays(s, np.where(ood, np.nan, 2.0), is_ood=ood)
    with pytest.raises(ValueError, match="losses must be in \\[0, 1\\]"):
        M.oscr(big, search="exact")
    # evaluate_ood resamples rows for its intervals: it takes arrays, not a table
    with pytest.raises(ValueError, match="evaluate_ood takes the rows"):
        M.evaluate_ood(None, ood, {"pair": table})
    with pytest.raises(ValueError, match="evaluate_ood takes the rows"):
        M.evaluate_ood(None, ood, {"one": ScoreTable.from_arrays(s[:, 0], loss, is_ood=ood)})
