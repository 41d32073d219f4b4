"""Bootstrap intervals computed on score tables weighted by each resample's draws equal the
intervals of the resampled rows (the same resamples, the same statistic)."""

from __future__ import annotations

import numpy as np
import pytest

from abstain.metrics import aurc, bootstrap_interval, evaluate_ood
from abstain.metrics._ood_table import _applicable, _table
from abstain.scores import bootstrap_win_fraction


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.3
    losses = np.where(ood, np.nan, (rng.random(n) < 0.3).astype(float))
    a = np.round(rng.normal(size=n) + ood, 1)  # many ties
    b = np.round(rng.normal(size=n) + 2 * ood, 1)
    return losses, ood, {"a": a, "b": b, "a+b": np.column_stack([a, b])}


def test_evaluate_ood_intervals_are_those_of_the_resampled_rows() -> None:
    """With a bootstrap, ``"auto"`` takes the scaled grid for the pair, the point value and
    every resample alike: the grid of the columns divided by the full rows' deviations. The
    single columns' resamples are computed together (:func:`metric_replicates`): the same
    values to a relative 1e-12."""
    losses, ood, cols = _data()
    got = evaluate_ood(losses, ood, cols, n_bootstrap=40, random_state=3)
    assert got.search == [None, None, "scaled grid"]
    n = ood.size
    pair = cols["a+b"]
    scaled = {**cols, "a+b": pair / pair.std(axis=0)}
    applicable = _applicable([s.ndim == 2 for s in cols.values()], True)
    point, _ = _table([({"losses": losses, "is_ood": ood}, s) for s in scaled.values()],
                      applicable, 0.95, 0.05, "grid", 360)
    assert np.array_equal(got.values, point, equal_nan=True)
    want = bootstrap_interval(
        lambda i: _table([({"losses": losses[i], "is_ood": ood[i]}, s[i])
                          for s in scaled.values()], applicable, 0.95, 0.05, "grid", 360)[0],
        ood, n_bootstrap=40, random_state=3,
        key=np.column_stack([losses, ood, *(s.reshape(n, -1) for s in cols.values())]))
    np.testing.assert_allclose(got.low, want.low, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got.high, want.high, rtol=1e-12, atol=0)


def test_exact_pairs_are_resampled_as_rows() -> None:
    """``search="exact"`` keeps the exact search on every resample's drawn rows."""
    losses, ood, cols = _data(n=120)
    cols = {"a+b": cols["a+b"]}
    got = evaluate_ood(losses, ood, cols, search="exact", n_bootstrap=6, random_state=1)
    assert got.search == ["exact"]
    applicable = _applicable([True], True)
    want = bootstrap_interval(
        lambda i: _table([({"losses": losses[i], "is_ood": ood[i]}, cols["a+b"][i])],
                         applicable, 0.95, 0.05, "exact", 360)[0],
        ood, n_bootstrap=6, random_state=1,
        key=np.column_stack([losses, ood, cols["a+b"]]))
    assert np.array_equal(got.low, want.low, equal_nan=True)


def test_win_fraction_is_that_of_the_resampled_rows() -> None:
    rng = np.random.default_rng(1)
    n = 400
    losses = (rng.random(n) < 0.3).astype(float)
    good = np.round(losses + rng.normal(size=n), 1)
    bad = np.round(rng.normal(size=n), 1)
    got = bootstrap_win_fraction(losses, good, bad, n_bootstrap=60, random_state=5)
    gen = np.random.default_rng(5)
    wins = 0
    for _ in range(60):
        r = gen.integers(0, n, n)
        wins += aurc(losses[r], good[r]) < aurc(losses[r], bad[r])
    assert got == wins / 60


def test_resamples_on_workers_are_the_same_replicates() -> None:
    """``n_jobs`` computes the same resamples elsewhere: the same replicates in the same
    order; ``progress`` counts them here."""
    losses, ood, cols = _data(seed=2)
    one = evaluate_ood(losses, ood, cols, n_bootstrap=30, random_state=1)
    two = evaluate_ood(losses, ood, cols, n_bootstrap=30, random_state=1, n_jobs=2)
    assert np.array_equal(one.low, two.low, equal_nan=True)
    assert np.array_equal(one.high, two.high, equal_nan=True)
    seen = []
    stat = lambda i: aurc(losses[i][~ood[i]], cols["a"][i][~ood[i]])  # noqa: E731
    a = bootstrap_interval(stat, ood, n_bootstrap=25, random_state=0)
    b = bootstrap_interval(stat, ood, n_bootstrap=25, random_state=0, n_jobs=-1,
                           progress=lambda k, t: seen.append((k, t)))
    assert np.array_equal(a.replicates, b.replicates)
    assert seen == [(k, 25) for k in range(1, 26)]
    with pytest.raises(ValueError, match="n_jobs must be None, -1"):
        evaluate_ood(losses, ood, cols, n_bootstrap=3, n_jobs=0)


def test_a_vectorized_statistic_gets_the_same_resamples_in_blocks() -> None:
    losses, ood, cols = _data(seed=4)
    one = lambda i: aurc(losses[i][~ood[i]], cols["a"][i][~ood[i]])  # noqa: E731
    a = bootstrap_interval(one, ood, n_bootstrap=30, random_state=2)
    for jobs in (None, 2):
        seen = []
        b = bootstrap_interval(lambda block: [one(i) for i in block], ood, n_bootstrap=30,
                               random_state=2, vectorized=True, n_jobs=jobs,
                               progress=lambda k, t, seen=seen: seen.append(k))
        assert np.array_equal(a.replicates, b.replicates)
        assert seen == sorted(seen) and seen[-1] == 30 and len(seen) >= 8
    with pytest.raises(ValueError, match=r"a vectorized statistic must return one value per "
                       r"resample, shape \(\d+, \.\.\.\); got shape \(\)"):
        bootstrap_interval(lambda block: 0.0, ood, n_bootstrap=10, vectorized=True)


def test_an_infinite_replicate_is_a_value_like_any_other() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0])

    def ratio(i):  # type: ignore[no-untyped-def]
        with np.errstate(divide="ignore"):
            return np.float64(1.0) / np.float64(x[i].min())  # inf where row 0 is drawn

    got = bootstrap_interval(ratio, np.zeros(4), n_bootstrap=200, random_state=0,
                             confidence=0.9)
    reps = np.sort(got.replicates)
    assert np.isinf(reps).mean() > 0.5 and np.isfinite(reps).any()
    # the 5 % quantile NumPy's way (finite replicates only), the 95 % one infinite
    assert got.low == np.quantile(np.where(np.isinf(reps), 1e300, reps), 0.05)
    assert got.high == np.inf
    both = bootstrap_interval(lambda i: np.array([np.inf, -np.inf, 1.0]), np.zeros(4),
                              n_bootstrap=5, random_state=0)
    assert both.low.tolist() == [np.inf, -np.inf, 1.0] == both.high.tolist()


def test_quantiles_between_finite_replicates_near_the_float_maximum_stay_finite() -> None:
    # -1.5e308 and 1.5e308: their difference overflowed in the interpolation, and the
    # interval came out (inf, -inf)
    import warnings

    from abstain.metrics._bootstrap import _quantiles

    reps = np.array([[-1.5e308], [1.5e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = _quantiles(reps, [0.25, 0.75])[:, 0]
    assert (low, high) == (-7.5e307, 7.5e307)
    # an infinite replicate beside two huge finite ones: NumPy's "overflow encountered in
    # add" from the sum of ends that no cell reads
    reps = np.array([[1e308], [1.7e308], [np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = _quantiles(reps, [0.25, 0.75])[:, 0]
    assert low == np.quantile([1e308, 1.7e308, np.finfo(np.float64).max], 0.25)
    assert high == np.inf
