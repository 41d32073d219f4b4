"""Score tables of bootstrap resamples, from the rows grouped once.

A resample with replacement is a count per row (how often it was drawn). A score table
depends on the rows only through per-score totals, so the table of a resample is the
table of the rows with every total weighted by those counts: a ``bincount`` over the
rows' groups, a linear pass, where building it from the resampled rows would sort them
again. With 0/1 or whole-number losses the totals are exact integers, so the table equals
the one built from the resampled rows bit for bit; with other losses to the rounding of
their sums (the same total added in another order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import unmasked
from .._core.groups import loss_scale
from ._score import ScoreTable, table_rows

F64 = NDArray[np.float64]


class ResampleTotals(NamedTuple):
    """The score tables of ``m`` resamples at once (:meth:`TableResampler.totals`): per
    resample (row) and distinct score of the rows (column, ascending; a score the resample
    did not draw holds zeros), its totals.

    Attributes
    ----------
    values : ndarray of shape (G,)
        The rows' distinct scores, ascending.
    id_rows, ood_rows : ndarray of shape (m, G)
        Rows drawn per score (as floats, whole numbers), in-distribution and OOD (zeros
        without OOD marks).
    loss_sums : ndarray of shape (m, G)
        The drawn ID rows' losses per score, summed in row order (as the table's), in
        units of the resampler's ``scale`` (1 unless the losses are near the float64
        maximum).
    loss_values : ndarray of shape (K,)
        The distinct ID losses of the rows, ascending, in the same units.
    loss_counts : ndarray of shape (m, K)
        Drawn ID rows per distinct loss (the oracle's table of ``e_aurc``).
    """

    values: F64
    id_rows: F64
    ood_rows: F64
    loss_sums: F64
    loss_values: F64
    loss_counts: F64


class TableResampler:
    """The rows of one score column, grouped once, and the score table of any resample.

    Parameters
    ----------
    uncertainty : array-like of shape (n,)
        Finite scores; higher is rejected first.
    losses : array-like of shape (n,)
        Non-negative losses (with ``is_ood``, those of OOD rows are ignored and may be NaN).
    is_ood : array-like of shape (n,), optional
        0/1 or bool marks of OOD rows.

    Attributes
    ----------
    fits : bool
        Whether every resample's loss sums stay far inside the float64 range (``n`` times
        the largest loss below ``2**1016``, as for the plain sums of the metrics); where
        not, a table of a resample could overflow and the resampled rows are the path.
    scale : float
        The power of two that :meth:`totals` divides the losses by (exact): 1 while ``n**2``
        times the largest loss is below ``2**1016``, so that a count times a running loss
        sum stays finite.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.tables import ScoreTable, TableResampler
    >>> u, losses = np.array([0.1, 0.2, 0.2, 0.9]), np.array([0, 1, 0, 1])
    >>> idx = np.array([0, 0, 3, 2])
    >>> counts = np.bincount(idx, minlength=4)
    >>> TableResampler(u, losses).table(counts) == ScoreTable.from_arrays(u[idx], losses[idx])
    True
    """

    def __init__(self, uncertainty: ArrayLike, losses: ArrayLike,
                 is_ood: ArrayLike | None = None) -> None:
        u, ls, marks = table_rows(uncertainty, losses, is_ood)  # as ScoreTable.from_arrays
        ood = np.zeros(u.size, dtype=bool) if marks is None else marks
        self.marked = is_ood is not None
        self.n = u.size
        self._ood = ood
        self._values, self._group = np.unique(u + 0.0, return_inverse=True)
        self._group = self._group.reshape(-1)
        self._losses = ls
        with np.errstate(over="ignore"):
            self._squares = np.square(ls)
        self._loss_values, self._loss_group = np.unique(ls, return_inverse=True)
        self._loss_group = self._loss_group.reshape(-1)
        self._id = ~ood
        top = float(ls.max()) if ls.size else 0.0
        self.fits = loss_scale(top, float(u.size)) == 1.0
        # the unit of the loss totals of :meth:`totals`: a power of two that keeps a
        # resample's running sums, and their products with row counts, inside float64
        self.scale = loss_scale(top, float(u.size) ** 2)
        self._unit_losses = ls / self.scale if self.scale != 1.0 else ls

    @classmethod
    def of_columns(cls, columns: Mapping[str, ArrayLike], losses: ArrayLike,
                   is_ood: ArrayLike | None = None) -> dict[str, TableResampler]:
        """The resampler of each score column of the same rows, or ``{}`` where the losses
        do not :attr:`fits` (they are the same for every column): the caller then resamples
        the rows."""
        out = {name: cls(u, losses, is_ood) for name, u in columns.items()}
        return out if all(r.fits for r in out.values()) else {}

    def totals(self, counts: NDArray[np.integer]) -> ResampleTotals:
        """The totals of the tables of ``m`` resamples at once, row ``r`` of ``counts``
        (shape (m, n)) drawing row ``i`` ``counts[r, i]`` times: one ``bincount`` over the
        resamples' rows, the sums in row order as :meth:`table` takes them (so each row of
        the result holds that table's totals, with zeros for the scores not drawn).

        Examples
        --------
        >>> import numpy as np
        >>> from abstain.tables import TableResampler
        >>> r = TableResampler([0.1, 0.2, 0.2, 0.9], [0, 1, 0, 1])
        >>> t = r.totals(np.array([[2, 0, 1, 1], [0, 0, 0, 4]]))
        >>> t.values, t.id_rows
        (array([0.1, 0.2, 0.9]), array([[2., 1., 1.],
               [0., 0., 4.]]))
        >>> t.loss_sums
        array([[0., 0., 1.],
               [0., 0., 4.]])
        """
        c = np.asarray(unmasked(counts, "counts"))
        if c.ndim != 2 or c.shape[1] != self.n or c.dtype.kind not in "iu":
            raise ValueError(f"counts must be whole numbers of shape (m, {self.n}), one row "
                             f"per resample; got shape {c.shape}, dtype {c.dtype}.")
        check_draws(c)
        m, g = c.shape[0], self._values.size
        w = c.astype(np.float64)
        id_w = np.where(self._id, w, 0.0) if self.marked else w
        flat = (np.arange(m)[:, None] * g + self._group).reshape(-1)

        def per_group(weights: F64) -> F64:
            sums = np.bincount(flat, weights=weights.reshape(-1), minlength=m * g)
            return np.asarray(sums, dtype=np.float64).reshape(m, g)

        k = self._loss_values.size
        loss_flat = (np.arange(m)[:, None] * k + self._loss_group).reshape(-1)
        loss_counts = np.asarray(np.bincount(loss_flat, weights=id_w.reshape(-1),
                                             minlength=m * k), dtype=np.float64).reshape(m, k)
        ood = per_group(np.where(self._ood, w, 0.0)) if self.marked else np.zeros((m, g))
        unit = self._loss_values / self.scale if self.scale != 1.0 else self._loss_values
        return ResampleTotals(self._values, per_group(id_w), ood,
                              per_group(id_w * self._unit_losses), unit, loss_counts)

    def table(self, counts: NDArray[np.integer], *, marked: bool | None = None) -> ScoreTable:
        """The :class:`ScoreTable` of the resample that draws row ``i`` ``counts[i]`` times.

        ``marked`` (default: whether the rows were given ``is_ood``) builds the table with
        OOD marks, as ``ScoreTable.from_arrays(..., is_ood=...)`` does; ``marked=False`` on
        marked rows gives the table of the resample's ID rows alone (the selective metrics'
        table).
        """
        marked = self.marked if marked is None else marked
        c = row_counts(counts, self.n)
        g = self._values.size
        rows = c if marked else np.where(self._id, c, 0)
        w = rows.astype(np.float64)
        id_w = w if not self.marked else np.where(self._id, w, 0.0)
        counts_g = np.bincount(self._group, weights=w, minlength=g)
        keep = counts_g > 0
        table = ScoreTable()
        table.values = self._values[keep]
        table.counts = counts_g[keep].astype(np.int64)
        table.loss_sums = _weighted(self._group, id_w * self._losses, g)[keep]
        with np.errstate(over="ignore", invalid="ignore"):
            # rows not drawn add nothing, whatever their square (0 * inf is NaN)
            sq = _weighted(self._group, np.where(id_w > 0, id_w * self._squares, 0.0), g)[keep]
        table.sq_loss_sums = sq if np.isfinite(sq.sum()) else None
        if marked:
            ood_w = np.where(self._ood, w, 0.0)
            table.ood_counts = np.bincount(self._group, weights=ood_w,
                                           minlength=g)[keep].astype(np.int64)
        drawn_id = (id_w > 0) if self.marked else (w > 0)
        id_losses = self._losses[drawn_id]
        table.max_loss = float(id_losses.max()) if id_losses.size else 0.0
        table.binary = bool(np.all((id_losses == 0.0) | (id_losses == 1.0)))
        loss_counts = np.bincount(self._loss_group, weights=id_w if self.marked else w,
                                  minlength=self._loss_values.size)
        drawn = loss_counts > 0
        table.loss_values = self._loss_values[drawn]
        table.loss_counts = loss_counts[drawn].astype(np.int64)
        table._check_total()
        return table


def _weighted(group: NDArray[np.intp], weights: F64, size: int) -> F64:
    """Per-group sums of float weights (in row order)."""
    return np.bincount(group, weights=weights, minlength=size).astype(np.float64, copy=False)


def row_counts(counts: ArrayLike, n: int) -> NDArray[np.integer]:
    """``counts`` checked as one resample of ``n`` rows: how many times each row is drawn,
    whole numbers (:func:`check_draws`)."""
    c = np.asarray(unmasked(counts, "counts"))
    if c.shape != (n,) or c.dtype.kind not in "iu":
        raise ValueError(f"counts must be whole numbers, one per row ({n}); got shape "
                         f"{c.shape}, dtype {c.dtype}.")
    check_draws(c)
    return c


def check_draws(counts: NDArray[np.integer]) -> None:
    """Refuse a negative count (a row is drawn a whole number of times, at least 0) and a
    resample of 2**53 rows or more, which the tables' float64 totals cannot count exactly
    (a negative row count, or a row lost, beyond it)."""
    if counts.dtype.kind == "i" and counts.size and int(counts.min()) < 0:
        raise ValueError(f"counts must be at least 0 (how many times each row is drawn); got "
                         f"{int(counts.min())}.")
    total = float(np.max(counts.sum(axis=-1, dtype=np.float64), initial=0.0))
    if total >= 2.0**53:
        raise ValueError(f"counts must draw fewer than 2**53 rows per resample (the tables "
                         f"count rows exactly below it); got {total:.6g}.")
