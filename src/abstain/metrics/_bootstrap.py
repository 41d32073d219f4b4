"""Percentile bootstrap intervals of any metric, stratified and paired across metrics.

Re-exported by :mod:`abstain.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.parallel import check_jobs, ordered_map, resolve_jobs, usable_cpus
from .._core.validation import Interval, RandomState, check_int, validate_params

__all__ = ["BootstrapInterval", "MAX_BOOTSTRAP", "MAX_BOOTSTRAP_ROWS", "bootstrap_indices",
           "bootstrap_interval", "check_bootstrap"]


class BootstrapInterval(NamedTuple):
    """A percentile bootstrap interval of each value of a statistic.

    Attributes
    ----------
    low, high : ndarray of the statistic's shape
        The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the replicates
        (``numpy.nanquantile``, linear interpolation; a replicate where the statistic is NaN
        is left out, and a value NaN in every replicate gets NaN; a quantile between a
        finite and an infinite replicate is that infinity).
    replicates : ndarray of shape (n_bootstrap, *statistic's shape)
        The statistic on each resample, for other intervals or tests.
    confidence : float
    """

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    replicates: NDArray[np.float64]
    confidence: float


#: Most resamples :func:`bootstrap_indices` and :func:`bootstrap_interval` take: their
#: replicates are kept, 8 bytes per value of the statistic and resample.
MAX_BOOTSTRAP = 10**6
#: Most rows they draw over all resamples (``n_bootstrap * n``): 2**31, e.g. 2,000 resamples
#: of a million rows; the statistic is computed on every row drawn.
MAX_BOOTSTRAP_ROWS = 2**31
# Rows drawn at once by bootstrap_interval: a batch's indices stay below 32 MiB (and one
# stratum's draws beside them while a batch of several strata is filled).
_BATCH_ROWS = 1 << 22


def check_bootstrap(n_bootstrap: Any, n_rows: int, name: str = "n_bootstrap",
                    low: int = 1) -> int:
    """``n_bootstrap`` as an int in ``[low, MAX_BOOTSTRAP]`` with ``n_bootstrap * n_rows`` at
    most ``MAX_BOOTSTRAP_ROWS``, or ``ValueError`` naming ``name``.

    The check that :func:`bootstrap_interval` and :func:`evaluate_ood` make before any work,
    for a caller that runs other work first (the command line's ``evaluate``).

    Parameters
    ----------
    n_bootstrap : int
        The number of resamples asked for.
    n_rows : int
        The rows of each resample.
    name : str, default "n_bootstrap"
        The argument's name in the message.
    low : int, default 1
        The least number of resamples allowed.

    Returns
    -------
    int

    Examples
    --------
    >>> from abstain.metrics import check_bootstrap
    >>> check_bootstrap(200, 1000)
    200
    >>> check_bootstrap(10**6, 10**4, "--bootstrap")
    Traceback (most recent call last):
    ...
    ValueError: --bootstrap must be at most 214748 for 10000 rows (at most 1000000 \
resamples and 2147483648 rows drawn in all, resamples times rows); got 1000000.
    """
    b = check_int(name, n_bootstrap, low)
    most = min(MAX_BOOTSTRAP, MAX_BOOTSTRAP_ROWS // max(n_rows, 1))
    if b > most:
        raise ValueError(
            f"{name} must be at most {most} for {n_rows} rows (at most {MAX_BOOTSTRAP} "
            f"resamples and {MAX_BOOTSTRAP_ROWS} rows drawn in all, resamples times rows); "
            f"got {b}.")
    return b


def _strata_rows(strata: ArrayLike, key: ArrayLike | None) -> list[NDArray[np.intp]]:
    """The rows of each stratum (strata in the order of ``numpy.unique``), each listed in
    the order that sorts ``key`` (stable), or in row order without a key."""
    labels = np.asarray(unmasked(strata, "strata"))
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"strata must be a non-empty 1-D array; got shape {labels.shape}.")
    n = labels.size
    if key is None:
        order = np.arange(n)
    else:
        k = np.asarray(key)
        if k.ndim not in (1, 2) or k.shape[0] != n or k.dtype.kind not in "biuf":
            raise ValueError(f"key must be a numeric array of shape ({n},) or ({n}, k), one "
                             f"row per row of strata; got shape {k.shape}, dtype {k.dtype}.")
        cols = k.reshape(n, -1).T
        order = np.lexsort(cols[::-1]) if cols.shape[0] else np.arange(n)  # first column first
    _, inv = np.unique(labels, return_inverse=True)
    inv = inv.reshape(-1)[order]
    return [order[inv == g] for g in range(int(inv.max()) + 1)]


def _batches(parts: list[NDArray[np.intp]], b: int,
             rng: np.random.Generator) -> Iterator[NDArray[np.intp]]:
    """The ``b`` resamples, in batches of at most ``_BATCH_ROWS`` drawn rows (at least one
    resample each); within a batch, each stratum's draws are one call of ``rng``."""
    n = sum(rows.size for rows in parts)
    step = max(1, _BATCH_ROWS // n)
    for start in range(0, b, step):
        size = min(step, b - start)
        out = np.empty((size, n), dtype=np.intp) if len(parts) > 1 else None
        off = 0
        for rows in parts:
            drawn = rng.integers(0, rows.size, size=(size, rows.size))
            rows.take(drawn, out=drawn, mode="wrap")  # in place: the draws are in range
            if out is None:  # one stratum: its draws are the batch
                out = drawn
            else:
                out[:, off : off + rows.size] = drawn
            off += rows.size
        yield out  # type: ignore[misc]
        del out, drawn  # not held while the next batch is drawn


@validate_params({"random_state": [RandomState()]})
def bootstrap_indices(strata: ArrayLike, n_bootstrap: int, random_state: Any = None, *,
                      key: ArrayLike | None = None) -> NDArray[np.intp]:
    """Row indices of ``n_bootstrap`` stratified resamples with replacement.

    Each resample draws, within every stratum (each distinct value of ``strata``), as many
    rows as the stratum holds, uniformly with replacement; so every resample keeps the
    number of rows of each stratum (e.g. of ID and OOD rows, so that a detection metric
    stays defined). Rows are listed stratum by stratum in the order of ``numpy.unique``.

    What the resamples depend on: the seed, the number of rows of each stratum, and the
    order of the rows within each stratum: without ``key`` the row order, so the same rows
    in another order give other resamples (and other intervals). With ``key`` (the values
    of each row), draws go to the rows sorted by ``key`` (stable sort, the first column
    first), so rows given in any order get the same resamples of the same values: a
    statistic of the rows' values then gets the same replicates, bit for bit, provided
    ``key`` holds every value it reads (rows with equal keys are then interchangeable).

    Parameters
    ----------
    strata : array-like of shape (n,)
        One label per row; a constant array gives the plain bootstrap.
    n_bootstrap : int in [1, MAX_BOOTSTRAP]
        With ``n_bootstrap * n`` at most :data:`MAX_BOOTSTRAP_ROWS`; larger requests raise
        ``ValueError`` (the matrix returned holds ``8 * n_bootstrap * n`` bytes).
    random_state : None, int or numpy Generator
        Seeds ``numpy.random.default_rng``; the same seed gives the same resamples.
    key : array-like of shape (n,) or (n, k), optional
        Numeric values of each row that fix the order of the rows the resamples draw from.

    Returns
    -------
    ndarray of shape (n_bootstrap, n), intp

    Examples
    --------
    >>> from abstain.metrics import bootstrap_indices
    >>> idx = bootstrap_indices([0, 0, 1], 2, random_state=0)
    >>> idx.shape, bool((idx[:, 2] == 2).all())
    ((2, 3), True)

    The same values in two row orders, with ``key``: the same resamples of the values.

    >>> import numpy as np
    >>> x, y = np.array([0.3, 0.1, 0.2]), np.array([0.1, 0.2, 0.3])
    >>> a = bootstrap_indices([0, 0, 0], 4, random_state=0, key=x)
    >>> b = bootstrap_indices([0, 0, 0], 4, random_state=0, key=y)
    >>> bool((x[a] == y[b]).all())
    True
    """
    parts = _strata_rows(strata, key)
    b = check_bootstrap(n_bootstrap, sum(rows.size for rows in parts))
    rng = np.random.default_rng(random_state)
    return np.concatenate(list(_batches(parts, b, rng)), axis=0)


@validate_params({"confidence": [Interval(float, 0, 1, closed="neither")],
                  "random_state": [RandomState()]})
def bootstrap_interval(statistic: Callable[[NDArray[np.intp]], ArrayLike], strata: ArrayLike,
                       *, n_bootstrap: int = 1000, confidence: float = 0.95,
                       random_state: Any = None, key: ArrayLike | None = None,
                       n_jobs: int | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       vectorized: bool = False) -> BootstrapInterval:
    """Percentile bootstrap interval of ``statistic(rows)``, one resample for all its values.

    ``statistic`` takes an integer array of row indices (a resample of
    :func:`bootstrap_indices`, stratified by ``strata``, with the same ``random_state`` and
    ``key``) and returns a float or an array of floats (e.g. every metric of every method,
    so that their intervals come from the same resamples and differences between methods
    are paired). The resamples are drawn in batches, so the memory held by their indices
    stays bounded (32 MiB a batch, up to twice that while one of several strata is drawn)
    whatever ``n_bootstrap``; ``n_bootstrap`` is limited as in
    :func:`bootstrap_indices`. With ``key`` holding every value of each row that
    ``statistic`` reads, the interval does not depend on the row order.

    ``n_jobs`` (None: 1; -1: every usable core) computes the resamples on that many forked
    worker processes, each inheriting ``statistic`` (no pickling; on Linux and the other
    systems that fork safely, else in this process). The replicates are the same, in the
    same order, for any ``n_jobs``, provided ``statistic`` depends only on its rows (a side
    effect in a worker stays there). ``progress(done, n_bootstrap)`` is called in this
    process after each resample (with ``vectorized``, after each block of them).

    ``vectorized=True`` (as in :func:`scipy.stats.bootstrap`): ``statistic`` takes a block
    of resamples, an integer array of shape (m, n) (one resample per row, the same
    resamples in the same order) and returns an array of shape (m, ...), the value of each
    resample; a statistic that computes many resamples in one pass (score tables weighted
    by a matrix of counts) then costs a few array operations per block instead of a call
    per resample.

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
    c = float(confidence)
    parts = _strata_rows(strata, key)
    b = check_bootstrap(n_bootstrap, sum(rows.size for rows in parts))
    jobs = check_jobs(n_jobs)
    rng = np.random.default_rng(random_state)
    got: list[NDArray[np.float64]] = []

    def one(rows: NDArray[np.intp]) -> NDArray[np.float64]:
        value = np.asarray(statistic(rows), dtype=np.float64)
        if vectorized and (value.ndim == 0 or value.shape[0] != rows.shape[0]):
            raise ValueError(f"a vectorized statistic must return one value per resample, "
                             f"shape ({rows.shape[0]}, ...); got shape {value.shape}.")
        return value

    for batch in _batches(parts, b, rng):
        start = len(got)
        if vectorized:  # blocks of resamples: several per worker (balance) and 8 at least
            workers = resolve_jobs(jobs, batch.shape[0])
            blocks = np.array_split(batch, min(batch.shape[0], max(8, 4 * workers)))
            ends = np.cumsum([block.shape[0] for block in blocks])
        else:
            blocks = list(batch)
            ends = np.arange(1, batch.shape[0] + 1)

        def tick(k: int, start: int = start, ends: NDArray[np.intp] = ends) -> None:
            assert progress is not None
            progress(start + int(ends[k - 1]), b)

        values = ordered_map(one, blocks, jobs,
                             chunksize=1 if vectorized else
                             max(1, batch.shape[0] // (8 * usable_cpus())),
                             done=None if progress is None else tick)
        new = [row for block in values for row in block] if vectorized else values
        shapes = {np.shape(v) for v in (*got[:1], *new)}  # the batch beside the first one
        if len(shapes) > 1:  # checked per batch: before the next one runs
            raise ValueError(f"statistic must return the same shape for every resample; got "
                             f"shapes {sorted(shapes)}.")
        got += new
        del batch, blocks  # not held while the next batch is drawn
    reps = np.array(got)
    low, high = _quantiles(reps, [(1 - c) / 2, (1 + c) / 2])
    return BootstrapInterval(low, high, reps, c)


def _quantiles(reps: NDArray[np.float64], qs: list[float]) -> NDArray[np.float64]:
    """``numpy.nanquantile(reps, qs, axis=0)`` (linear interpolation), where an infinite
    replicate is a value like any other: a quantile between two replicates of which one is
    infinite is that infinity (NumPy's interpolation gives NaN), a quantile within 1e-9 of a
    replicate's position is that replicate, and a value NaN in every replicate gets NaN
    without a warning."""
    all_nan = np.all(np.isnan(reps), axis=0)
    big = np.finfo(np.float64).max
    # infinities as the largest floats: interpolation between two finite replicates is
    # NumPy's to the last bit; every other case is read from the two replicates themselves
    finite = np.clip(np.where(all_nan, 0.0, reps), -big, big)
    with np.errstate(over="ignore", invalid="ignore"):
        q = np.nanquantile(finite, qs, axis=0)
    if not np.all(np.isfinite(q)):  # two replicates near -max and max: b - a overflowed
        with np.errstate(over="ignore", invalid="ignore"):
            half = np.nanquantile(finite * 0.5, qs, axis=0) * 2.0  # exact halving there
        q = np.where(np.isfinite(q), q, half)
    if np.isinf(reps).any():
        filled = np.where(all_nan, 0.0, reps)
        below = np.nanquantile(filled, qs, axis=0, method="lower")
        above = np.nanquantile(filled, qs, axis=0, method="higher")
        # -inf + inf: NaN; two huge finite ends may overflow, but only an infinite end's
        # cell is read from this sum
        with np.errstate(over="ignore", invalid="ignore"):
            ends = np.where(below == above, below, below + above)
        q = np.where(np.isinf(below) | np.isinf(above), ends, q)
    q = np.where(all_nan, np.nan, q)
    # a level whose position q (n - 1) lies within 1e-9 of a whole number k takes the k-th
    # smallest replicate itself: (1 - 0.9) / 2 is 0.04999999999999999, whose position among
    # 21 replicates, 0.9999999999999998, interpolated toward an infinite or huge neighbour
    flat = reps.reshape(reps.shape[0], -1)
    count = np.sum(~np.isnan(flat), axis=0)
    ordered = np.sort(flat, axis=0)  # NaN last
    out = q.reshape(len(qs), -1).copy()
    for i, level in enumerate(qs):
        pos = level * (count - 1.0)
        k = np.rint(pos)
        snap = np.flatnonzero((count > 0) & (np.abs(pos - k) <= 1e-9))
        out[i, snap] = ordered[k[snap].astype(np.intp), snap]
    return out.reshape(q.shape)
