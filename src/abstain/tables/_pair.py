"""The two-score table: distinct score pairs with their totals, for the double-score fits.

A double-score rule accepts ``w . (s_r, s_g) <= threshold`` for a direction ``w`` that the
fit searches; rows with the same pair of scores project to the same value in every
direction, so every double-score fit depends on the rows only through the distinct pairs
with, per pair, the number of ID rows, of OOD rows and the summed ID loss. Such tables merge
by concatenation and re-grouping, like :class:`~abstain.ScoreTable`, and stay small when the
pairs are few (two quantised scores); with raw float scores nearly every row is its own pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import ParamsMixin, merging
from .._core.schema import Array, Field, Number
from .._core.serialize import dumps, serializable
from .._core.validation import (
    as_losses,
    as_real_array,
    as_scores,
    check_nan_only_on_ood,
    check_positive,
    check_same_length,
    empty_batch,
)
from ._parts import (
    LazyUpdates,
    PendingParts,
    check_grouped_counts,
    check_row_counts,
    whole_counts,
)
from ._score import as_ood_marks, as_totals, check_loss_sums

__all__ = ["PairTable"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def _pair_totals(pairs: F64, *weights: NDArray[Any]) -> tuple[F64, list[NDArray[Any]]]:
    """Distinct rows of ``pairs`` (n, 2), in lexicographic order, and each weight's sums."""
    if pairs.shape[0] == 0:
        return pairs, list(weights)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    p = pairs[order]
    boundary = np.any(p[1:] != p[:-1], axis=1)
    starts = np.concatenate(([0], np.flatnonzero(boundary) + 1))
    with np.errstate(over="ignore"):  # an overflowing loss sum is refused by _check_total
        return p[starts], [np.add.reduceat(np.take(w, order), starts) for w in weights]


def _pairs(values: ArrayLike, name: str, rows: str) -> F64:
    """Finite score pairs of shape (rows, 2), each column checked as scores."""
    arr = as_real_array(values, name)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape ({rows}, 2), one column per score; got an "
                         f"array of shape {arr.shape}.")
    return np.stack([as_scores(arr[:, j], f"{name}[:, {j}]") for j in range(2)], axis=1)


def _check_total(loss_sums: F64, what: str) -> None:
    with np.errstate(over="ignore"):
        total = loss_sums.sum()
    if not np.isfinite(total):
        raise ValueError(f"{what} must have a sum within the float64 range; got a sum that "
                         "overflows (scale the losses down, and the costs with them).")


@serializable("table")
class PairTable(LazyUpdates, ParamsMixin):
    """Distinct pairs of two scores with their ID and OOD rows and ID loss: the summary of
    a validation sample that the double-score fits need.

    :class:`~abstain.models.BoundedTPRFPR`, :class:`~abstain.models.BoundedPrecisionRecall` and
    :class:`~abstain.models.CostBasedOOD` take a PairTable as ``scores`` (``is_ood``, ``losses``
    and ``sample_weight`` omitted) and fit what they fit on the rows: the same direction
    search over the same projected tie groups (rows with equal pairs are tied in every
    direction). Results are bit for bit those of the rows for 0/1 or whole-number losses;
    for other losses the group sums are added in another order (a relative 1e-16 each).
    Worth it where the pairs are few: two quantised scores (softmax in fp16, scores rounded
    to a few decimals). With raw float scores nearly every row is its own pair and the table
    is as large as the rows; see ``docs/scale.md``. What needs rows (``delta=`` of
    ``BoundedTPRFPR``) refuses a table.

    Attributes
    ----------
    values : ndarray of shape (P, 2)
        The distinct pairs ``(s_r, s_g)``, in lexicographic order.
    counts : ndarray of int64, shape (P,)
        Rows per pair (ID and OOD).
    ood_counts : ndarray of int64, shape (P,)
        OOD rows per pair.
    loss_sums : ndarray of shape (P,)
        Summed loss of the ID rows of each pair.
    max_loss : float
        The largest loss of an ID row (0.0 for an empty table).

    Examples
    --------
    >>> import abstain
    >>> from abstain.models import BoundedTPRFPR
    >>> s = [[0.1, 1.0], [0.1, 1.0], [0.4, 2.0], [0.9, 3.0]]
    >>> table = abstain.PairTable.from_arrays(s[:2], [0, 1], is_ood=[0, 0])
    >>> table.update(s[2:], [0, 0], is_ood=[0, 1])
    PairTable(n=4, pairs=3, ood=1)
    >>> rule = BoundedTPRFPR(tpr=0.6, fpr=0.0).fit(table)
    >>> rule.fpr_ == BoundedTPRFPR(tpr=0.6, fpr=0.0).fit(s, [0, 0, 0, 1], [0, 1, 0, 0]).fpr_
    True
    >>> abstain.load_json(table.to_json()) == table
    True
    """

    _FIELDS: dict[str, Field] = {
        "values": Array(("pairs", 2)),
        "counts": Array(("pairs",), positive=True),
        "ood_counts": Array(("pairs",)),
        "loss_sums": Array(("pairs",)),
        "max_loss": Number(0.0, None),
    }

    def __init__(self) -> None:
        self.values: F64 = np.zeros((0, 2))
        self.counts: I64 = np.zeros(0, dtype=np.int64)
        self.ood_counts: I64 = np.zeros(0, dtype=np.int64)
        self.loss_sums: F64 = np.zeros(0)
        self.max_loss = 0.0

    @classmethod
    def from_arrays(cls, scores: ArrayLike, losses: ArrayLike, *,
                    is_ood: ArrayLike) -> PairTable:
        """The table of rows: two scores, a loss and an OOD mark per row.

        Parameters
        ----------
        scores : array-like of shape (n, 2)
            Finite scores ``(s_r, s_g)``; -0.0 and 0.0 are one value.
        losses : array-like of shape (n,)
            Non-negative losses of ID rows; entries of OOD rows are ignored and may be NaN
            (as the file format writes them).
        is_ood : array-like of shape (n,)
            0/1 or bool, True for OOD rows. A batch may hold one class only; the fits check
            that the whole table holds both.

        Returns
        -------
        PairTable
        """
        s = _pairs(scores, "scores", "n")
        ood = as_ood_marks(is_ood)
        raw = as_real_array(losses, "losses")
        if raw.ndim != 1:
            raise ValueError(f"losses must be one-dimensional; got an array of shape "
                             f"{raw.shape}.")
        check_same_length(scores=s, is_ood=ood, losses=raw)
        check_nan_only_on_ood(raw, ood)
        ls = as_losses(np.where(ood, 0.0, raw))
        table = cls()
        table.values, (table.counts, table.ood_counts, table.loss_sums) = _pair_totals(
            s + 0.0, np.ones(s.shape[0], dtype=np.int64), ood.astype(np.int64), ls)
        _check_total(table.loss_sums, "losses")
        table.max_loss = float(ls.max()) if ls.size else 0.0
        return table

    @classmethod
    def from_totals(cls, values: ArrayLike, counts: ArrayLike, ood_counts: ArrayLike,
                    loss_sums: ArrayLike, *, max_loss: float) -> PairTable:
        """The table of per-pair totals gathered elsewhere (a group-by of ``(s_r, s_g)`` in
        a database or Spark, or the fields of tables concatenated across processes).

        ``values`` (P, 2) may repeat pairs, in any order: their totals are added up, as
        :meth:`merge` does. ``max_loss`` is the largest loss of an ID row; a loss sum above
        its entry's ID rows times ``max_loss`` (a loss of OOD rows only, or of no rows) is
        refused, as :func:`abstain.load_json` refuses it.

        Examples
        --------
        >>> import abstain
        >>> t = abstain.PairTable.from_totals([[0.4, 2.0], [0.1, 1.0], [0.4, 2.0]], [1, 2, 1],
        ...                                   [1, 0, 0], [0.0, 1.0, 0.0], max_loss=1.0)
        >>> t == abstain.PairTable.from_arrays([[0.1, 1.0], [0.1, 1.0], [0.4, 2.0], [0.4, 2.0]],
        ...                                    [0, 1, 0, 0], is_ood=[0, 0, 1, 0])
        True
        """
        v = _pairs(values, "values", "P")
        n = v.shape[0]
        c = as_totals(counts, "counts", n, whole=True)
        oc = as_totals(ood_counts, "ood_counts", n, whole=True)
        ls = as_totals(loss_sums, "loss_sums", n)
        if np.any(oc > c):
            raise ValueError("ood_counts must be at most counts at every pair; got more OOD "
                             f"rows than rows at {int(np.sum(oc > c))} pair(s).")
        try:  # any real number (a 0-d array, a Fraction), not text, None or 10**400
            top = check_positive("max_loss", max_loss, allow_zero=True)
        except ValueError:
            raise ValueError(f"max_loss must be a finite number >= 0; got {max_loss!r}."
                             ) from None
        # a loss of OOD rows only, or of no rows, or above max_loss, as load_json refuses it
        check_loss_sums(ls, (c - oc).astype(np.int64), top, ("loss_sums", "max_loss"))
        table = cls()
        keep = c > 0
        table.values, (cnt, ood, table.loss_sums) = _pair_totals(v[keep] + 0.0, c[keep],
                                                                 oc[keep], ls[keep])
        check_grouped_counts(cnt, "counts")
        table.counts = np.rint(cnt).astype(np.int64)
        table.ood_counts = np.rint(ood).astype(np.int64)
        _check_total(table.loss_sums, "loss_sums")
        table.max_loss = top
        return table

    @merging
    def merge(cls: type[PairTable], *tables: PairTable) -> PairTable:
        """One table of the rows of all ``tables`` (which are left unchanged)."""
        for i, t in enumerate(tables):
            if not isinstance(t, PairTable):
                raise TypeError(f"tables[{i}] must be a PairTable; got {type(t).__name__}.")
        out = cls()
        full = [t for t in tables if t.n > 0]
        if not full:
            return out
        cat = np.concatenate
        out.values, (out.counts, out.ood_counts, out.loss_sums) = _pair_totals(
            cat([t.values for t in full]), cat([t.counts for t in full]),
            cat([t.ood_counts for t in full]), cat([t.loss_sums for t in full]))
        check_row_counts([t.counts for t in full], out.counts, "the merged tables")
        _check_total(out.loss_sums, "the losses of the merged tables")
        out.max_loss = max(t.max_loss for t in full)
        return out

    def update(self, scores: ArrayLike, losses: ArrayLike, *, is_ood: ArrayLike) -> PairTable:
        """Add rows to this table (a batch of a stream); return ``self``. A batch without
        rows adds nothing."""
        if empty_batch(scores, losses, is_ood):
            return self
        self._add_part(lambda: PairTable.from_arrays(scores, losses, is_ood=is_ood))
        return self

    def _refuse_join(self, pending: PendingParts, batch: PairTable) -> None:
        """Refuse a batch whose losses :meth:`merge` would refuse beside ``pending``'s."""
        if pending.overflows(batch):
            raise ValueError("the losses of the merged tables must have a sum within the "
                             "float64 range; got a sum that overflows (scale the losses "
                             "down, and the costs with them).")
        pending.check_rows(batch)

    @property
    def n(self) -> int:
        """Rows in the table."""
        return int(self.counts.sum())

    @property
    def n_pairs(self) -> int:
        """Distinct pairs."""
        return int(self.values.shape[0])

    @property
    def id_counts(self) -> I64:
        """ID rows per pair."""
        return self.counts - self.ood_counts

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PairTable):
            return NotImplemented
        return all(np.array_equal(getattr(self, k), getattr(other, k)) for k in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PairTable(n={self.n}, pairs={self.n_pairs}, ood={int(self.ood_counts.sum())})"

    def to_json(self) -> str:
        """The table as an ``abstain/1`` JSON document; :func:`abstain.load_json` reads it."""
        if self.n == 0:
            raise ValueError("an empty PairTable has nothing to write; add rows first.")
        return dumps(self)

    def _after_load(self) -> None:
        self.counts = whole_counts(self.counts, "fitted.counts", 1)
        self.ood_counts = whole_counts(self.ood_counts, "fitted.ood_counts", 0)
        if np.any(self.ood_counts > self.counts):
            raise ValueError("fitted.ood_counts must be at most fitted.counts for every pair.")
        v = self.values
        if not np.all((v[1:, 0] > v[:-1, 0]) | ((v[1:, 0] == v[:-1, 0]) & (v[1:, 1] > v[:-1, 1]))):
            raise ValueError("fitted.values must be distinct pairs in lexicographic order.")
        if np.any(self.loss_sums < 0):
            raise ValueError("fitted.loss_sums must be non-negative.")
        _check_total(self.loss_sums, "fitted.loss_sums")
        check_loss_sums(self.loss_sums, self.id_counts, self.max_loss)
