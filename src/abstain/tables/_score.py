"""The score table: the sufficient statistic of every tie-aware metric and reject-model fit.

Every metric with the ``"mean"`` tie rule and every reject-model fit depends on the
rows only through the sorted distinct scores with, per score, the number of rows and
their summed loss (and, for OOD, the number of ID and of OOD rows and the ID loss).
Such tables merge by concatenation and re-grouping, so a table can be built in pieces:
per batch of a stream, per file of a directory, per partition of a cluster.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.base import ParamsMixin, merging
from .._core.exact import sum_round_off
from .._core.groups import TieGroups, group_totals, groups_from_totals
from .._core.schema import Array, Field, Flag, Number
from .._core.serialize import dumps, serializable
from .._core.validation import (
    TABLE_USE,
    as_is_ood,
    as_losses,
    as_real_array,
    as_scores,
    check_nan_only_on_ood,
    check_same_length,
    empty_batch,
    plain,
)
from ._parts import (
    LazyUpdates,
    PendingParts,
    check_grouped_counts,
    check_row_counts,
    check_total_rows,
    whole_counts,
)

__all__ = ["ScoreTable"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def check_loss_sums(loss_sums: F64, id_counts: I64, max_loss: float,
                    names: tuple[str, str] = ("fitted.loss_sums", "fitted.max_loss"),
                    min_loss: float = 0.0) -> None:
    """Raise unless every group's loss sum is at most its ID rows times ``fitted.max_loss``
    (``names``: how the message names the sums and the largest loss), and at least its ID
    rows times ``min_loss`` (the least of the table's losses, where it knows them).

    A float64 sum of ``k`` terms each at most ``M`` is at most ``k M (1 + k 2**-52)`` in any
    order of summation (each of the ``k - 1`` additions rounds by a relative ``2**-53``),
    and one of terms each at least ``m`` at least ``k m (1 - k 2**-52)``.
    """
    k = id_counts.astype(np.float64)
    with np.errstate(over="ignore"):
        over = loss_sums > k * max_loss * (1.0 + k * 2.0**-52)
        under = loss_sums < k * min_loss * (1.0 - k * 2.0**-52)
    if np.any(over):
        g = int(np.argmax(over))
        raise ValueError(f"{names[0]} must be at most the ID rows of each group times "
                         f"{names[1]} ({max_loss!r}); got {float(loss_sums[g])!r} for "
                         f"{int(id_counts[g])} ID row(s) in group {g}.")
    if np.any(under):
        g = int(np.argmax(under))
        raise ValueError(f"{names[0]} must be at least the ID rows of each group times the "
                         f"least loss ({min_loss!r}); got {float(loss_sums[g])!r} for "
                         f"{int(id_counts[g])} ID row(s) in group {g}.")


@serializable("table")
class ScoreTable(LazyUpdates, ParamsMixin):
    """Sorted distinct scores with the row count and loss totals of each: a mergeable summary.

    ``ScoreTable()`` is the empty table; :meth:`from_arrays` builds one from rows,
    :meth:`merge` combines tables (of batches, files, partitions, processes) and
    :meth:`update` adds rows to this one. Every selective metric with ``ties="mean"``
    (:func:`~abstain.metrics.aurc`, ``e_aurc``, ``augrc``, ``risk_coverage_curve``,
    ``selective_risk_at_coverage``, ``coverage_at_risk``, ``sele_loss``), every OOD metric of
    one score column and every reject-model fit (``CostBased``, ``BoundedImprovement``,
    ``BoundedAbstention``, ``least_risk_bound``, ``BoundedTPRFPR``,
    ``BoundedPrecisionRecall``, ``CostBasedOOD``) takes a table in place of its arrays and
    returns what it returns on the rows. What needs the row order (``ties="index"``) or two
    score columns refuses a table with a ``ValueError`` that says so.

    Tie rule: rows are grouped by equal score (one group per distinct value, ascending);
    group totals are float64 sums. Counts merge exactly; loss totals merge exactly when
    every partial sum is a float64 number (0/1 losses, whole-number losses, losses on a
    binary grid such as multiples of 1/1024 below 2**43), and otherwise to float64
    rounding of the group sums (a relative 1e-16 per merge).

    Attributes
    ----------
    values : ndarray of shape (G,)
        The distinct scores, ascending (a higher score is rejected first).
    counts : ndarray of int64, shape (G,)
        Rows per score (ID and OOD).
    loss_sums : ndarray of shape (G,)
        Summed loss of the ID rows (every row without ``is_ood``). The loss total must be
        within the float64 range (the metrics on arrays rescale larger losses).
    sq_loss_sums : ndarray of shape (G,), or None
        Summed squared loss of the ID rows, for the risk bound of
        ``BoundedImprovement(delta=...)``; None where the squares exceed the float64 range.
    ood_counts : ndarray of int64, shape (G,), or None
        OOD rows per score; None for a table built without ``is_ood``.
    max_loss : float
        The largest loss of an ID row (0.0 for an empty table).
    binary : bool
        Whether every ID loss is 0 or 1.
    loss_values : ndarray of shape (K,), or None
        The distinct ID losses, ascending, with ``loss_counts`` (int64) their rows: the
        oracle score of :func:`~abstain.metrics.e_aurc`. None with ``oracle=False``.

    Examples
    --------
    >>> import abstain
    >>> from abstain.metrics import aurc
    >>> u, losses = [0.1, 0.2, 0.2, 0.9], [0, 1, 0, 1]
    >>> table = abstain.ScoreTable.from_arrays(u[:2], losses[:2])
    >>> table.update(u[2:], losses[2:])
    ScoreTable(n=4, groups=3)
    >>> table.values.tolist(), table.counts.tolist(), table.loss_sums.tolist()
    ([0.1, 0.2, 0.9], [1, 2, 1], [0.0, 1.0, 1.0])
    >>> aurc(table) == aurc(losses, u)
    True
    >>> abstain.load_json(table.to_json()) == table
    True
    """

    _FIELDS: dict[str, Field] = {
        "values": Array(("groups",)),
        "counts": Array(("groups",), positive=True),
        "loss_sums": Array(("groups",)),
        "sq_loss_sums": Array(("groups",), none=True),
        "ood_counts": Array(("groups",), none=True),
        "max_loss": Number(0.0, None),
        "binary": Flag(),
        # empty for a table of OOD rows only, built with oracle=True
        "loss_values": Array(("losses",), empty=True, none=True),
        "loss_counts": Array(("losses",), positive=True, empty=True, none=True),
    }

    def __init__(self) -> None:
        self.values: F64 = np.zeros(0)
        self.counts: I64 = np.zeros(0, dtype=np.int64)
        self.loss_sums: F64 = np.zeros(0)
        self.sq_loss_sums: F64 | None = np.zeros(0)
        self.ood_counts: I64 | None = None
        self.max_loss = 0.0
        self.binary = True
        self.loss_values: F64 | None = np.zeros(0)
        self.loss_counts: I64 | None = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ building
    @classmethod
    def from_arrays(cls, uncertainty: ArrayLike, losses: ArrayLike, *,
                    is_ood: ArrayLike | None = None, oracle: bool = True) -> ScoreTable:
        """The table of rows: one score, one loss (and an OOD mark) per row.

        Parameters
        ----------
        uncertainty : array-like of shape (n,)
            Finite scores; higher is rejected first.
        losses : array-like of shape (n,)
            Non-negative losses. With ``is_ood``, entries of OOD rows are ignored and may
            be NaN (as the file format writes them).
        is_ood : array-like of shape (n,), optional
            0/1 or bool, True for OOD rows. A batch may hold one class only; the metrics
            and fits check that the whole table holds both.
        oracle : bool, default True
            Keep the distinct losses with their counts, which :func:`~abstain.metrics.e_aurc`
            needs for its oracle. With continuous losses that part grows with the number of
            distinct losses; ``False`` leaves it out.

        Returns
        -------
        ScoreTable
        """
        u, ls, ood = table_rows(uncertainty, losses, is_ood)
        table = cls()
        with np.errstate(over="ignore"):  # squares beyond float64 leave the squares out
            weights: list[NDArray[Any]] = [ls, np.square(ls)]
            if ood is not None:
                weights.append(ood.astype(np.int64))
            table.values, table.counts, sums = group_totals(u, *weights)
            table.loss_sums = sums[0]
            table.sq_loss_sums = sums[1] if np.isfinite(sums[1].sum()) else None
        table.ood_counts = None if ood is None else sums[2].astype(np.int64)
        id_losses = ls if ood is None else ls[~ood]
        table.max_loss = float(id_losses.max()) if id_losses.size else 0.0
        table.binary = bool(np.all((id_losses == 0.0) | (id_losses == 1.0)))
        if oracle:
            table.loss_values, counts = np.unique(id_losses, return_counts=True)
            table.loss_counts = counts.astype(np.int64)
        else:
            table.loss_values = table.loss_counts = None
        table._check_total()
        return table

    @classmethod
    def from_totals(cls, values: ArrayLike, counts: ArrayLike, loss_sums: ArrayLike, *,
                    loss_values: ArrayLike, loss_counts: ArrayLike,
                    sq_loss_sums: ArrayLike | None = None,
                    ood_counts: ArrayLike | None = None) -> ScoreTable:
        """The table of per-score totals gathered elsewhere: a group-by of (score) -> sums
        in a database or Spark, or the fields of tables concatenated across processes.

        ``values`` may repeat and come in any order: the rows of equal value are added up
        (as :meth:`merge` adds tables). ``loss_values`` / ``loss_counts`` are the ID rows'
        distinct losses and their rows (repeats added up too), which give the table's
        largest loss, its 0/1 flag and the oracle of :func:`~abstain.metrics.e_aurc`.
        ``sq_loss_sums`` (summed squared losses) is needed only by
        ``BoundedImprovement(delta=...)``; ``ood_counts`` marks OOD rows. Totals that no
        rows give are refused, as :func:`abstain.load_json` refuses them: a loss sum above
        its score's ID rows times the largest of ``loss_values`` (a loss on a score of no
        rows, say) or below them times the least, loss sums (or squared sums) that do not
        add up to ``loss_values`` (squared) times ``loss_counts``, and a squared sum outside
        ``[S**2 / k, M S]`` for a score's ``k`` ID rows of loss sum ``S`` and largest loss
        ``M``.

        Examples
        --------
        >>> import abstain
        >>> t = abstain.ScoreTable.from_totals([0.5, 0.1, 0.5], [2, 1, 1], [1.0, 0.0, 0.0],
        ...                                    loss_values=[0.0, 1.0], loss_counts=[3, 1],
        ...                                    sq_loss_sums=[1.0, 0.0, 0.0])
        >>> t.values.tolist(), t.counts.tolist(), t.loss_sums.tolist(), t.binary
        ([0.1, 0.5], [1, 3], [0.0, 1.0], True)
        >>> t == abstain.ScoreTable.from_arrays([0.5, 0.1, 0.5, 0.5], [1, 0, 0, 0])
        True
        """
        v = as_scores(values, "values")
        n = v.size
        c = as_totals(counts, "counts", n, whole=True)
        ls = as_totals(loss_sums, "loss_sums", n)
        sq = None if sq_loss_sums is None else as_totals(sq_loss_sums, "sq_loss_sums", n)
        oc = None if ood_counts is None else as_totals(ood_counts, "ood_counts", n, whole=True)
        # no loss at all: a table of OOD rows only (as from_arrays builds it)
        lv = (as_losses(loss_values, "loss_values") if np.size(loss_values) else np.zeros(0))
        lc = as_totals(loss_counts, "loss_counts", lv.size, whole=True)
        if oc is not None and np.any(oc > c):
            raise ValueError("ood_counts must be at most counts at every score; got more OOD "
                             f"rows than rows at {int(np.sum(oc > c))} score(s).")
        # in Python integers: float64 sums of counts round beyond 2**53
        n_id = sum(c.astype(np.int64).tolist()) - (0 if oc is None else
                                                   sum(oc.astype(np.int64).tolist()))
        n_losses = sum(lc.astype(np.int64).tolist())
        if n_id != n_losses:
            raise ValueError(f"loss_counts must add up to the ID rows of counts ({n_id}); "
                             f"got {n_losses}.")
        table = cls()
        weights: list[NDArray[Any]] = [c, ls, sq if sq is not None else ls]
        if oc is not None:
            weights.append(oc)
        with np.errstate(over="ignore"):
            table.values, _, sums = group_totals(v, *weights)
        check_grouped_counts(sums[0], "counts")
        table.counts = np.rint(sums[0]).astype(np.int64)
        table.loss_sums = sums[1]
        table.sq_loss_sums = sums[2] if sq is not None and np.isfinite(sums[2].sum()) else None
        table.ood_counts = None if oc is None else np.rint(sums[3]).astype(np.int64)
        keep = lc > 0
        if keep.any():
            table.loss_values, _, (cnt,) = group_totals(lv[keep], lc[keep])
            check_grouped_counts(cnt, "loss_counts")
            table.loss_counts = np.rint(cnt).astype(np.int64)
        lvs = table.loss_values if table.loss_values is not None else np.zeros(0)
        table.max_loss = float(lvs.max()) if lvs.size else 0.0
        table.binary = bool(np.all((lvs == 0.0) | (lvs == 1.0)))
        id_counts = table.counts - (0 if table.ood_counts is None else table.ood_counts)
        # the loss of a group is of its ID rows, each at most the largest of loss_values
        check_loss_sums(table.loss_sums, id_counts, table.max_loss,
                        ("loss_sums", "the largest of loss_values"),
                        float(lvs.min()) if lvs.size else 0.0)
        keep = table.counts > 0
        if not keep.all():  # a score whose rows add up to none is no group
            table.values, table.counts = table.values[keep], table.counts[keep]
            table.loss_sums = table.loss_sums[keep]
            if table.sq_loss_sums is not None:
                table.sq_loss_sums = table.sq_loss_sums[keep]
            if table.ood_counts is not None:
                table.ood_counts = table.ood_counts[keep]
        table._check_total()
        table._check_loss_fields("")  # as load_json checks them
        return table

    @merging
    def merge(cls: type[ScoreTable], *tables: ScoreTable) -> ScoreTable:
        """One table of the rows of all ``tables`` (which are left unchanged).

        Counts add exactly; see the class docstring for the loss totals. Tables with and
        without OOD marks do not merge (an empty table merges with either).

        Examples
        --------
        >>> import abstain
        >>> a = abstain.ScoreTable.from_arrays([0.1, 0.5], [0, 1])
        >>> b = abstain.ScoreTable.from_arrays([0.5, 0.7], [1, 0])
        >>> abstain.ScoreTable.merge(a, b).counts.tolist()
        [1, 2, 1]
        """
        for i, t in enumerate(tables):
            if not isinstance(t, ScoreTable):
                raise TypeError(f"tables[{i}] must be a ScoreTable; got {type(t).__name__}.")
        full = [t for t in tables if t.n > 0]
        out = cls()
        if not full:
            _merge_losses(out, tables)
            return out
        marked = {t.ood_counts is not None for t in full}
        if len(marked) > 1:
            raise ValueError("tables must all have OOD marks or all have none; got a mix "
                             "(build every part with is_ood, or every part without).")
        cat = np.concatenate
        squares = all(t.sq_loss_sums is not None for t in full)
        weights: list[NDArray[Any]] = [cat([t.counts for t in full]),
                                       cat([t.loss_sums for t in full]),
                                       cat([t.sq_loss_sums if squares else t.loss_sums
                                            for t in full])]  # type: ignore[misc]
        if marked == {True}:
            weights.append(cat([t.ood_counts for t in full]))  # type: ignore[misc]
        with np.errstate(over="ignore"):
            out.values, _, sums = group_totals(cat([t.values for t in full]), *weights)
            check_row_counts([t.counts for t in full], sums[0], "the merged tables")
            out.counts, out.loss_sums = sums[0], sums[1]
            out.sq_loss_sums = sums[2] if squares and np.isfinite(sums[2].sum()) else None
        out.ood_counts = sums[3] if marked == {True} else None
        _merge_losses(out, tables)
        out._check_total()
        return out

    def update(self, uncertainty: ArrayLike, losses: ArrayLike, *,
               is_ood: ArrayLike | None = None) -> ScoreTable:
        """Add rows to this table (a batch of a stream); return ``self``.

        The table keeps its oracle part only while every batch keeps it: this method
        builds the batch with ``oracle`` on exactly when the table has it. A batch that
        cannot join the table (OOD marks where it has none, losses whose total overflows) is
        refused here. The batches are kept as pending parts, merged as a binary counter and
        into one table when a field is read (:class:`LazyUpdates`), so ``k`` batches of ``n``
        rows in all cost O(n log k); reading a field after each batch merges each time.
        """
        if empty_batch(uncertainty, losses, is_ood):  # adds nothing
            return self
        oracle = self._pending_oracle()
        self._add_part(lambda: ScoreTable.from_arrays(uncertainty, losses, is_ood=is_ood,
                                                     oracle=oracle))
        return self

    def _pending_oracle(self) -> bool:
        """Whether the table keeps its oracle part (read without merging pending parts)."""
        pending = self.__dict__.get("_pending")
        return (pending.parts[0] if pending is not None else self).loss_values is not None

    def _refuse_join(self, pending: PendingParts, batch: Any) -> None:
        """Refuse a batch that :meth:`merge` would refuse beside ``pending``'s parts."""
        marks = {t.ood_counts is not None for t in (*pending.parts, batch) if t.n > 0}
        if len(marks) > 1:
            raise ValueError("tables must all have OOD marks or all have none; got a mix "
                             "(build every part with is_ood, or every part without).")
        if pending.overflows(batch):
            raise ValueError("losses must have a sum within the float64 range (scale them "
                             "down; the metrics are linear in the losses).")
        pending.check_rows(batch)

    def _check_total(self) -> None:
        with np.errstate(over="ignore"):
            total = self.loss_sums.sum()
        if not np.isfinite(total):
            raise ValueError("losses must have a sum within the float64 range (scale them "
                             "down; the metrics are linear in the losses).")

    # ------------------------------------------------------------------ reading
    @property
    def n(self) -> int:
        """Number of rows."""
        pending = self.__dict__.get("_pending")
        if pending is not None:  # counted without merging the pending parts
            return sum(int(t.counts.sum()) for t in pending.parts)
        return int(self.counts.sum())

    @property
    def n_groups(self) -> int:
        """Number of distinct scores ``G``."""
        return int(self.values.size)

    @property
    def id_counts(self) -> I64:
        """ID rows per score (every row of a table without OOD marks)."""
        return self.counts if self.ood_counts is None else self.counts - self.ood_counts

    def binned(self, n_bins: int | None = None, *, edges: ArrayLike | None = None) -> Any:
        """This table on a fixed grid of bins: a :class:`~abstain.BinnedTable`.

        Give ``n_bins`` (equal bins from the lowest to the highest score) or ``edges``
        (strictly increasing; every score within ``[edges[0], edges[-1]]``). Binned tables
        on one grid merge by addition; their metrics come with a certified error and the
        reject models fitted on them accept whole bins, so their constraints hold on the rows.
        """
        from ._binned import binned

        return binned(self, n_bins, edges=edges)

    def groups(self) -> TieGroups:
        """The tie groups of the ID rows (running counts and loss sums)."""
        return groups_from_totals(self.values, self.counts, self.loss_sums)

    def square_groups(self) -> TieGroups:
        """The tie groups with the summed squared losses in place of the losses."""
        if self.sq_loss_sums is None:
            raise ValueError("this ScoreTable holds no sums of squared losses: built by "
                             "from_totals without sq_loss_sums (pass them), or with squares "
                             "beyond the float64 range (scale the losses down) for a risk "
                             "bound.")
        return groups_from_totals(self.values, self.counts, self.sq_loss_sums)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScoreTable):
            return NotImplemented
        return all(_same(getattr(self, k), getattr(other, k)) for k in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        ood = "" if self.ood_counts is None else f", ood={int(self.ood_counts.sum())}"
        return f"ScoreTable(n={self.n}, groups={self.n_groups}{ood})"

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> str:
        """The table as an ``abstain/1`` JSON document; :func:`abstain.load_json` reads it.

        Counts are written as float64 numbers (exact below 2**53 rows).
        """
        if self.n == 0:
            raise ValueError("an empty ScoreTable has nothing to write; add rows first.")
        return dumps(self)

    def _after_load(self) -> None:
        self.counts = whole_counts(self.counts, "fitted.counts", 1)
        if self.ood_counts is not None:
            self.ood_counts = whole_counts(self.ood_counts, "fitted.ood_counts", 0)
            if np.any(self.ood_counts > self.counts):
                raise ValueError("fitted.ood_counts must be at most fitted.counts in every group.")
        if not np.all(self.values[1:] > self.values[:-1]):  # no overflowing difference
            raise ValueError("fitted.values must be strictly increasing.")
        for name in ("loss_sums", "sq_loss_sums"):
            if getattr(self, name) is not None and np.any(getattr(self, name) < 0):
                raise ValueError(f"fitted.{name} must be non-negative.")
        with np.errstate(over="ignore"):
            total = self.loss_sums.sum()
        if not np.isfinite(total):
            raise ValueError("fitted.loss_sums must have a sum within the float64 range; got "
                             "a sum that overflows.")
        check_loss_sums(self.loss_sums, self.id_counts, self.max_loss)
        if (self.loss_values is None) != (self.loss_counts is None):
            raise ValueError("fitted.loss_values and fitted.loss_counts must both be null or "
                             "both be arrays.")
        if self.loss_values is not None:
            self.loss_counts = whole_counts(self.loss_counts, "fitted.loss_counts", 1)  # type: ignore[arg-type]
            lv = self.loss_values
            if not (np.all(lv[1:] > lv[:-1]) and np.all(lv[:1] >= 0)):
                raise ValueError("fitted.loss_values must be non-negative and strictly increasing.")
            n_loss, n_id = int(self.loss_counts.sum()), int(self.id_counts.sum())
            if n_loss != n_id:
                raise ValueError("fitted.loss_counts must add up to the ID rows (fitted.counts "
                                 "less fitted.ood_counts, where the table has OOD marks); got "
                                 f"{n_loss} losses for {n_id} ID rows.")
        self._check_loss_fields()
        least = self.loss_values  # the oracle's loss distribution, where the table keeps it
        if least is not None and least.size:  # each group's rows at least the least loss
            check_loss_sums(self.loss_sums, self.id_counts, self.max_loss,
                            min_loss=float(least.min()))

    def _check_loss_fields(self, prefix: str = "fitted.") -> None:
        """Refuse a loaded table (or one of :meth:`from_totals`, ``prefix`` ""), whose 0/1
        flag, largest loss, loss distribution and sums of squares contradict each other or
        its loss sums (each is derived from the same rows)."""
        self._check_squares(prefix)
        lv, lc = self.loss_values, self.loss_counts
        sums = [("loss_sums", self.loss_sums, 1)]
        if self.sq_loss_sums is not None:
            sums.append(("sq_loss_sums", self.sq_loss_sums, 2))
        if lv is not None and lc is not None:
            top = float(lv.max()) if lv.size else 0.0
            if self.max_loss != top:
                raise ValueError(f"fitted.max_loss must be the largest of fitted.loss_values "
                                 f"({plain(top)}); got {plain(self.max_loss)}.")
            if self.binary != bool(np.all((lv == 0.0) | (lv == 1.0))):
                raise ValueError(f"fitted.binary must say whether every one of "
                                 f"fitted.loss_values is 0 or 1; got "
                                 f"{str(self.binary).lower()}.")
        # 0/1 losses: whole sums, squares equal to the losses (with or without the
        # distribution of the losses, which checks only their totals)
        if self.binary and not (np.all(self.loss_sums == np.rint(self.loss_sums))
                                and self.max_loss in (0.0, 1.0)
                                and (self.max_loss == 1.0 or not np.any(self.loss_sums))
                                and (self.sq_loss_sums is None
                                     or np.array_equal(self.sq_loss_sums, self.loss_sums))):
            flag = f"{prefix}binary is true" if prefix else "loss_values are 0 or 1"
            raise ValueError(f"{flag}, so {prefix}loss_sums must be whole numbers equal to "
                             f"{prefix}sq_loss_sums and {prefix}max_loss 1 (0 without a "
                             "loss); the fields contradict it.")
        if lv is None or lc is None:
            return
        n = float(lc.sum())
        slack = sum_round_off(n)
        with np.errstate(over="ignore"):
            for name, got, power in sums:
                want = float(np.sum(lv**power * lc))
                total = float(got.sum())
                if np.isfinite(want) and abs(total - want) > slack * max(want, total):
                    raise ValueError(f"{prefix}{name} must add up to the sum over "
                                     f"{prefix}loss_values{'**2' if power == 2 else ''} times "
                                     f"{prefix}loss_counts ({plain(want)}); got {plain(total)}.")

    def _check_squares(self, prefix: str) -> None:
        """Refuse sums of squared losses that no losses of the groups give: each group's
        ``k`` losses ``l <= M`` with sum ``S`` have ``S**2 / k <= sum(l**2) <= M S`` (up to
        the round-off of the sums)."""
        sq = self.sq_loss_sums
        if sq is None:
            return
        k = self.id_counts.astype(np.float64)
        s, slack = self.loss_sums, 4 * sum_round_off(float(max(k.max(initial=0.0), 1.0)))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            low = np.where(k > 0, s / np.maximum(k, 1.0) * s, 0.0)
            high = self.max_loss * s
            tiny = 2 * k * 2.0**-1074  # squares that underflow: each off by a subnormal
            bad = (sq < low * (1 - slack) - tiny) | (sq > high * (1 + slack) + tiny)
        if np.any(bad):
            g = int(np.argmax(bad))
            raise ValueError(
                f"{prefix}sq_loss_sums must lie between the square of each group's loss sum "
                f"over its ID rows and {prefix}max_loss times its loss sum; got "
                f"{plain(float(sq[g]))} for {int(k[g])} ID row(s) with loss sum "
                f"{plain(float(s[g]))} in group {g}.")


def as_totals(values: ArrayLike, name: str, n: int, *, whole: bool = False) -> F64:
    """A column of totals: finite, non-negative, of length ``n`` (whole numbers for
    counts), as float64."""
    arr = as_real_array(values, name)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one total per value; got shape "
                         f"{arr.shape}.")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite and non-negative; got "
                         f"{plain(arr[~(np.isfinite(arr) & (arr >= 0))][0])}.")
    if whole and np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must be whole numbers; got "
                         f"{plain(arr[arr != np.round(arr)][0])}.")
    if whole and np.any(arr >= 2.0**53):  # beyond, counts are not exact in float64
        raise ValueError(f"{name} must be whole numbers below 2**53; got "
                         f"{plain(arr[arr >= 2.0**53][0])}.")
    if whole:
        check_total_rows([arr], name)
    return arr.astype(np.float64)


def _merge_losses(out: ScoreTable, tables: tuple[ScoreTable, ...]) -> None:
    """The largest loss, the 0/1 flag and the loss distribution of ``tables`` into ``out``.

    Taken over every table, also those without groups: a part cut from a table by score
    range carries its rows' loss distribution even where it holds no score.
    """
    out.max_loss = max((t.max_loss for t in tables), default=0.0)
    out.binary = all(t.binary for t in tables)
    if all(t.loss_values is not None for t in tables):
        kept = [t for t in tables if t.loss_values is not None and t.loss_values.size]
        if kept:
            lv, _, (lc,) = group_totals(np.concatenate([t.loss_values for t in kept]),  # type: ignore[misc]
                                        np.concatenate([t.loss_counts for t in kept]))  # type: ignore[misc]
            check_row_counts([t.loss_counts for t in kept], lc, "the merged tables",  # type: ignore[misc]
                             "of one loss")
            out.loss_values, out.loss_counts = lv, lc
    else:
        out.loss_values = out.loss_counts = None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    return bool(a == b)


def table_rows(uncertainty: ArrayLike, losses: ArrayLike, is_ood: ArrayLike | None,
               ) -> tuple[F64, F64, NDArray[np.bool_] | None]:
    """The validated rows of a score table: scores, losses (0 on OOD rows, where NaN is
    allowed), and the OOD marks or None."""
    u = as_scores(uncertainty)
    if is_ood is None:
        ls = as_losses(losses)
        check_same_length(losses=ls, uncertainty=u)
        return u, ls, None
    ood = as_ood_marks(is_ood)
    raw = as_real_array(losses, "losses")
    if raw.ndim != 1:
        raise ValueError(f"losses must be one-dimensional; got shape {raw.shape}.")
    check_same_length(uncertainty=u, is_ood=ood, losses=raw)
    check_nan_only_on_ood(raw, ood)
    return u, as_losses(np.where(ood, 0.0, raw)), ood


def as_ood_marks(is_ood: ArrayLike) -> NDArray[np.bool_]:
    """0/1 marks of a batch, which may hold one class only (the whole table is checked later)."""
    arr = np.asarray(unmasked(is_ood, "is_ood"))
    if arr.dtype.kind in "biuf" and arr.ndim == 1 and arr.size:
        arr = arr.astype(np.float64)
        if np.all((arr == 0.0) | (arr == 1.0)):
            return arr == 1.0
    return as_is_ood(is_ood)  # the one message of a bad is_ood (or both classes: fine)


def refuse_binned(*given: Any) -> None:
    """Refuse a BinnedTable among ``given`` in one line that says what it offers instead."""
    if any(type(x).__name__ == "BinnedTable" for x in given):
        raise ValueError("a BinnedTable gives its metrics with their certified error through "
                         "its own methods (aurc(), augrc(), auroc()) and is fitted by "
                         "CostBased, BoundedImprovement and BoundedAbstention; pass an exact "
                         "ScoreTable here.")


def table_or_none(first: Any, rest: dict[str, Any]) -> ScoreTable | None:
    """``first`` when it is a table (then every argument named in ``rest`` must be None);
    a PairTable (two score columns, where one is taken) is refused."""
    if not isinstance(first, ScoreTable):
        refuse_binned(first)
        if type(first).__name__ == "PairTable":  # (its callers for two scores take it first)
            raise ValueError("got a PairTable (two score columns) where one score column is "
                             f"taken: pass the arrays, or pass the table alone "
                             f"{TABLE_USE['PairTable']}.")
        return None
    check_whole_table(first, rest)
    return first


def check_whole_table(table: Any, rest: dict[str, Any]) -> None:
    """Raise if an argument of ``rest`` is given beside ``table`` (a ScoreTable or a
    PairTable, given in place of the arrays), or if the table holds no row."""
    kind = type(table).__name__
    given = [name for name, value in rest.items() if value is not None]
    if given:
        raise ValueError(f"{' and '.join(given)} must be omitted when a {kind} is given "
                         "in place of the arrays; the table already holds them.")
    if table.n == 0:
        raise ValueError(f"the {kind} must not be empty; got a table of 0 rows.")


def selective_table(table: ScoreTable) -> ScoreTable:
    """``table``, checked to be one that selective metrics and reject models can use."""
    if table.ood_counts is not None:
        raise ValueError("this ScoreTable has OOD marks; selective metrics and reject models "
                         "take a table built without is_ood (the OOD metrics and OOD rules "
                         "take this one).")
    return table


def as_groups(first: Any, second: Any, first_name: str, second_name: str,
              ties: str = "mean") -> TieGroups | None:
    """Tie groups of a table given in place of the arrays, or None for arrays.

    ``first`` is the argument that may hold the table, ``second`` the one that must then
    be omitted. ``ties="index"`` needs the row order, which a table does not keep.
    """
    table = table_or_none(first, {second_name: second})
    if table is None:
        if second is None:
            raise ValueError(f"{second_name} must be given with {first_name} (or pass a "
                             f"ScoreTable as {first_name}); got None.")
        return None
    if ties != "mean":
        raise ValueError(f"ties={plain(ties)} needs the row order, which a ScoreTable does "
                         "not keep "
                         "(it holds one total per distinct score); use ties='mean' or pass "
                         "the arrays.")
    return selective_table(table).groups()
