"""abstain.metrics.bootstrap: resamples and percentile intervals, against a plain loop."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import metrics as m

rng = np.random.default_rng(5)
N = 60
U = rng.random(N).round(1)
L = (rng.random(N) < U).astype(float)
OOD = rng.random(N) < 0.3


def test_indices_are_seeded_and_keep_each_stratum():
    a = list(m.bootstrap_indices(N, 20, strata=OOD, random_state=3))
    b = list(m.bootstrap_indices(N, 20, strata=OOD, random_state=3))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    for idx in a:
        assert idx.shape == (N,)
        assert OOD[idx].sum() == OOD.sum()  # the stratum sizes never change


def test_interval_is_the_quantiles_of_the_metric_over_the_same_resamples():
    ci = m.bootstrap_interval(m.auroc, OOD, U, n_bootstrap=50, strata=OOD, random_state=1,
                              level=0.9)
    values = [m.auroc(OOD[i], U[i])
              for i in m.bootstrap_indices(N, 50, strata=OOD, random_state=1)]
    assert (ci.low, ci.high) == tuple(np.quantile(values, [0.05, 0.95]))
    assert (ci.level, ci.n_bootstrap) == (0.9, 50)


def test_a_nan_resample_makes_the_interval_nan():
    assert all(np.isnan(m.percentile_interval([0.1, np.nan, 0.3])))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_bootstrap": 1}, "n_bootstrap must be an integer >= 2"),
    ({"n_bootstrap": 2.5}, "n_bootstrap must be an integer >= 2"),
    ({"level": 1.0}, r"level must be in \(0, 1\)"),
    ({"random_state": -1}, "random_state must be None"),
    ({"strata": [0, 1]}, r"strata must have shape \(60,\)"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        m.bootstrap_interval(m.aurc, L, U, **{"n_bootstrap": 5, **kwargs})


def test_arrays_must_share_their_rows():
    with pytest.raises(ValueError, match="arrays must share their first dimension"):
        m.bootstrap_interval(m.aurc, L, U[:-1], n_bootstrap=5)
    with pytest.raises(ValueError, match="arrays must not be empty"):
        m.bootstrap_interval(m.aurc, [], [], n_bootstrap=5)
