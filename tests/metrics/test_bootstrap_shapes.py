"""bootstrap_interval: a statistic whose shape varies between resamples is refused; a level
that falls on a replicate takes that replicate."""

from __future__ import annotations

import numpy as np
import pytest

from abstain.metrics import bootstrap_interval


def test_a_statistic_of_varying_shape_gets_one_line():
    # NumPy's "inhomogeneous shape" message, after every resample had run
    x = np.arange(10.0)

    def stat(i):
        return x[np.unique(i)][:3] if len(np.unique(i)) < 7 else x[i][:2]

    with pytest.raises(ValueError, match=r"^statistic must return the same shape for every "
                                         r"resample; got shapes \[\(2,\), \(3,\)\]\.$"):
        bootstrap_interval(stat, np.zeros(10), n_bootstrap=20, random_state=0)


def test_a_level_on_a_replicate_takes_that_replicate_not_its_neighbour():
    # (1 - 0.9) / 2 = 0.04999999999999999: the position among 21 replicates, 0.9999999999999998,
    # interpolated toward -inf (low -inf) or -1e300 (low -2.2e284) where the level is the
    # second smallest replicate, 1.0
    from abstain.metrics._bootstrap import _quantiles

    for first in (-np.inf, -1e300):
        reps = np.array([first, *range(1, 21)], dtype=float)
        assert _quantiles(reps, [(1 - 0.9) / 2, (1 + 0.9) / 2]).tolist() == [1.0, 19.0]
    reps = np.array([0.0, 1.0, *[1e300] * 39])
    assert _quantiles(reps, [(1 - 0.95) / 2])[0] == 1.0
    cols = np.column_stack([reps, np.r_[np.nan, reps[1:]]])  # a NaN replicate: 40 values
    got = _quantiles(cols, [(1 - 0.95) / 2])
    assert got[0, 0] == 1.0  # the NaN column: 40 values, the level between two of them
    assert got[0, 1] == pytest.approx(np.nanquantile(cols[:, 1], 0.025), rel=1e-12)


@pytest.mark.parametrize(("share", "bound"), [(None, 40), (0.2, 70), (0.8, 70)])
def test_a_batch_of_resamples_is_not_held_while_the_next_is_drawn(share, bound):
    """The previous batch, the next one and its draws lived together: 96 MiB for indices
    whose batches stay below 32 MiB. Now a batch alone with one stratum (its draws are the
    batch), and with several a batch and one stratum's draws."""
    import tracemalloc

    rng = np.random.default_rng(0)
    strata = np.zeros(100_000) if share is None else rng.random(100_000) < share
    tracemalloc.start()
    try:
        bootstrap_interval(lambda i: i[:, :1].astype(float), strata, n_bootstrap=400,
                           random_state=0, vectorized=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < bound * 2**20
