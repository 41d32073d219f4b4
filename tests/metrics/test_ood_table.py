"""abstain.metrics.ood_table and abstain.metrics.bootstrap: evaluate_ood equals the metric
functions one by one, its bootstrap equals a direct loop over the same resamples, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from abstain.metrics import (
    OOD_METRICS,
    aupr_in,
    aupr_out,
    auroc,
    bootstrap_indices,
    bootstrap_interval,
    evaluate_ood,
    fpr_at_tpr,
    oscr,
    selective_risk_at_tpr_fpr,
)


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.3
    losses = np.where(ood, np.nan, rng.integers(0, 2, n).astype(float))
    a = rng.integers(0, 6, n) + ood          # many ties
    b = np.round(rng.normal(size=n) + 0.5 * ood, 1)
    return losses, ood, {"a": a, "b": b, "a+b": np.column_stack([a, b])}


def _direct(losses, ood, s, tpr=0.95, fpr=0.05):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        risk = selective_risk_at_tpr_fpr(losses, ood, s, tpr, fpr)
    if s.ndim == 2:
        return [auroc(ood, s), np.nan, np.nan, np.nan, oscr(losses, ood, s), risk]
    return [auroc(ood, s), aupr_in(ood, s), aupr_out(ood, s), fpr_at_tpr(ood, s, tpr),
            oscr(losses, ood, s), risk]


def test_values_equal_the_metric_functions():
    losses, ood, scores = _data()
    table = evaluate_ood(losses, ood, scores, tpr=0.8, fpr=0.3)
    assert table.methods == ["a", "b", "a+b"] and table.metrics == list(OOD_METRICS)
    for i, s in enumerate(scores.values()):
        np.testing.assert_array_equal(table.values[i], _direct(losses, ood, s, 0.8, 0.3))
    assert table.applicable[2].tolist() == [True, False, False, False, True, True]
    assert np.isnan(table.low).all() and table.n_bootstrap == 0
    assert set(table.row("a+b")) == {"auroc", "oscr", "risk_at_tpr_fpr"}


def test_bootstrap_equals_a_loop_over_the_same_resamples():
    losses, ood, scores = _data(60, seed=1)
    scores = {k: scores[k] for k in ("a", "b")}
    table = evaluate_ood(losses, ood, scores, n_bootstrap=30, random_state=7, confidence=0.9)
    idx = bootstrap_indices(ood, 30, random_state=7)
    reps = np.array([[_direct(losses[i], ood[i], s[i]) for s in scores.values()] for i in idx])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells (infeasible risk)
        low, high = np.nanquantile(reps, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(table.low, low, equal_nan=True)
    np.testing.assert_allclose(table.high, high, equal_nan=True)
    again = evaluate_ood(losses, ood, scores, n_bootstrap=30, random_state=7, confidence=0.9)
    np.testing.assert_array_equal(table.low, again.low)
    assert table.confidence == 0.9 and table.n_bootstrap == 30


def test_bootstrap_indices_keep_each_stratum():
    strata = np.array([1, 0, 1, 1, 0, 2])
    idx = bootstrap_indices(strata, 50, random_state=0)
    assert idx.shape == (50, 6)
    for row in idx:
        assert sorted(strata[row].tolist()) == sorted(strata.tolist())
    with pytest.raises(ValueError, match="n_bootstrap must be an integer >= 1"):
        bootstrap_indices(strata, 0)
    with pytest.raises(ValueError, match="strata must be a non-empty 1-D array"):
        bootstrap_indices([], 3)


def test_bootstrap_interval_of_a_value_nan_everywhere_is_nan():
    ci = bootstrap_interval(lambda i: [np.nan, float(i.sum())], np.zeros(4), n_bootstrap=5,
                            random_state=0)
    assert np.isnan(ci.low[0]) and np.isnan(ci.high[0]) and ci.low[1] <= ci.high[1]
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        bootstrap_interval(lambda i: 0.0, np.zeros(4), confidence=1.0)


def test_losses_above_one_and_no_losses():
    losses, ood, scores = _data()
    big = np.where(ood, np.nan, 2.0 * np.nan_to_num(losses))
    table = evaluate_ood(big, ood, {"a": scores["a"]})
    j = table.metrics.index("oscr")
    assert not table.applicable[0, j] and np.isnan(table.values[0, j])
    none = evaluate_ood(None, ood, {"a": scores["a"]})
    assert none.values[0, 0] == auroc(ood, scores["a"])


def test_to_frame():
    pd = pytest.importorskip("pandas")
    losses, ood, scores = _data()
    scores = {k: scores[k] for k in ("a", "b")}
    frame = evaluate_ood(losses, ood, scores, n_bootstrap=3, random_state=0).to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.index) == ["a", "b"]
    assert "auroc_low" in frame and frame.loc["a", "auroc"] == auroc(ood, scores["a"])


def test_bad_input():
    losses, ood, scores = _data()
    with pytest.raises(ValueError, match="scores must be a non-empty dict"):
        evaluate_ood(losses, ood, {})
    with pytest.raises(ValueError, match="scores must be a non-empty dict"):
        evaluate_ood(losses, ood, scores["a"])
    with pytest.raises(ValueError, match=r"scores\['x'\] must have one or two columns and the "
                                         r"shape of is_ood \(120,\); got \(5,\)"):
        evaluate_ood(losses, ood, {"x": scores["a"][:5]})
    with pytest.raises(ValueError, match=r"scores\['x'\] must be finite"):
        evaluate_ood(losses, ood, {"x": np.r_[np.inf, scores["a"][1:]]})
    with pytest.raises(ValueError, match=r"losses must have the shape of is_ood \(120,\)"):
        evaluate_ood(losses[:3], ood, {"a": scores["a"]})
    with pytest.raises(ValueError, match="n_bootstrap must be an integer >= 0"):
        evaluate_ood(losses, ood, {"a": scores["a"]}, n_bootstrap=-1)
    with pytest.raises(ValueError, match="both"):
        evaluate_ood(losses, np.zeros(120, bool), {"a": scores["a"]})
    with pytest.raises(ValueError, match="method must be one of"):
        evaluate_ood(losses, ood, {"a": scores["a"]}).row("z")
