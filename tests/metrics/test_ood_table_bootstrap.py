"""evaluate_ood(n_bootstrap=) from resampled score tables against the loop over drawn rows."""

from __future__ import annotations

import numpy as np
import pytest

from abstain.metrics import bootstrap_interval, evaluate_ood
from abstain.metrics._ood_table import _applicable, _table


def _loop(losses, is_ood, cols, b, seed):  # type: ignore[no-untyped-def]
    """The intervals of the drawn rows: every metric recomputed from the resampled rows."""
    n = is_ood.size
    app = _applicable([s.ndim == 2 for s in cols.values()],
                      not np.any(np.nan_to_num(losses)[~is_ood] > 1.0))
    return bootstrap_interval(
        lambda i: _table([({"losses": losses[i], "is_ood": is_ood[i]}, s[i])
                          for s in cols.values()], app, 0.95, 0.05, "exact", 360)[0],
        is_ood, n_bootstrap=b, random_state=seed,
        key=np.column_stack([losses, is_ood, *(s.reshape(n, -1) for s in cols.values())]))


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize(("n", "b"), [(6, 1), (30, 25)])
def test_intervals_equal_the_row_loop(continuous: bool, n: int, b: int) -> None:
    rng = np.random.default_rng(n)
    is_ood = np.zeros(n, dtype=bool)
    is_ood[: n // 3] = True
    rng.shuffle(is_ood)
    losses = rng.random(n) if continuous else (rng.random(n) < 0.4).astype(np.float64)
    losses[is_ood] = np.nan  # as the file format writes them
    few = rng.integers(0, 3, n).astype(np.float64)
    cols = {"few": few, "signed": rng.choice([-0.0, 0.0, 2.0, 1e-300, -1e300], n),
            "tied": np.full(n, 1.5), "pair": np.column_stack([few, rng.integers(0, 2, n)])}
    got = evaluate_ood(losses, is_ood, cols, n_bootstrap=b, random_state=3, search="exact")
    want = _loop(losses, is_ood, cols, b, 3)
    np.testing.assert_allclose(got.low, want.low.reshape(got.low.shape), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(got.high, want.high.reshape(got.high.shape), rtol=1e-12,
                               atol=1e-15)


def test_losses_near_the_float_maximum_keep_the_rows() -> None:
    # 1,200 rows times the largest loss pass 2**1016: the rows, not tables, are resampled
    rng = np.random.default_rng(0)
    is_ood = rng.random(1200) < 0.3
    losses = np.zeros(1200)
    losses[np.flatnonzero(~is_ood)[:2]] = [6e302, 1.0]
    s = rng.integers(0, 5, 1200).astype(np.float64)
    got = evaluate_ood(losses, is_ood, {"s": s}, n_bootstrap=20, random_state=0)
    want = _loop(losses, is_ood, {"s": s}, 20, 0)
    np.testing.assert_allclose(got.low, want.low.reshape(got.low.shape), rtol=1e-12)
    np.testing.assert_allclose(got.high, want.high.reshape(got.high.shape), rtol=1e-12)


def test_intervals_depend_neither_on_the_row_order_nor_on_the_losses_of_ood_rows() -> None:
    # the resamplers were built on the rows as given (continuous losses summed in row order
    # differed in their last bits), and an OOD row's loss, which no metric reads, entered
    # the order the resamples draw from
    rng = np.random.default_rng(7)
    n = 70
    ood = rng.random(n) < 0.4
    losses = np.round(rng.random(n), 2)
    s, g = np.round(rng.normal(size=n) + ood, 1), np.round(rng.normal(size=n), 1)

    def intervals(perm, ood_losses):  # type: ignore[no-untyped-def]
        ls = np.where(ood, ood_losses, losses)[perm]
        got = evaluate_ood(ls, ood[perm], {"a": s[perm], "a+g": np.column_stack([s, g])[perm]},
                           n_bootstrap=100, random_state=11, tpr=0.8, fpr=0.4)
        return got.low.tobytes() + got.high.tobytes()

    given = intervals(np.arange(n), np.nan)
    for seed in (0, 8):
        assert intervals(np.random.default_rng(seed).permutation(n), np.nan) == given
    assert intervals(np.arange(n), (rng.random(n) < 0.3) * 1.0) == given


@pytest.mark.parametrize("confidence", [1.5, -1.0, float("nan"), 1.0])
def test_confidence_is_checked_without_a_bootstrap_too(confidence: float) -> None:
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        evaluate_ood(None, [0, 0, 1], {"a": [0.1, 0.2, 0.3]}, confidence=confidence)
