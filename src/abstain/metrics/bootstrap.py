"""Bootstrap confidence intervals of any metric: resampled rows, percentile intervals.

A metric of a finite sample is itself random; its percentile bootstrap interval is the
spread of the metric over resamples of the rows drawn with replacement. Rows can be
resampled within strata (ID and OOD rows apart, for example) so that every resample
keeps the strata's sizes: an OOD metric is then defined on every resample and the OOD
fraction does not vary. The interval is the ``(1 - level) / 2`` and ``(1 + level) / 2``
quantiles of the resampled values (NumPy's default linear interpolation). A resample on
which the metric is NaN (an infeasible target, say) makes the interval NaN: an interval
that leaves such resamples out would describe a different quantity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.validation import as_real_array, check_random_state

__all__ = ["Interval", "bootstrap_indices", "percentile_interval", "bootstrap_interval"]


class Interval(NamedTuple):
    """A bootstrap percentile interval.

    Attributes
    ----------
    low, high : float
        The interval; NaN when some resample gave NaN.
    level : float
        Its confidence level.
    n_bootstrap : int
        The number of resamples.
    """

    low: float
    high: float
    level: float
    n_bootstrap: int


def _check_count(n_bootstrap: Any) -> int:
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) \
            or n_bootstrap < 2:
        raise ValueError(f"n_bootstrap must be an integer >= 2; got {n_bootstrap!r}.")
    return int(n_bootstrap)


def _check_level(level: Any) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level!r}.")
    return float(level)


def bootstrap_indices(n: int, n_bootstrap: int, *, strata: ArrayLike | None = None,
                      random_state: Any = None) -> Iterator[NDArray[np.intp]]:
    """Row indices of ``n_bootstrap`` resamples of ``n`` rows, drawn with replacement.

    Parameters
    ----------
    n : int
        The number of rows, ``>= 1``.
    n_bootstrap : int
        The number of resamples, ``>= 2``.
    strata : array-like of shape (n,), optional
        Row labels (``is_ood``, say): each stratum is resampled apart, to its own size,
        and its indices come in the order of the sorted labels.
    random_state : None, int or numpy Generator
        Seed of the draws.

    Yields
    ------
    ndarray of shape (n,)

    Examples
    --------
    >>> from abstain.metrics import bootstrap_indices
    >>> idx = list(bootstrap_indices(4, 3, strata=[0, 0, 1, 1], random_state=0))
    >>> [sorted(set(i[:2]) | {0, 1}) == [0, 1] and set(i[2:]) <= {2, 3} for i in idx]
    [True, True, True]
    """
    n_bootstrap = _check_count(n_bootstrap)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1; got {n!r}.")
    check_random_state("random_state", random_state)
    rng = np.random.default_rng(random_state)
    if strata is None:
        groups = [np.arange(n)]
    else:
        labels = np.asarray(strata)
        if labels.shape != (n,):
            raise ValueError(f"strata must have shape ({n},); got {labels.shape}.")
        groups = [np.flatnonzero(labels == v) for v in np.unique(labels)]
    for _ in range(n_bootstrap):
        yield np.concatenate([g[rng.integers(0, g.size, g.size)] for g in groups])


def percentile_interval(values: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of resampled metric values; NaN if any value is NaN.

    Examples
    --------
    >>> from abstain.metrics import percentile_interval
    >>> percentile_interval([0.1, 0.2, 0.3, 0.4, 0.5], level=0.5)
    (0.2, 0.4)
    """
    level = _check_level(level)
    v = as_real_array(values, "values")
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array; got shape {v.shape}.")
    if np.isnan(v).any():
        return (float("nan"), float("nan"))
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(v, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def bootstrap_interval(metric: Callable[..., float], *arrays: ArrayLike,
                       n_bootstrap: int = 1000, level: float = 0.95,
                       strata: ArrayLike | None = None, random_state: Any = None) -> Interval:
    """Percentile bootstrap interval of ``metric(*arrays)``, the rows resampled together.

    Parameters
    ----------
    metric : callable
        Any metric of :mod:`abstain.metrics` (or your own) taking arrays of one length
        first: ``aurc``, ``lambda l, s: selective_risk_at_coverage(l, s, 0.9)``, ...
    *arrays : array-like of shape (n, ...)
        The metric's arrays, in its order; the same rows of each are drawn.
    n_bootstrap : int, default 1000
    level : float in (0, 1), default 0.95
    strata : array-like of shape (n,), optional
        Resample within these labels (pass ``is_ood`` for the OOD metrics).
    random_state : None, int or numpy Generator

    Returns
    -------
    Interval

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import aurc, bootstrap_interval
    >>> rng = np.random.default_rng(0)
    >>> u = rng.random(500)
    >>> losses = (rng.random(500) < u).astype(float)
    >>> ci = bootstrap_interval(aurc, losses, u, n_bootstrap=200, random_state=0)
    >>> bool(ci.low < aurc(losses, u) < ci.high), ci.level
    (True, 0.95)
    """
    level = _check_level(level)
    if not arrays:
        raise ValueError("arrays must hold at least one array for the metric.")
    arrs = [np.asarray(a) for a in arrays]
    n = arrs[0].shape[0] if arrs[0].ndim else 0
    for i, a in enumerate(arrs):
        if a.ndim == 0 or a.shape[0] != n:
            raise ValueError(f"arrays must share their first dimension; array 0 has {n} rows, "
                             f"array {i} has shape {a.shape}.")
    if n == 0:
        raise ValueError("arrays must not be empty; got 0 rows.")
    values = [float(metric(*(a[idx] for a in arrs)))
              for idx in bootstrap_indices(n, n_bootstrap, strata=strata,
                                           random_state=random_state)]
    lo, hi = percentile_interval(values, level)
    return Interval(lo, hi, level, int(n_bootstrap))
