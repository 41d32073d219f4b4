"""Score tables of data that does not fit in one process, built on Dask (extra ``dask``).

:func:`score_table` reduces scores and losses held in Dask collections (arrays, Series,
columns of a DataFrame) to one :class:`~abstain.ScoreTable` on the driver; every
``ties="mean"`` metric and every reject-model fit then runs on that table and returns
what it returns on the rows. Only per-score totals travel: the driver's memory grows
with the number of distinct scores, not with the number of rows. :func:`pair_table` does
the same for two scores (a :class:`~abstain.PairTable` of the distinct score pairs, for
the double-score fits), where the pairs are few.

Two plans:

- **tree**: one table per partition, merged ``fan_in`` at a time up a tree. Best when the
  scores are quantised (fp16 softmax, rounded scores): each table stays small.
- **range**: after the per-partition tables, the driver picks ``R - 1`` boundaries at
  quantiles of the scores, every partition table is cut into ``R`` ranges and each range is
  merged on its own, so no merge holds more than about ``G / R`` groups; the driver joins the
  ranges in order (they do not overlap: no sort). The plan of Spark MLlib's
  ``BinaryClassificationMetrics``, for raw fp32 or fp64 scores with millions of groups.

``plan="auto"`` takes the tree while the per-partition tables hold at most ``max_groups``
groups in total, and the range plan otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._core.optional import require
from ._core.validation import as_real_array, check_choice, check_int
from .tables._pair import PairTable
from .tables._score import ScoreTable

__all__ = ["score_table", "pair_table", "PLANS"]

#: The reduction plans of :func:`score_table`.
PLANS = ("auto", "tree", "range")

#: Score quantiles each partition reports for the range boundaries.
_SAMPLES_PER_PARTITION = 256


def _dask() -> Any:
    return require("dask", "dask", "abstain.distributed")


def _array_blocks(x: Any) -> tuple[list[Any], tuple[int, ...]]:
    """The row blocks of a Dask array as delayed objects, with their lengths. Not optimised
    one by one: the partitions of the other columns share their tasks (a block read or
    generated once serves every column of it)."""
    return (list(x.to_delayed(optimize_graph=False).ravel()),
            tuple(int(c) for c in x.chunks[0]))


def _dask_dataframe() -> Any:
    """``dask.dataframe``, or None where dask is installed without it (arrays only)."""
    try:
        import dask.dataframe as dd
    except ImportError:
        return None
    return dd


def _pieces(x: Any, name: str) -> tuple[list[Any], tuple[int, ...] | None]:
    """The partitions of ``x`` as delayed objects (or one NumPy block), with their lengths
    where known."""
    _dask()
    import dask.array as da

    if isinstance(x, da.Array):
        if x.ndim != 1:
            raise ValueError(f"{name} must be a one-dimensional Dask array; got {x.ndim} "
                             "dimensions.")
        return _array_blocks(x)
    dd = _dask_dataframe()
    if dd is not None and isinstance(x, dd.DataFrame):
        raise ValueError(f"{name} must be one column (df['name']), a Dask Series or array; "
                         f"got a Dask DataFrame with columns {list(x.columns)}.")
    if dd is not None and isinstance(x, dd.Series):
        return list(x.to_delayed()), None
    if x is None:
        raise ValueError(f"{name} must be a Dask array or Series; got None.")
    return [np.asarray(x)], None


def _known(arr: Any) -> Any:
    """A Dask array whose chunk sizes are unknown (rows kept by a boolean mask, the usual
    way to keep the ID rows) with its chunk sizes computed (one pass over it); anything
    else as it is."""
    import dask.array as da

    if isinstance(arr, da.Array) and any(math.isnan(c) for cs in arr.chunks for c in cs):
        return arr.compute_chunk_sizes()
    return arr


def _aligned(u: Any, other: Any, name: str, u_name: str) -> Any:
    """``other`` with the chunks of ``u`` (the rows of the argument ``u_name``) when both
    are Dask arrays."""
    import dask.array as da

    if isinstance(u, da.Array) and isinstance(other, da.Array):
        for arr, arr_name in ((u, u_name), (other, name)):
            if arr.ndim != 1:
                raise ValueError(f"{arr_name} must be a one-dimensional Dask array (one value "
                                 f"per row); got shape {arr.shape}.")
        if other.shape != u.shape:
            raise ValueError(f"{u_name} and {name} must have the same length; got {u_name} "
                             f"has {u.shape[0]}, {name} has {other.shape[0]}.")
        if other.chunks != u.chunks:
            return other.rechunk(u.chunks)
    return other


def _partition_rows(**parts: Any) -> None:
    """Refuse partitions of the arguments that hold different numbers of rows: collections
    split alike in number but not in rows (Dask Series of other divisions); the per-row
    check that follows would name one partition's rows as if they were the columns'."""
    rows = {name: int(np.shape(a)[0]) if np.ndim(a) else 1 for name, a in parts.items()
            if a is not None}
    if len(set(rows.values())) > 1:
        got = ", ".join(f"{name} {n}" for name, n in rows.items())
        raise ValueError(f"the arguments' partitions must hold the same rows; one holds {got} "
                         "rows (split them alike: repartition or rechunk them the same way).")


def _partition_table(u: Any, losses: Any, is_ood: Any, oracle: bool) -> ScoreTable:
    u, losses = np.asarray(u), np.asarray(losses)
    marks = None if is_ood is None else np.asarray(is_ood)
    _partition_rows(uncertainty=u, losses=losses, is_ood=marks)
    if u.size == 0:
        return ScoreTable() if oracle else _without_oracle(ScoreTable())
    return ScoreTable.from_arrays(u, losses, is_ood=marks, oracle=oracle)


def _without_oracle(table: ScoreTable) -> ScoreTable:
    table.loss_values = table.loss_counts = None
    return table


def _summary(table: ScoreTable) -> tuple[int, NDArray[np.float64]]:
    """Groups of a partition table and its scores at evenly spaced count quantiles."""
    if table.n == 0:
        return 0, np.zeros(0)
    cum = np.cumsum(table.counts)
    at = np.linspace(0, cum[-1] - 1, min(_SAMPLES_PER_PARTITION, table.n_groups))
    return table.n_groups, table.values[np.searchsorted(cum, at, side="right")]


def _slice(table: ScoreTable, low: float, high: float) -> ScoreTable:
    """The groups with ``low < value <= high`` (the range of one reducer)."""
    if table.n == 0:
        return table
    i, j = np.searchsorted(table.values, [low, high], side="right")
    out = ScoreTable()
    out.values, out.counts = table.values[i:j], table.counts[i:j]
    out.loss_sums = table.loss_sums[i:j]
    out.sq_loss_sums = None if table.sq_loss_sums is None else table.sq_loss_sums[i:j]
    out.ood_counts = None if table.ood_counts is None else table.ood_counts[i:j]
    out.max_loss, out.binary = table.max_loss, table.binary
    out.loss_values, out.loss_counts = table.loss_values, table.loss_counts
    if i > 0:  # the loss distribution travels with the first range only
        out.loss_values = None if table.loss_values is None else table.loss_values[:0]
        out.loss_counts = None if table.loss_counts is None else table.loss_counts[:0]
    return out


def _partition_mismatch(given: dict[str, tuple[Any, int]]) -> None:
    """Raise the message for arguments split into different partitions, naming only the
    arguments passed and which of them are NumPy arrays (one partition each)."""
    names = list(given)
    counts = [f"{n}" + (" (a NumPy array)" if isinstance(a, np.ndarray) else "")
              for a, n in given.values()]
    fix = ("give every argument as a Dask collection of the same chunks"
           if any(isinstance(a, np.ndarray) for a, _ in given.values())
           else "rechunk them alike")
    raise ValueError(f"{', '.join(names[:-1])} and {names[-1]} must have the same partitions; "
                     f"got {', '.join(counts[:-1])} and {counts[-1]} partitions ({fix}).")


def _join(ranges: list[ScoreTable]) -> ScoreTable:
    """Tables of disjoint, ascending score ranges as one table (a concatenation, no sort).

    The first range always holds the lowest score, and its parts carry the loss
    distribution of every partition (see :func:`_slice`).
    """
    full = [t for t in ranges if t.n_groups > 0]
    out = ScoreTable()
    cat = np.concatenate
    out.values = cat([t.values for t in full])
    out.counts = cat([t.counts for t in full])
    out.loss_sums = cat([t.loss_sums for t in full])
    squares = all(t.sq_loss_sums is not None for t in full)
    out.sq_loss_sums = cat([t.sq_loss_sums for t in full]) if squares else None  # type: ignore[misc]
    # the checks of ScoreTable.merge: squares while their sum is finite, a total loss
    # within float64 (the table's own check, as TableResampler calls it too)
    with np.errstate(over="ignore"):
        if out.sq_loss_sums is not None and not np.isfinite(out.sq_loss_sums.sum()):
            out.sq_loss_sums = None
    out._check_total()
    out.ood_counts = (None if full[0].ood_counts is None
                      else cat([t.ood_counts for t in full]))  # type: ignore[misc]
    out.max_loss = max(t.max_loss for t in ranges)
    out.binary = all(t.binary for t in ranges)
    out.loss_values, out.loss_counts = ranges[0].loss_values, ranges[0].loss_counts
    if not np.all(np.diff(out.values) > 0):  # pragma: no cover - the ranges are disjoint
        raise RuntimeError("score ranges overlap; please report this.")
    return out


def _tree(tables: list[Any], fan_in: int) -> Any:
    """Delayed merges of ``tables``, ``fan_in`` at a time, down to one."""
    delayed = _dask().delayed
    level = list(tables)
    while len(level) > 1:
        level = [delayed(ScoreTable.merge)(*level[i : i + fan_in])
                 for i in range(0, len(level), fan_in)]
    return level[0] if level else delayed(ScoreTable)()


def score_table(
    uncertainty: Any, losses: Any, *, is_ood: Any = None, max_groups: int = 1_000_000,
    plan: str = "auto", n_ranges: int | None = None, fan_in: int = 8, oracle: bool = False,
) -> ScoreTable:
    """The :class:`~abstain.ScoreTable` of scores and losses held in Dask collections.

    Runs on the current Dask scheduler: a ``distributed.Client`` when one is active (an
    existing cluster, or a ``LocalCluster``), else Dask's default local scheduler.

    Parameters
    ----------
    uncertainty : dask.array.Array or dask.dataframe.Series of shape (n,)
        Scores, higher rejected first (a DataFrame column ``df["u"]`` is a Series). A NumPy
        array is taken as one partition.
    losses : same kind and partitions as ``uncertainty``
        Non-negative losses (with ``is_ood``, NaN on OOD rows is accepted). Dask arrays with
        other chunks are rechunked to those of ``uncertainty``; chunk sizes Dask does not
        know yet (``u[keep]`` for a boolean Dask mask) are computed first, one pass.
    is_ood : same kind and partitions, optional
        0/1 or bool OOD marks, for the OOD metrics and OOD rules.
    max_groups : int >= 1, default 1_000_000
        ``plan="auto"`` takes the tree while the per-partition tables hold at most this many
        groups in total; beyond it the range plan with ``ceil(total / max_groups)`` ranges
        (at least 2), so that one range merge holds about ``max_groups`` groups.
    plan : {"auto", "tree", "range"}, default "auto"
    n_ranges : int >= 2, optional
        Ranges of the range plan (default from ``max_groups``).
    fan_in : int >= 2, default 8
        Tables merged at once in a tree.
    oracle : bool, default False
        Keep the distinct losses for :func:`~abstain.metrics.e_aurc` (grows with the number
        of distinct losses; small for 0/1 or quantised losses).

    Returns
    -------
    ScoreTable
        The same table, group for group, as ``ScoreTable.from_arrays`` on all rows: counts
        exactly, loss sums exactly whenever the partial sums are exact in float64 (0/1,
        whole-number, binary-grid losses), to float64 rounding otherwise.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from abstain.distributed import score_table
    >>> from abstain.metrics import aurc
    >>> u = np.round(np.linspace(0, 1, 1000) ** 2, 2)
    >>> losses = (np.arange(1000) % 7 == 0).astype(float)
    >>> table = score_table(da.from_array(u, chunks=100), da.from_array(losses, chunks=250))
    >>> table.n, aurc(table) == aurc(losses, u)
    (1000, True)
    """
    dask = _dask()
    plan = check_choice("plan", plan, PLANS)
    max_groups = check_int("max_groups", max_groups, 1)
    fan_in = check_int("fan_in", fan_in, 2)
    if n_ranges is not None:
        n_ranges = check_int("n_ranges", n_ranges, 2)
    uncertainty, losses, is_ood = (_known(a) for a in (uncertainty, losses, is_ood))
    losses = _aligned(uncertainty, losses, "losses", "uncertainty")
    is_ood = None if is_ood is None else _aligned(uncertainty, is_ood, "is_ood", "uncertainty")
    u_parts, u_sizes = _pieces(uncertainty, "uncertainty")
    l_parts, l_sizes = _pieces(losses, "losses")
    o_parts = [None] * len(u_parts) if is_ood is None else _pieces(is_ood, "is_ood")[0]
    if not (len(u_parts) == len(l_parts) == len(o_parts)):
        _partition_mismatch({"uncertainty": (uncertainty, len(u_parts)),
                             "losses": (losses, len(l_parts)),
                             **({} if is_ood is None else {"is_ood": (is_ood, len(o_parts))})})
    delayed = dask.delayed
    tables = [delayed(_partition_table)(u, ls, o, oracle)
              for u, ls, o in zip(u_parts, l_parts, o_parts, strict=True)]
    if plan == "tree":
        (table,) = dask.compute(_tree(tables, fan_in))
        return _checked(table)
    tables = list(dask.persist(*tables))
    summaries = dask.compute(*[delayed(_summary)(t) for t in tables])
    total = sum(g for g, _ in summaries)
    if total == 0:
        raise ValueError("uncertainty must not be empty; got 0 rows in every partition.")
    if plan == "auto" and total <= max_groups:
        (table,) = dask.compute(_tree(tables, fan_in))
        return _checked(table)
    r = n_ranges if n_ranges is not None else max(2, math.ceil(total / max_groups))
    sample = np.sort(np.concatenate([s for _, s in summaries]))
    cuts = np.unique(sample[np.linspace(0, sample.size - 1, r + 1).astype(np.intp)[1:-1]])
    edges = np.concatenate(([-np.inf], cuts, [np.inf]))
    ranges = [_tree([delayed(_slice)(t, lo, hi) for t in tables], fan_in)
              for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    return _checked(_join(list(dask.compute(*ranges))))


def _checked(table: ScoreTable) -> ScoreTable:
    if table.n == 0:
        raise ValueError("uncertainty must not be empty; got 0 rows in every partition.")
    return table


def _pair_pieces(scores: Any) -> tuple[list[Any], tuple[int, ...] | None]:
    """The row blocks of two score columns (a Dask array of shape (n, 2) or a Dask DataFrame
    of two columns) as delayed objects, with their lengths where known."""
    _dask()
    import dask.array as da

    if isinstance(scores, da.Array):
        if scores.ndim != 2 or scores.shape[1] != 2:
            raise ValueError("scores must be a Dask array of shape (n, 2), one column per "
                             f"score; got shape {scores.shape}.")
        if len(scores.chunks[1]) != 1:
            scores = scores.rechunk({1: 2})
        return _array_blocks(scores)
    dd = _dask_dataframe()
    if dd is not None and isinstance(scores, dd.DataFrame):
        if len(scores.columns) != 2:
            raise ValueError("scores must be a Dask DataFrame of two columns (s_r, s_g); got "
                             f"columns {list(scores.columns)}.")
        return list(scores.to_delayed()), None
    raise ValueError("scores must be a Dask array of shape (n, 2) or a Dask DataFrame of two "
                     f"columns; got {type(scores).__name__}.")


def _looks_numeric(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _pair_block(scores: Any) -> NDArray[np.float64]:
    """The two score columns of a partition (a NumPy block or a pandas DataFrame), checked as
    :meth:`PairTable.from_arrays` checks an array: numbers only, a text cell refused with its
    column, never parsed."""
    columns = getattr(scores, "columns", None)
    if columns is None:
        return as_real_array(scores, "scores")
    import pandas as pd

    out = []
    for c in columns:
        col = scores[c]
        if not (pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)):
            text = [v for v in col.dropna() if not isinstance(v, (int, float, np.number))]
            words = [v for v in text if not _looks_numeric(v)]
            got = f"such as {(words or text)[0]!r}" if text else "no number"
            raise ValueError(f"scores column {c!r} must hold numbers (int, float or bool dtype); "
                             f"got dtype {col.dtype}, {got}.")
        out.append(col.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.stack(out, axis=1) if out else np.zeros((len(scores), 0))


def _partition_pairs(scores: Any, losses: Any, is_ood: Any) -> PairTable:
    s, ls, o = _pair_block(scores), np.asarray(losses), np.asarray(is_ood)
    _partition_rows(scores=s, losses=ls, is_ood=o)
    if s.shape[0] == 0:
        return PairTable()
    return PairTable.from_arrays(s, ls, is_ood=o)


def _merge_pairs(max_pairs: int, *tables: PairTable) -> PairTable:
    out = PairTable.merge(*tables)
    if out.n_pairs > max_pairs:
        raise ValueError(
            f"the scores hold more than max_pairs={max_pairs:,} distinct pairs ({out.n_pairs:,} "
            f"in {out.n:,} of the rows): a PairTable is small only for quantised scores. Round "
            "both scores to a grid (and apply the rule to the rounded scores), or choose the "
            "direction on a sample and build the score_table of the combined score "
            "(docs/scale.md, 'Two scores'), or raise max_pairs if the driver's memory allows "
            "(about 40 bytes a pair).")
    return out


def pair_table(
    scores: Any, losses: Any, *, is_ood: Any, max_pairs: int = 1_000_000, fan_in: int = 8,
) -> PairTable:
    """The :class:`~abstain.PairTable` of two scores, losses and OOD marks held in Dask
    collections: the distinct score pairs with their ID and OOD rows and ID loss.

    One table per partition, merged ``fan_in`` at a time up a tree (the tree plan of
    :func:`score_table`; the pairs of quantised scores are few, so no range plan). Runs on
    the current Dask scheduler. :class:`~abstain.models.BoundedTPRFPR`,
    :class:`~abstain.models.BoundedPrecisionRecall` and :class:`~abstain.models.CostBasedOOD`
    fit the result as they fit the rows.

    Parameters
    ----------
    scores : dask.array.Array of shape (n, 2), or dask.dataframe.DataFrame of two columns
        The two scores ``(s_r, s_g)`` of each row, higher rejected first.
    losses : dask.array.Array or dask.dataframe.Series of shape (n,)
        Non-negative losses of ID rows (NaN accepted on OOD rows); the same partitions as
        ``scores`` (Dask arrays with other chunks are rechunked).
    is_ood : same kind as ``losses``
        0/1 or bool, True for OOD rows.
    max_pairs : int >= 1, default 1_000_000
        A ``ValueError`` as soon as a partition's or a merge's table holds more distinct
        pairs: with raw float scores a table of pairs is as large as the rows, and the
        message says what to do instead.
    fan_in : int >= 2, default 8
        Tables merged at once.

    Returns
    -------
    PairTable
        The table that ``PairTable.from_arrays`` gives on all rows: counts exactly, loss
        sums exactly whenever the partial sums are exact in float64 (0/1, whole-number
        losses), to float64 rounding otherwise.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from abstain import PairTable
    >>> from abstain.distributed import pair_table
    >>> rng = np.random.default_rng(0)
    >>> ood = rng.random(1000) < 0.3
    >>> s = np.round(np.stack([rng.random(1000), rng.normal(ood, 1.0)], axis=1), 1)
    >>> losses = np.where(ood, np.nan, (rng.random(1000) < 0.2).astype(float))
    >>> table = pair_table(da.from_array(s, chunks=(250, 2)), da.from_array(losses, chunks=250),
    ...                    is_ood=da.from_array(ood, chunks=250))
    >>> table == PairTable.from_arrays(s, losses, is_ood=ood)
    True
    """
    dask = _dask()
    max_pairs = check_int("max_pairs", max_pairs, 1)
    fan_in = check_int("fan_in", fan_in, 2)
    import dask.array as da

    if is_ood is None:
        raise ValueError("is_ood must be a Dask array or Series of 0/1 OOD marks; got None "
                         "(the double-score fits need both classes).")
    scores, losses, is_ood = (_known(a) for a in (scores, losses, is_ood))
    s_parts, s_sizes = _pair_pieces(scores)
    if isinstance(scores, da.Array):
        rows = scores[:, 0]
        losses = _aligned(rows, losses, "losses", "scores")
        is_ood = _aligned(rows, is_ood, "is_ood", "scores")
    l_parts, _ = _pieces(losses, "losses")
    o_parts, _ = _pieces(is_ood, "is_ood")
    if not (len(s_parts) == len(l_parts) == len(o_parts)):
        _partition_mismatch({"scores": (scores, len(s_parts)), "losses": (losses, len(l_parts)),
                             "is_ood": (is_ood, len(o_parts))})
    delayed = dask.delayed
    level = [delayed(_merge_pairs)(max_pairs, delayed(_partition_pairs)(s, ls, o))
             for s, ls, o in zip(s_parts, l_parts, o_parts, strict=True)]
    while len(level) > 1:
        level = [delayed(_merge_pairs)(max_pairs, *level[i : i + fan_in])
                 for i in range(0, len(level), fan_in)]
    (table,) = dask.compute(level[0])
    if table.n == 0:
        raise ValueError("scores must not be empty; got 0 rows in every partition.")
    return table
