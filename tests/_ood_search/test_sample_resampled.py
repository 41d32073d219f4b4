"""``Sample.resampled``: the sample of a bootstrap resample, with or without the grid's kept
orders, searches and measures like the sample of the drawn rows."""

from __future__ import annotations

import numpy as np
import pytest

from abstain._ood_search.sample import Sample, tpr_fpr_constraint


def _sample(n=120, seed=0):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.4
    s = np.column_stack([np.round(rng.normal(size=n) + ood, 1), np.round(rng.normal(size=n), 1)])
    w_loss = np.where(ood, 0.0, (rng.random(n) < 0.3) * 1.0)
    return s, (~ood) * 1.0, ood * 1.0, w_loss


@pytest.mark.parametrize("kept", [None, 20, 7])
def test_a_resample_searches_as_its_drawn_rows(kept) -> None:
    """Kept orders for the directions searched (20), for others (7: the drawn rows are
    sorted anew) or none: the best rule of every direction is the drawn rows' one."""
    s, w_id, w_ood, w_loss = _sample()
    base = Sample(s, w_id, w_ood, w_loss)
    if kept is not None:
        assert base.keep_orders(kept)
    rng = np.random.default_rng(3)
    for _ in range(4):
        counts = np.bincount(rng.integers(0, s.shape[0], s.shape[0]), minlength=s.shape[0])
        got = base.resampled(counts)
        i = np.repeat(np.arange(s.shape[0]), counts)
        want = Sample(s[i], w_id[i], w_ood[i], w_loss[i])
        con = tpr_fpr_constraint(want, 0.6, 0.4)
        a, b = got.run("grid", 20, con, None), want.run("grid", 20, con, None)
        assert (a is None) == (b is None)
        if a is not None:
            assert a[0].objective == b[0].objective and (a[0].I, a[0].O) == (b[0].I, b[0].O)
            assert np.array_equal(a[1], b[1]) and a[2] == b[2]
