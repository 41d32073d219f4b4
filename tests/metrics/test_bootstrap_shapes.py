"""bootstrap_interval refuses a statistic whose shape varies between resamples."""

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
