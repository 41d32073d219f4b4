"""Percentile bootstrap intervals of any metric, stratified and paired across metrics.

Re-exported by :mod:`abstain.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.validation import check_int, check_open_unit, check_random_state

__all__ = ["BootstrapInterval", "bootstrap_indices", "bootstrap_interval"]


class BootstrapInterval(NamedTuple):
    """A percentile bootstrap interval of each value of a statistic.

    Attributes
    ----------
    low, high : ndarray of the statistic's shape
        The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the replicates
        (``numpy.nanquantile``, linear interpolation; a replicate where the statistic is NaN
        is left out, and a value NaN in every replicate gets NaN).
    replicates : ndarray of shape (n_bootstrap, *statistic's shape)
        The statistic on each resample, for other intervals or tests.
    confidence : float
    """

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    replicates: NDArray[np.float64]
    confidence: float


def bootstrap_indices(strata: ArrayLike, n_bootstrap: int,
                      random_state: Any = None) -> NDArray[np.intp]:
    """Row indices of ``n_bootstrap`` stratified resamples with replacement.

    Each resample draws, within every stratum (each distinct value of ``strata``), as many
    rows as the stratum holds, uniformly with replacement; so every resample keeps the
    number of rows of each stratum (e.g. of ID and OOD rows, so that a detection metric
    stays defined). Rows are listed stratum by stratum in the order of ``numpy.unique``.

    Parameters
    ----------
    strata : array-like of shape (n,)
        One label per row; a constant array gives the plain bootstrap.
    n_bootstrap : int >= 1
    random_state : None, int or numpy Generator
        Seeds ``numpy.random.default_rng``; the same seed gives the same resamples.

    Returns
    -------
    ndarray of shape (n_bootstrap, n), intp

    Examples
    --------
    >>> from abstain.metrics import bootstrap_indices
    >>> idx = bootstrap_indices([0, 0, 1], 2, random_state=0)
    >>> idx.shape, bool((idx[:, 2] == 2).all())
    ((2, 3), True)
    """
    labels = np.asarray(strata)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"strata must be a non-empty 1-D array; got shape {labels.shape}.")
    b = check_int("n_bootstrap", n_bootstrap, 1)
    check_random_state("random_state", random_state)
    rng = np.random.default_rng(random_state)
    _, inv = np.unique(labels, return_inverse=True)
    parts = []
    for g in range(int(inv.max()) + 1):
        rows = np.flatnonzero(inv.reshape(-1) == g)
        parts.append(rows[rng.integers(0, rows.size, size=(b, rows.size))])
    return np.concatenate(parts, axis=1)


def bootstrap_interval(statistic: Callable[[NDArray[np.intp]], ArrayLike], strata: ArrayLike,
                       *, n_bootstrap: int = 1000, confidence: float = 0.95,
                       random_state: Any = None) -> BootstrapInterval:
    """Percentile bootstrap interval of ``statistic(rows)``, one resample for all its values.

    ``statistic`` takes an integer array of row indices (a resample of
    :func:`bootstrap_indices`, stratified by ``strata``) and returns a float or an array of
    floats (e.g. every metric of every method, so that their intervals come from the same
    resamples and differences between methods are paired).

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import auroc, bootstrap_interval
    >>> rng = np.random.default_rng(0)
    >>> is_ood = np.r_[np.zeros(200, bool), np.ones(100, bool)]
    >>> s = rng.normal(size=300) + is_ood
    >>> ci = bootstrap_interval(lambda i: auroc(is_ood[i], s[i]), is_ood, n_bootstrap=200,
    ...                         random_state=0)
    >>> bool(ci.low < auroc(is_ood, s) < ci.high), ci.replicates.shape
    (True, (200,))
    """
    c = check_open_unit("confidence", confidence)
    idx = bootstrap_indices(strata, n_bootstrap, random_state)
    reps = np.array([np.asarray(statistic(i), dtype=np.float64) for i in idx])
    all_nan = np.all(np.isnan(reps), axis=0)
    # a value NaN in every replicate is filled for nanquantile (no warning), then NaN again
    q = np.nanquantile(np.where(all_nan, 0.0, reps), [(1 - c) / 2, (1 + c) / 2], axis=0)
    low = np.where(all_nan, np.nan, q[0])
    high = np.where(all_nan, np.nan, q[1])
    return BootstrapInterval(low, high, reps, c)
