"""A score table on a fixed grid of bins: merges by addition, with a certified error.

Rows whose scores fall in one bin are totalled together, as if their scores were tied.
The table then no longer knows the order of rows inside a bin, and the metrics computed
on it come with the largest error that this can cause (a certified bound, not an
estimate): the exact value on the rows is within ``error`` of ``value``. A reject rule
fitted on the bins accepts whole bins only (its threshold is the highest score of the
last accepted bin), so its coverage, risk and risk bound are those of the rows exactly
and its constraint holds on the rows.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import merging
from .._core.exact import sum_round_off
from .._core.groups import group_totals
from .._core.prefix import harmonic_difference, tie_excess
from .._core.validation import as_real_array, nonfinite, plain
from ._parts import check_row_counts
from ._score import ScoreTable

__all__ = ["BinnedTable", "Bounded"]

F64 = NDArray[np.float64]


class Bounded(NamedTuple):
    """A metric computed on bins and its certified error: the exact value on the rows
    is in ``[value - error, value + error]``."""

    value: float
    error: float


def _edges(edges: ArrayLike) -> F64:
    e = as_real_array(edges, "edges")
    what = "edges must be a 1-D array of at least 2 finite, strictly increasing numbers; got "
    if e.ndim != 1 or e.size < 2:
        raise ValueError(f"{what}shape {e.shape}.")
    if not np.all(np.isfinite(e)):
        raise ValueError(f"{what}{nonfinite(e)}.")
    down = np.flatnonzero(~(e[1:] > e[:-1]))
    if down.size:
        i = int(down[0])
        raise ValueError(f"{what}edges[{i}] = {plain(e[i])} and edges[{i + 1}] = "
                         f"{plain(e[i + 1])}.")
    return e


class BinnedTable:
    """Per-bin totals of rows on a fixed grid of score bins.

    Bin ``k`` holds the scores in ``[edges[k], edges[k + 1])`` (the last bin also its right
    edge); scores outside ``[edges[0], edges[-1]]`` are refused. Tables on the same edges
    merge by adding their arrays, in any order, exactly for the counts.

    Parameters
    ----------
    edges : array-like of shape (K + 1,)
        Strictly increasing finite bin edges.

    Attributes
    ----------
    edges : ndarray of shape (K + 1,)
    counts, ood_counts : ndarray of int64, shape (K,)
        Rows, and OOD rows (all zero without ``is_ood``), per bin.
    loss_sums : ndarray of shape (K,)
        Summed loss of the ID rows of each bin.
    lows, highs : ndarray of shape (K,)
        Lowest and highest score in each bin (``+inf`` / ``-inf`` for an empty bin).
    max_loss : float
        Largest loss of an ID row.
    ood_marked : bool or None
        Whether the rows were added with OOD marks (``is_ood``), or without; None while the
        table is empty. Tables with and without marks do not merge, as for
        :meth:`ScoreTable.merge`.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain import ScoreTable
    >>> from abstain.metrics import aurc
    >>> rng = np.random.default_rng(0)
    >>> u = rng.random(10_000)
    >>> losses = (rng.random(10_000) < u).astype(float)
    >>> binned = ScoreTable.from_arrays(u, losses).binned(100)
    >>> est = binned.aurc()
    >>> abs(aurc(losses, u) - est.value) <= est.error
    True
    """

    def __init__(self, edges: ArrayLike) -> None:
        self.edges = _edges(edges)
        k = self.edges.size - 1
        self.counts = np.zeros(k, dtype=np.int64)
        self.ood_counts = np.zeros(k, dtype=np.int64)
        self.loss_sums = np.zeros(k)
        self.lows = np.full(k, np.inf)
        self.highs = np.full(k, -np.inf)
        self.sq_loss_sums: F64 | None = np.zeros(k)
        self.max_loss = 0.0
        self.binary = True
        self.ood_marked: bool | None = None

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.counts.sum())

    @property
    def marked(self) -> bool:
        """Whether OOD rows were added (OOD metrics), or none (selective ones)."""
        return bool(self.ood_counts.any())

    def _bins(self, values: F64) -> NDArray[np.intp]:
        if values.size and (values[0] < self.edges[0] or values[-1] > self.edges[-1]):
            raise ValueError(f"uncertainty must be within the bin edges "
                             f"[{plain(self.edges[0])}, {plain(self.edges[-1])}]; got values "
                             f"from {plain(values[0])} to {plain(values[-1])}.")
        k = np.searchsorted(self.edges, values, side="right") - 1
        return np.minimum(k, self.edges.size - 2)

    def add(self, table: ScoreTable) -> BinnedTable:
        """Add the rows of an exact table; return ``self`` (unchanged where it is refused)."""
        if not isinstance(table, ScoreTable):
            raise TypeError(f"table must be a ScoreTable; got {type(table).__name__}.")
        marked = (_same_marks([self.ood_marked, table.ood_counts is not None]) if table.n > 0
                  else self.ood_marked)
        bins = self._bins(table.values)
        size = self.counts.size
        added = np.bincount(bins, weights=table.counts, minlength=size)  # exact below 2**53
        check_row_counts([self.counts, added], self.counts + added, "the table with these rows")
        counts = self.counts + added.astype(np.int64)
        ood = self.ood_counts
        if table.ood_counts is not None:
            ood = ood + np.bincount(bins, weights=table.ood_counts,
                                    minlength=size).astype(np.int64)
        squares = table.sq_loss_sums is not None and self.sq_loss_sums is not None
        cols: list[F64] = [table.loss_sums]
        if squares:
            cols.append(table.sq_loss_sums)  # type: ignore[arg-type]
        used, _, sums = group_totals(bins.astype(np.float64), *cols)
        used = used.astype(np.intp)
        loss_sums = self.loss_sums.copy()
        loss_sums[used] += sums[0]
        sq = None
        if squares:
            sq = self.sq_loss_sums.copy()  # type: ignore[union-attr]
            sq[used] += sums[1]
        self._take(counts, ood, loss_sums, sq)
        self.ood_marked = marked
        np.minimum.at(self.lows, bins, table.values)
        np.maximum.at(self.highs, bins, table.values)
        self.max_loss = max(self.max_loss, table.max_loss)
        self.binary = self.binary and table.binary
        return self

    def _take(self, counts: NDArray[np.int64], ood: NDArray[np.int64], loss_sums: F64,
              sq: F64 | None) -> None:
        """Set the totals, refusing loss sums beyond float64 (the table then unchanged);
        squares beyond it are dropped, as :meth:`ScoreTable.merge` drops them."""
        with np.errstate(over="ignore"):
            total, sq_total = loss_sums.sum(), None if sq is None else sq.sum()
        if not np.isfinite(total):
            raise ValueError("losses must have a sum within the float64 range (scale them "
                             "down; the metrics are linear in the losses).")
        self.counts, self.ood_counts, self.loss_sums = counts, ood, loss_sums
        self.sq_loss_sums = sq if sq_total is not None and np.isfinite(sq_total) else None

    @classmethod
    def from_arrays(cls, uncertainty: ArrayLike, losses: ArrayLike, *, edges: ArrayLike,
                    is_ood: ArrayLike | None = None) -> BinnedTable:
        """The binned table of rows (validated as :meth:`ScoreTable.from_arrays`)."""
        table = ScoreTable.from_arrays(uncertainty, losses, is_ood=is_ood, oracle=False)
        return cls(edges).add(table)

    @merging
    def merge(cls: type[BinnedTable], *tables: BinnedTable) -> BinnedTable:
        """The sum of tables on the same edges."""
        if not tables:
            raise ValueError("merge needs at least one BinnedTable; got none.")
        for i, t in enumerate(tables):
            if not isinstance(t, BinnedTable):
                raise TypeError(f"tables[{i}] must be a BinnedTable; got {type(t).__name__}.")
            if not np.array_equal(t.edges, tables[0].edges):
                raise ValueError(f"tables[{i}] has other bin edges; binned tables merge only "
                                 "on the same edges.")
        out = cls(tables[0].edges)
        out.ood_marked = _same_marks([t.ood_marked for t in tables])
        counts, ood, loss_sums = out.counts.copy(), out.ood_counts.copy(), out.loss_sums.copy()
        sq: F64 | None = np.zeros(loss_sums.size)
        with np.errstate(over="ignore"):
            for t in tables:
                counts += t.counts
                ood += t.ood_counts
                loss_sums += t.loss_sums
                sq = None if sq is None or t.sq_loss_sums is None else sq + t.sq_loss_sums
        check_row_counts([t.counts for t in tables], counts, "the merged tables")
        out._take(counts, ood, loss_sums, sq)
        for t in tables:
            np.minimum(out.lows, t.lows, out=out.lows)
            np.maximum(out.highs, t.highs, out=out.highs)
            out.max_loss = max(out.max_loss, t.max_loss)
            out.binary = out.binary and t.binary
        return out

    def whole_bin_table(self) -> ScoreTable:
        """A :class:`ScoreTable` with one group per non-empty bin, at the bin's highest score.

        A threshold rule at a group's value that accepts the whole group accepts exactly the
        rows of the bins up to it, so its coverage and risk on this table are those of the
        rows: the reject models fit such rules when given the BinnedTable itself. Metrics
        on this table treat each bin as tied scores; :meth:`aurc`, :meth:`augrc` and
        :meth:`auroc` give them with their certified error.
        """
        full = self.counts > 0
        if not full.any():
            raise ValueError("the BinnedTable must not be empty; got 0 rows.")
        out = ScoreTable()
        out.values = self.highs[full]
        out.counts = self.counts[full].copy()
        out.loss_sums = self.loss_sums[full].copy()
        out.sq_loss_sums = None if self.sq_loss_sums is None else self.sq_loss_sums[full].copy()
        out.ood_counts = self.ood_counts[full].copy() if self.marked else None
        out.max_loss, out.binary = self.max_loss, self.binary
        out.loss_values = out.loss_counts = None
        return out

    # ------------------------------------------------------------------ bounded metrics
    def _area_bounds(self, scale: float = 1.0) -> tuple[F64, F64, F64, F64, F64, F64]:
        """Per bin: m, S, B (rows before), and the lowest and highest possible sum over
        ``k = 1..m`` of ``(loss of the first k rows of the bin) / (B + k)``, plus the
        binned (tied) value of that sum; the losses in units of ``scale`` (a power of
        two)."""
        t = self.whole_bin_table()
        if t.ood_counts is not None:
            raise ValueError("this BinnedTable has OOD marks; the selective areas take one "
                             "built without is_ood.")
        m = t.counts.astype(np.float64)
        s = t.loss_sums / scale
        b = np.concatenate(([0.0], np.cumsum(m)[:-1]))
        top = self.max_loss / scale
        # sum_{k <= m} k / (B + k) as tie_excess takes it: m - B dH kept only about
        # m / (2 B eps) of it (one row after 10**12 rows: 9e-5 relative)
        h_all = harmonic_difference(b, m)
        tied = (s / m) * tie_excess(b, m, h_all)
        if top == 0.0:
            zero = np.zeros_like(m)
            return m, s, b, zero, zero, tied
        q = s / top  # the fewest rows that can hold the bin's loss
        j = np.minimum(m, np.floor(q))  # high: the first j rows carry top each, then the rest
        one = np.maximum(j, 1.0)
        h_j = harmonic_difference(b, one)
        head = np.where(j > 0, tie_excess(b, one, h_j), 0.0)  # sum_{k <= j} k / (B + k)
        rest = np.where(m > j, harmonic_difference(b + j, np.maximum(m - j, 1.0)), 0.0)
        high = top * head + s * rest
        k0 = np.clip(np.floor(m - q) + 1.0, 1.0, m + 1.0)  # low: the last m - k0 + 1 rows
        count = np.maximum(m - k0 + 1.0, 1.0)
        h_tail = harmonic_difference(b + k0 - 1.0, count)
        # sum_{k = k0}^{m} (loss of the first k rows) / (B + k) with that loss
        # s - (m - k) top: (s - count top) dH + top sum_{i <= count} i / (B + k0 - 1 + i)
        low = h_tail * (s - count * top) + top * tie_excess(b + k0 - 1.0, count, h_tail)
        low = np.where(m - k0 + 1.0 > 0, np.maximum(low, 0.0), 0.0)
        return m, s, b, low, high, tied

    def aurc(self) -> Bounded:
        """AuRC (ties="mean") on the bins, with the certified bound on its error on the rows.

        Inside a bin of ``m`` rows and loss ``S`` after ``B`` rows, the loss of the first ``k``
        rows is between ``max(0, S - (m - k) * max_loss)`` and ``min(S, k * max_loss)``
        whatever their scores; the exact and the binned AuRC both lie between the areas
        with those extremes, so their distance is at most the sum of the gaps over ``n``.
        """
        n = float(self.counts.sum())
        # in units of a power of two where n rows of losses near max_loss, times a harmonic
        # sum, would overflow (1.0, the plain sums, for every realistic table)
        scale = _units(self.max_loss, n, 1)
        m, s, b, low, high, tied = self._area_bounds(scale)
        prior = np.concatenate(([0.0], np.cumsum(s)[:-1]))
        base = float(np.sum(prior * harmonic_difference(b, m)))
        value = (base + float(np.sum(tied))) / n
        gap = float(np.sum(np.maximum(high - tied, tied - low)))
        return Bounded(value * scale, (gap / n * (1 + 1e-9) + _round_off(m.size) * value
                                       + _subnormal_slack(m.size)) * scale)

    def augrc(self) -> Bounded:
        """AUGRC on the bins, with its certified error (the bounds of :meth:`aurc` on the
        loss of the first ``k`` rows of a bin, summed without the ``1 / (B + k)``)."""
        n = float(self.counts.sum())
        # in units of a power of two where the products of losses with n^2 rows would
        # overflow (1.0, the plain sums, for every realistic table; exact either way)
        scale = _units(self.max_loss, n, 2)
        m, s, _, _, _, _ = self._area_bounds(scale)
        top = self.max_loss / scale
        prior = np.concatenate(([0.0], np.cumsum(s)[:-1]))
        tied = s * (m + 1.0) / 2.0
        value = float(np.sum(m * prior + tied)) / n / n
        if top == 0.0:
            return Bounded(value * scale, 0.0)
        q = s / top
        j = np.minimum(m, np.floor(q))
        high = top * j * (j + 1.0) / 2.0 + s * (m - j)
        k0 = np.clip(np.floor(m - q) + 1.0, 1.0, m + 1.0)
        count = m - k0 + 1.0
        low = np.maximum(count * (s - m * top) + top * count * (k0 + m) / 2.0, 0.0)
        gap = float(np.sum(np.maximum(high - tied, tied - low)))
        return Bounded(value * scale, (gap / n / n * (1 + 1e-9) + _round_off(m.size) * value
                                       + _subnormal_slack(m.size)) * scale)

    def auroc(self) -> Bounded:
        """AUROC (OOD positive, ties one half) on the bins, with its certified error: the ID
        and OOD pairs inside one bin count one half but may be ordered either way."""
        t = self.whole_bin_table()
        if t.ood_counts is None and not self.ood_marked:
            raise ValueError("this BinnedTable has no OOD marks; AUROC needs one built with "
                             "is_ood.")
        if t.ood_counts is None:  # marked, but no OOD row added yet
            raise ValueError("is_ood must contain both ID (False) and OOD (True) samples; got "
                             "only ID in the BinnedTable.")
        ood = t.ood_counts.astype(np.float64)
        idc = t.counts - ood
        n_id, n_ood = float(idc.sum()), float(ood.sum())
        if not (n_id > 0 and n_ood > 0):
            raise ValueError("is_ood must contain both ID (False) and OOD (True) samples; got "
                             f"only {'OOD' if n_ood else 'ID'} in the BinnedTable.")
        tpr = np.concatenate(([0.0], np.cumsum(idc))) / n_id
        fpr = np.concatenate(([0.0], np.cumsum(ood))) / n_ood
        value = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
        pairs = float(np.sum(idc * ood)) / (n_id * n_ood)
        return Bounded(value, pairs / 2.0 * (1 + 1e-9) + 1e-15)

    def __repr__(self) -> str:
        return f"BinnedTable(n={self.n}, bins={self.counts.size})"


def _units(top: float, n: float, power: int) -> float:
    """The power of two that keeps products of ``top`` with ``n ** power`` rows (and a
    harmonic sum) below about ``2**1000``: 1.0 for every realistic table."""
    exponent = math.frexp(top)[1] + power * math.frexp(n)[1] + 6
    return math.ldexp(1.0, exponent - 1000) if exponent > 1000 else 1.0


def _round_off(bins: int) -> float:
    """A relative bound on the round-off of a binned area: its sums over the bins
    (:func:`~abstain._core.exact.sum_round_off`) and the tie terms of
    :func:`~abstain._core.prefix.tie_excess` (about ``2 (B / m) eps`` with ``B / m`` up to
    1024, 5e-13, for bins of more than 64 rows)."""
    return 1e-12 + 2.0 * sum_round_off(bins)


def _subnormal_slack(bins: int) -> float:
    """An absolute bound on the round-off of a binned area among the subnormals, where a
    relative one underflows: half the least float per operation, a few per bin."""
    return 8.0 * (bins + 2) * 5e-324


def _same_marks(marks: list[bool | None]) -> bool | None:
    """The one OOD marking of non-empty tables (None for empty ones), or raise on a mix."""
    given = {m for m in marks if m is not None}
    if len(given) > 1:
        raise ValueError("tables must all have OOD marks or all have none; got a mix (build "
                         "every part with is_ood, or every part without).")
    return given.pop() if given else None


def binned(table: ScoreTable, n_bins: int | None = None, *,
           edges: Any = None) -> BinnedTable:
    """``table`` on ``n_bins`` equal bins over its score range, or on ``edges``."""
    if (n_bins is None) == (edges is None):
        raise ValueError("give exactly one of n_bins and edges; got "
                         + ("both." if n_bins is not None else "neither."))
    if edges is None:
        from .._core.validation import check_int

        k = check_int("n_bins", n_bins, 1)
        if table.n == 0:
            raise ValueError("the ScoreTable must not be empty; got a table of 0 rows.")
        lo, hi = float(table.values[0]), float(table.values[-1])
        if hi == lo:  # one distinct score: a range from it, 1 wide (wider for a huge score)
            width = max(1.0, abs(lo) * 2.0 ** -20)
            lo, hi = (lo, lo + width) if math.isfinite(lo + width) else (lo - width, lo)
        with np.errstate(over="ignore", invalid="ignore"):
            edges = np.linspace(lo, hi, k + 1)
        if not np.all(np.isfinite(edges)):  # hi - lo overflows: weigh the ends instead
            t = np.arange(k + 1) / k
            edges = lo * (1.0 - t) + hi * t
        if not np.all(np.diff(edges) > 0):
            raise ValueError(f"n_bins must leave distinct bin edges; got {k} equal bins over "
                             f"the scores' range [{lo!r}, {hi!r}], which holds fewer than "
                             f"{k + 1} distinct floats: give fewer bins, or edges.")
    return BinnedTable(edges).add(table)
