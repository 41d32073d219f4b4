"""abstain.metrics._ood_table and abstain.metrics._bootstrap: evaluate_ood equals the metric
functions one by one, its bootstrap equals a direct loop over the same resamples, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from abstain import InfeasibleTargetWarning
from abstain.metrics import (
    AUTO_EXACT_ROWS,
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
from abstain.tables import PairTable


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.3
    losses = np.where(ood, np.nan, rng.integers(0, 2, n).astype(float))
    a = rng.integers(0, 6, n) + ood          # many ties
    b = np.round(rng.normal(size=n) + 0.5 * ood, 1)
    return losses, ood, {"a": a, "b": b, "a+b": np.column_stack([a, b])}


def _direct(losses, ood, s, tpr=0.95, fpr=0.05, search="grid"):
    kw = {"search": search} if s.ndim == 2 else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        risk = selective_risk_at_tpr_fpr(losses, ood, s, tpr, fpr, **kw)
    if s.ndim == 2:
        return [auroc(ood, s, **kw), np.nan, np.nan, fpr_at_tpr(ood, s, tpr, **kw),
                oscr(losses, ood, s, **kw), risk]
    return [auroc(ood, s), aupr_in(ood, s), aupr_out(ood, s), fpr_at_tpr(ood, s, tpr),
            oscr(losses, ood, s), risk]


@pytest.mark.parametrize("search", ["auto", "exact", "grid"])
def test_values_equal_the_metric_functions(search):
    losses, ood, scores = _data()
    table = evaluate_ood(losses, ood, scores, tpr=0.8, fpr=0.3, search=search)
    assert table.methods == ["a", "b", "a+b"]
    assert table.metrics == ["auroc", "aupr_in", "aupr_out", "fpr_at_tpr", "oscr",
                             "risk_at_tpr_fpr"]
    how = "exact" if search == "auto" else search  # 120 rows: auto is exact
    for i, s in enumerate(scores.values()):
        np.testing.assert_array_equal(table.values[i], _direct(losses, ood, s, 0.8, 0.3, how))
    assert table.applicable[2].tolist() == [True, False, False, True, True, True]
    assert np.isnan(table.low).all() and table.n_bootstrap == 0
    assert set(table.row("a+b")) == {"auroc", "fpr_at_tpr", "oscr", "risk_at_tpr_fpr"}
    assert table.search == [None, None, how]


def test_a_pair_is_unit_free_by_default_and_exact_at_most_auto_exact_rows():
    losses, ood, scores = _data()
    rng = np.random.default_rng(5)
    pair = rng.normal(size=(ood.size, 2)) + 0.6 * ood[:, None]  # no three pairs on a line
    base = evaluate_ood(losses, ood, {"p": pair})
    assert base.search == ["exact"]
    for scale in ([100.0, 1.0], [1.0, 1e-3], [0.37, 2.5e4]):
        got = evaluate_ood(losses, ood, {"p": pair * scale + [5.0, -3.0]})
        np.testing.assert_allclose(got.values, base.values, atol=1e-12, equal_nan=True)
    assert evaluate_ood(losses, ood, {"p": pair * [1e4, 1.0]}, search="grid").values[0, 0] \
        != evaluate_ood(losses, ood, {"p": pair}, search="grid").values[0, 0]
    # the envelope is never below either column alone (AUROC, OSCR), nor its FPR above
    one = evaluate_ood(losses, ood, {"a": pair[:, 0], "b": pair[:, 1]})
    for j, better in ((0, 1), (3, -1), (4, 1)):
        assert np.all(better * (base.values[0, j] - one.values[:, j]) >= -1e-12)


@pytest.mark.cpu_exact
def test_the_scaled_grid_is_the_same_for_the_rows_in_any_order_and_their_table():
    # whole-number pairs tie on grid directions in exact arithmetic; the columns' deviations
    # summed in row order differed in their last bits between orders, and regrouped the ties
    n = AUTO_EXACT_ROWS + 1000
    rng = np.random.default_rng(1)
    ood = rng.random(n) < 0.3
    r = rng.integers(0, 8, n).astype(float)
    pair = np.stack([r, r[rng.permutation(n)]], axis=1)
    losses = np.where(ood, np.nan, 0.0)
    first = auroc(ood, pair)
    for p in (rng.permutation(n), rng.permutation(n), np.arange(n)[::-1]):
        assert auroc(ood[p], pair[p]) == first
        assert evaluate_ood(losses[p], ood[p], {"p": pair[p]}).values[0, 0] == first
    assert auroc(PairTable.from_arrays(pair, losses, is_ood=ood)) == first


def test_auto_above_auto_exact_rows_takes_the_grid_of_the_standardised_columns():
    n = AUTO_EXACT_ROWS + 50
    rng = np.random.default_rng(3)
    ood = rng.random(n) < 0.4
    losses = np.where(ood, np.nan, (rng.random(n) < 0.2) * 1.0)
    pair = rng.normal(size=(n, 2)) * [3.0, 0.02] + ood[:, None] * [1.0, 0.01]
    table = evaluate_ood(losses, ood, {"p": pair}, tpr=0.8, fpr=0.3, n_directions=60)
    assert table.search == ["scaled grid"]
    scaled = pair / pair.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        risk = selective_risk_at_tpr_fpr(losses, ood, scaled, 0.8, 0.3, n_directions=60)
    np.testing.assert_array_equal(table.values[0], [
        auroc(ood, scaled, n_directions=60), np.nan, np.nan,
        fpr_at_tpr(ood, scaled, 0.8, n_directions=60),
        oscr(losses, ood, scaled, n_directions=60), risk])
    again = evaluate_ood(losses, ood, {"p": pair * [0.01, 300.0]}, tpr=0.8, fpr=0.3,
                         n_directions=60)
    np.testing.assert_allclose(again.values, table.values, atol=1e-12, equal_nan=True)
    # a lower bound of the exact envelope (FPR at TPR: an upper bound)
    small = slice(0, 400)
    exact = auroc(ood[small], pair[small], search="exact")
    assert auroc(ood[small], scaled[small], n_directions=60) <= exact + 1 / 2000


def test_bootstrap_equals_a_loop_over_the_same_resamples():
    losses, ood, scores = _data(60, seed=1)
    scores = {k: scores[k] for k in ("a", "b")}
    table = evaluate_ood(losses, ood, scores, n_bootstrap=30, random_state=7, confidence=0.9)
    key = np.column_stack([losses, ood, *scores.values()])  # the order evaluate_ood draws in
    idx = bootstrap_indices(ood, 30, random_state=7, key=key)
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


def test_bootstrap_with_a_key_does_not_depend_on_the_row_order():
    """Draws go to the rows sorted by their values: any row order gives the same replicates
    and intervals, bit for bit (without a key they depend on the row order)."""
    losses, ood, scores = _data(80, seed=3)
    scores = {k: scores[k] for k in ("a", "b")}
    table = evaluate_ood(losses, ood, scores, n_bootstrap=40, random_state=5)
    moved = 0.0
    for seed in range(3):
        p = np.random.default_rng(seed).permutation(80)
        again = evaluate_ood(losses[p], ood[p], {k: s[p] for k, s in scores.items()},
                             n_bootstrap=40, random_state=5)
        np.testing.assert_array_equal(table.low, again.low)
        np.testing.assert_array_equal(table.high, again.high)

        def mean_a(rows, p=p):
            return float(np.mean(scores["a"][p][rows]))

        plain = bootstrap_interval(mean_a, ood[p], n_bootstrap=40, random_state=5)
        keyed = bootstrap_interval(mean_a, ood[p], n_bootstrap=40, random_state=5,
                                   key=scores["a"][p])
        reference = bootstrap_interval(lambda rows: float(np.mean(scores["a"][rows])), ood,
                                       n_bootstrap=40, random_state=5, key=scores["a"])
        np.testing.assert_array_equal(keyed.replicates, reference.replicates)
        moved = max(moved, abs(plain.high - reference.high))
    assert moved > 0  # the row order matters without a key


def test_bootstrap_draws_in_batches_the_resamples_of_bootstrap_indices(monkeypatch):
    from abstain.metrics import _bootstrap as bootstrap

    monkeypatch.setattr(bootstrap, "_BATCH_ROWS", 16)  # 2 resamples of 7 rows a batch
    strata, key = np.array([0, 1, 0, 0, 1, 1, 0]), np.arange(7.0)[::-1]
    idx = bootstrap_indices(strata, 9, random_state=2, key=key)
    seen = []
    bootstrap_interval(lambda rows: seen.append(rows.copy()) or 0.0, strata, n_bootstrap=9,
                       random_state=2, key=key)
    np.testing.assert_array_equal(np.array(seen), idx)
    for row in idx:
        assert sorted(strata[row].tolist()) == sorted(strata.tolist())


def test_huge_bootstrap_requests_are_refused_before_any_work():
    losses, ood, scores = _data(60, seed=1)
    message = (r"n_bootstrap must be at most 1000000 for 60 rows \(at most 1000000 resamples "
               r"and 2147483648 rows drawn in all, resamples times rows\); got 1000000000000")
    with pytest.raises(ValueError, match=message):
        evaluate_ood(losses, ood, {"a": scores["a"]}, n_bootstrap=10**12)
    with pytest.raises(ValueError, match=message):
        bootstrap_interval(lambda i: 0.0, ood, n_bootstrap=10**12)
    with pytest.raises(ValueError, match=r"n_bootstrap must be at most 2147 for 1000000 rows"):
        bootstrap_indices(np.zeros(10**6), 2148)
    with pytest.raises(ValueError, match=r"key must be a numeric array of shape \(3,\) or "
                                         r"\(3, k\), one row per row of strata; got shape \(2,\)"):
        bootstrap_indices([0, 0, 1], 2, key=[1.0, 2.0])


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
    pair = evaluate_ood(big, ood, {"a+b": scores["a+b"]}, tpr=0.8, search="exact")
    assert not pair.applicable[0, j] and np.isnan(pair.values[0, j])
    assert pair.row("a+b")["auroc"] == auroc(ood, scores["a+b"], search="exact")
    assert pair.row("a+b")["fpr_at_tpr"] == fpr_at_tpr(ood, scores["a+b"], 0.8, search="exact")
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
    with pytest.raises(ValueError, match="search must be one of"):
        evaluate_ood(losses, ood, scores, search="dense")
    with pytest.raises(ValueError, match="n_directions must be"):
        evaluate_ood(losses, ood, scores, search="grid", n_directions=0)
    with pytest.raises(ValueError, match="method must be one of"):
        evaluate_ood(losses, ood, {"a": scores["a"]}).row("z")


def test_oracle_marks_a_pairs_envelope_cells_only() -> None:
    rng = np.random.default_rng(0)
    n = 60
    ood = rng.random(n) < 0.4
    losses = np.where(ood, np.nan, (rng.random(n) < 0.3) * 1.0)
    s = rng.normal(size=(n, 2))
    ev = evaluate_ood(losses, ood, {"a": s[:, 0], "a+b": s})
    oracle = dict(zip(ev.metrics, ev.oracle[1].tolist(), strict=True))
    assert {k for k, v in oracle.items() if v} == {"auroc", "fpr_at_tpr", "oscr"}
    assert not ev.oracle[0].any()
    assert not (ev.oracle & ~ev.applicable).any()
