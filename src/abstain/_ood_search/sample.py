"""A validated OOD validation sample and the search for its best threshold rule.

Shared by the OOD reject models (:mod:`abstain.models`) and the OOD metrics
(:mod:`abstain.metrics`), so that a metric never fits a model: both ask
:meth:`Sample.run` for the best rule under a constraint (:func:`tpr_fpr_constraint`,
:func:`precision_recall_constraint`) or a linear cost.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.exact import exact_deviation
from .._core.groups import CodeGroups, code_groups, group_totals, min_rows_of_code_groups
from .._core.validation import (
    as_is_ood,
    as_losses,
    as_real_array,
    as_scores,
    check_choice,
    check_int,
    check_nan_only_on_ood,
    check_same_length,
    plain,
)
from ..tables._pair import PairTable
from ..tables._score import ScoreTable, check_whole_table, table_or_none
from .best import Best, Constraint, better
from .branch import branch_search
from .search import (
    F64,
    GridOrders,
    RunningMasses,
    compact_weights,
    grid_batches,
    grid_best,
    grid_orders,
    grid_orders_both,
    grid_weights,
    project,
)

#: At most this many (direction, row) entries of a sample's grid are kept between calls
#: (:meth:`Sample.grid`): about 100 MB of orders, projections and running masses, up to
#: twice that where the exact tie groups differ from the rounded ones (tied scores) and
#: both are kept.
GRID_CACHE = 1 << 21

#: Direction searches of the two-score rules.
SEARCH = ("grid", "exact")

#: Default number of directions of the grid search: the angles ``k * pi / N_DIRECTIONS``.
N_DIRECTIONS = 360

#: ``search="auto"`` of :func:`abstain.metrics.evaluate_ood` computes a pair's metrics exactly
#: up to this many rows, and on the grid of its standardised columns above it.
AUTO_EXACT_ROWS = 2000


def as_score_matrix(scores: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    """Validate one score column (1-D, or 2-D with one column) or two columns; shape (n, k)."""
    arr = as_real_array(scores, name)
    if arr.ndim == 1:
        return as_scores(arr, name)[:, None]
    if arr.ndim != 2 or arr.shape[1] not in (1, 2):
        raise ValueError(
            f"{name} must have shape (n,), (n, 1) or (n, 2); got an array of shape {arr.shape}."
        )
    cols = [as_scores(arr[:, j], f"{name}[:, {j}]") for j in range(arr.shape[1])]
    return np.stack(cols, axis=1)


#: The ``losses`` of the callers that need none (the ROC metrics and fits): zero losses,
#: and a length mismatch names only ``scores`` and ``is_ood``. None stays an error.
NO_LOSSES: Any = object()


def validate_sample(
    scores: ArrayLike, is_ood: ArrayLike, losses: ArrayLike, sample_weight: ArrayLike | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return ``(scores (n, k), w_id, w_ood, w_loss)`` for a validation sample.

    ``losses`` must be finite and non-negative on ID rows; on OOD rows, where they are
    ignored, NaN (only NaN, as the file format writes) is accepted too; :data:`NO_LOSSES`
    for the callers that need none.
    """
    s = as_score_matrix(scores)
    ood = as_is_ood(is_ood)
    if losses is NO_LOSSES:
        check_same_length(scores=s, is_ood=ood)
        ls = np.zeros(s.shape[0])
    else:
        raw = as_real_array(losses, "losses")
        if raw.ndim == 1 and raw.size == ood.size:
            nan = check_nan_only_on_ood(raw, ood)
            raw = np.where(nan, 0.0, raw)  # NaN only on OOD rows: ignored
        ls = as_losses(raw)
        check_same_length(scores=s, is_ood=ood, losses=ls)
    if sample_weight is None:  # the same numbers as a weight of one per row, fewer passes
        w_ood = ood.astype(np.float64)
        w_id = 1.0 - w_ood
    else:
        w = as_losses(sample_weight, "sample_weight")
        check_same_length(scores=s, sample_weight=w)
        top = float(w.max()) if w.size else 0.0
        if top > 0.0 and not 2.0**-200 <= top <= 2.0**200:
            # the rules depend on the weights' ratios alone: a power of two brings them
            # near 1 exactly (subnormal weights gave NaN masses)
            w = np.ldexp(w, -math.frexp(top)[1])
        w_id = np.where(ood, 0.0, w)
        w_ood = np.where(ood, w, 0.0)
    if not (w_id.sum() > 0 and w_ood.sum() > 0):
        raise ValueError("sample_weight must give positive total weight to ID and to OOD rows.")
    w_loss = np.zeros(s.shape[0]) if losses is NO_LOSSES else w_id * ls
    with np.errstate(over="ignore"):
        check_loss_mass(float(np.sum(w_loss)), "got")
    return s, w_id, w_ood, w_loss


def _class_codes(s: NDArray[np.float64], ood: NDArray[np.bool_],
                 losses: Any) -> NDArray[np.uint8] | None:
    """Each row's class for :func:`~abstain._core.groups.code_groups`: 0 ID with loss 0,
    1 OOD, 2 ID with loss 1; None where an ID loss is neither 0 nor 1 (then the rows are
    validated and weighted one by one). Checks what :func:`validate_sample` checks."""
    if losses is NO_LOSSES:
        check_same_length(scores=s, is_ood=ood)
        return ood.view(np.uint8)
    if losses is None:
        return None  # validate_sample refuses it
    raw = as_real_array(losses, "losses")
    if raw.ndim != 1 or raw.size != ood.size:
        return None  # validate_sample says what is wrong
    one = raw == 1.0
    on_id = ~ood
    zero_or_one = one | (raw == 0.0)
    if not np.all(zero_or_one | ood):
        return None  # a loss other than 0/1 on an ID row, or NaN / inf / negative: validated
    if not np.all(zero_or_one[ood] | np.isnan(raw[ood])):
        return None  # OOD rows: anything but NaN, 0, 1 gets validate_sample's message
    one &= on_id
    code = ood.view(np.uint8).copy()
    code[one] = 2
    return code


def row_groups(scores: Any, is_ood: Any, losses: Any) -> CodeGroups | None:
    """The tie groups of one score column of at least ``min_rows_of_code_groups()`` rows,
    each row classed 0 (ID with loss 0), 1 (OOD) or 2 (ID with loss 1) by
    :func:`_class_codes`, grouped by :func:`~abstain._core.groups.code_groups` (one sort);
    None for more columns, fewer rows or other losses. Checks what :func:`validate_sample`
    checks of such rows."""
    s = as_score_matrix(scores)
    if s.shape[1] != 1 or s.shape[0] < min_rows_of_code_groups():
        return None
    ood = as_is_ood(is_ood)
    code = _class_codes(s, ood, losses)
    if code is None:
        return None
    return code_groups(s[:, 0], code, 3)


_TABLE_SAMPLES: ContextVar[dict[int, tuple[ScoreTable, Sample]] | None] = ContextVar(
    "abstain_table_samples", default=None)


@contextmanager
def one_sample_per_table() -> Iterator[None]:
    """Within the block, :meth:`Sample.from_table` builds the sample of each table object
    once: the OOD metrics of one table (AUROC, AUPR, FPR at TPR, ...) share it instead of
    checking and converting its totals each. The tables must not change inside the block
    (``ScoreTable.update``); no metric changes a sample."""
    outer = _TABLE_SAMPLES.get()
    token = _TABLE_SAMPLES.set({} if outer is None else outer)
    try:
        yield
    finally:
        _TABLE_SAMPLES.reset(token)


_ROW_SAMPLES: ContextVar[dict[tuple[int, ...], tuple[tuple[Any, ...], Sample]] | None] = (
    ContextVar("abstain_row_samples", default=None))


@contextmanager
def one_sample_per_rows() -> Iterator[None]:
    """Within the block, :meth:`Sample.of_rows` builds the sample of the same arrays (the
    same objects) once: a display's curve and its area of a pair share the sample and its
    grid's sorted directions. The arrays must not change inside the block; the samples are
    held until it ends."""
    token = _ROW_SAMPLES.set({})
    try:
        yield
    finally:
        _ROW_SAMPLES.reset(token)


def shared_sample(given: tuple[Any, ...], build: Callable[[], Sample]) -> Sample:
    """``build()``, the sample of the arrays ``given`` (scores, is_ood, losses, sample
    weights); inside :func:`one_sample_per_rows`, the one built for the same objects."""
    shared = _ROW_SAMPLES.get()
    if shared is None:
        return build()
    key = tuple(id(a) for a in given)
    if key not in shared or any(a is not b for a, b in zip(shared[key][0], given,
                                                            strict=True)):
        shared[key] = (given, build())
    return shared[key][1]


#: The largest summed ID loss a search accepts: room for its products before overflow.
MAX_LOSS_MASS = float(np.finfo(np.float64).max) / 2**16


def check_loss_mass(total: float, said: str | None) -> None:
    """Refuse a summed ID loss ``total`` above :data:`MAX_LOSS_MASS` (or NaN); the message
    ends with ``said`` and the total where given (``"got"``)."""
    if not total <= MAX_LOSS_MASS:
        tail = "" if said is None else f"; {said} {plain(total)}"
        raise ValueError(f"losses must have a weighted sum on ID rows of at most "
                         f"{MAX_LOSS_MASS:.3g} (scale them down; the risks are linear in the "
                         f"losses){tail}.")


def check_resampled_losses(losses: NDArray[np.float64], is_ood: NDArray[np.bool_]) -> None:
    """Refuse, before any resample is drawn, ID losses whose bootstrap resample of the rows
    could sum beyond :data:`MAX_LOSS_MASS`: ``n_id`` times the largest (the bootstrap draws
    the ``n_id`` ID rows apart from the OOD ones, so it may draw that row ``n_id`` times),
    which a pair's sample of each resample's rows would refuse, at a resample that depends
    on the seed. The bound allows for the rounding of the products and sums (a relative
    ``(n_id + 2) 2**-52``), so no resample's computed sum exceeds it. Losses the searches
    refuse anyway (not finite, another length) are left to them."""
    if losses.shape != is_ood.shape:
        return
    id_losses = losses[~is_ood]
    top = float(np.max(id_losses[np.isfinite(id_losses)], initial=0.0))
    with np.errstate(over="ignore"):
        most = id_losses.size * top * (1.0 + (id_losses.size + 2) * 2.0**-52)
    if not most <= MAX_LOSS_MASS:
        raise ValueError(
            f"losses must be at most {MAX_LOSS_MASS:.3g} / {id_losses.size} on the "
            f"{id_losses.size} ID rows for a bootstrap of a score pair (a resample may draw "
            f"the row of the largest, {plain(top)}, {id_losses.size} times); scale them "
            "down (the risks are linear in the losses).")


#: best point, weights, threshold and, for the exact search of two scores, the anchor: the
#: score pair whose group is the threshold's (None for the grid)
Found = tuple[Best, NDArray[np.float64], float, NDArray[np.float64] | None]


#: Two score columns reaching this are divided by :data:`UNIT` (exactly, where no score
#: becomes subnormal): differences and projections of such scores overflow float64.
TOP = 2.0**1020
UNIT = 16.0


def _unit_of(s: NDArray[np.float64]) -> float:
    """:data:`UNIT` where two score columns reach :data:`TOP` and dividing them by it is
    exact (no nonzero score below ``2**-1018``), else 1 (order, ties and every metric are
    the same for scores divided by a power of two)."""
    if s.shape[1] != 2 or s.size == 0:
        return 1.0
    a = np.abs(s)
    if float(a.max()) < TOP:
        return 1.0
    small = a[a > 0.0]
    return UNIT if small.size == 0 or float(small.min()) >= 2.0**-1018 else 1.0


class Sample:
    """A validated sample with its searches over rules: one score, the grid of directions, or
    all directions (``search="exact"``, two scores).

    One score column is reduced to its tie groups at once (one row per distinct score
    with the group's ID, OOD and loss totals): every rule and metric of one score depends
    on the rows only through them, and a :class:`~abstain.ScoreTable` holds the same totals,
    so the rows and their table give the same sample, bit for bit.
    """

    def __init__(self, s: NDArray[np.float64], w_id: Any, w_ood: Any, w_loss: Any, *,
                 loss_above_one: bool | None = None, grouped: bool = False) -> None:
        #: whether an ID row has a loss above 1 (the correct classification rate needs <= 1)
        self.loss_above_one = (bool(np.any(w_loss > w_id)) if loss_above_one is None
                               else loss_above_one)
        if s.shape[1] == 1 and not grouped:
            values, _, (w_id, w_ood, w_loss) = group_totals(s[:, 0], w_id, w_ood, w_loss)
            s = values[:, None]
        #: the power of two the scores were divided by (:func:`_unit_of`): a threshold on
        #: ``s`` is ``unit`` times smaller than on the scores given
        self.unit = _unit_of(s)
        if self.unit != 1.0:
            s = s / self.unit
        self.s, self.w_id, self.w_ood, self.w_loss = s, w_id, w_ood, w_loss
        self.n_id = float(w_id.sum())
        self.n_ood = float(w_ood.sum())
        # the rows in each grid direction's order (:meth:`keep_orders`), and those with the
        # running masses (:meth:`grid`), per number of directions and tie rule (rounded, or exact)
        self._orders: dict[tuple[int, bool], list[GridOrders]] = {}
        self._grid: dict[tuple[int, bool], list[tuple[GridOrders, RunningMasses]]] = {}
        self._drawn: NDArray[np.bool_] | None = None  # a resample's rows drawn at least once
        self._compact: list[NDArray[Any]] | None = None  # the weights as the grid gathers them

    @classmethod
    def of(cls, scores: Any, is_ood: Any, losses: Any,
           sample_weight: Any = None) -> Sample:
        """The sample of arrays, or of a :class:`~abstain.ScoreTable` given as ``scores``."""
        if isinstance(scores, PairTable):
            return cls.from_pairs(scores, {"is_ood": is_ood, "losses": losses,
                                           "sample_weight": sample_weight})
        table = table_or_none(scores, {"is_ood": is_ood, "losses": losses,
                                       "sample_weight": sample_weight})
        if table is None:
            return cls.of_rows(scores, is_ood, losses, sample_weight)
        return cls.from_table(table)

    @classmethod
    def of_rows(cls, scores: Any, is_ood: Any, losses: Any, sample_weight: Any) -> Sample:
        """The sample of arrays (validated as :func:`validate_sample` does).

        One score column of many rows with no sample weights and 0/1 losses (or none) is
        grouped straight from the rows' classes by :func:`row_groups`: the same group
        totals as the float weights give (exact counts), without building and checking
        them row by row. Inside :func:`one_sample_per_rows`, the same sample for the same
        array objects.
        """
        def build() -> Sample:
            if sample_weight is None:
                g = row_groups(scores, is_ood, losses)
                if g is not None:
                    return cls.of_groups(g)
            return cls(*validate_sample(scores, is_ood, losses, sample_weight))

        return shared_sample((scores, is_ood, losses, sample_weight), build)

    @classmethod
    def of_validated(cls, scores: Any, is_ood: Any, losses: Any, sample_weight: Any,
                     ) -> Sample:
        """The sample of arrays by :func:`validate_sample` (no grouping of their classes
        tried: a caller's own attempt just failed), shared as :meth:`of_rows`."""
        return shared_sample((scores, is_ood, losses, sample_weight), lambda: cls(
            *validate_sample(scores, is_ood, losses, sample_weight)))

    @classmethod
    def of_groups(cls, g: CodeGroups) -> Sample:
        """The sample of the tie groups of :func:`row_groups`."""
        w_id = g.count_of([0, 2], np.float64)
        w_ood = g.count_of([1], np.float64)
        w_loss = g.count_of([2], np.float64)
        return cls(g.values[:, None], w_id, w_ood, w_loss, loss_above_one=False, grouped=True)

    @classmethod
    def from_table(cls, table: ScoreTable) -> Sample:
        """The sample of a table built with ``is_ood`` (one score column); inside
        :func:`one_sample_per_table`, the same sample for the same table object."""
        shared = _TABLE_SAMPLES.get()
        if shared is not None and id(table) in shared and shared[id(table)][0] is table:
            return shared[id(table)][1]
        if table.ood_counts is None:
            raise ValueError("this ScoreTable has no OOD marks; the OOD metrics and OOD rules "
                             "take a table built with is_ood.")
        sample = cls._of_totals(table.values[:, None], table.id_counts, table.ood_counts,
                                table.loss_sums, table.max_loss, "ScoreTable")
        if shared is not None:
            shared[id(table)] = (table, sample)
        return sample

    @classmethod
    def from_pairs(cls, table: PairTable, rest: dict[str, Any]) -> Sample:
        """The two-score sample of a :class:`~abstain.PairTable` (``rest``: the arguments
        that must then be omitted)."""
        check_whole_table(table, rest)
        return cls._of_totals(table.values, table.id_counts, table.ood_counts,
                              table.loss_sums, table.max_loss, "PairTable")

    @classmethod
    def _of_totals(cls, s: NDArray[np.float64], id_counts: Any, ood_counts: Any,
                   loss_sums: NDArray[np.float64], max_loss: float, kind: str) -> Sample:
        """The sample of per-score (or per-pair) totals, checked as the rows are."""
        w_ood = ood_counts.astype(np.float64)
        w_id = id_counts.astype(np.float64)
        if not (w_id.sum() > 0 and w_ood.sum() > 0):
            what = "OOD" if w_ood.sum() > 0 else "ID"
            raise ValueError("is_ood must contain both ID (False) and OOD (True) samples; got "
                             f"only {what} in the {kind}.")
        check_loss_mass(float(loss_sums.sum()), None)
        return cls(s, w_id, w_ood, loss_sums, loss_above_one=max_loss > 1.0)

    def directions(self, search: str, n_directions: int) -> NDArray[np.float64]:
        if self.s.shape[1] == 1:
            return np.ones((1, 1))
        return grid_weights(n_directions)

    def grid(self, n_directions: int, exact: bool = False,
             ) -> Iterator[tuple[GridOrders, RunningMasses]]:
        """Per batch of the grid's directions (one score: the score itself), the rows in
        each direction's order and the running ID, OOD and loss masses in it
        (:class:`~abstain._ood_search.search.RunningMasses`, leading 0 included, each summed
        when first read). Kept by the sample where all batches together hold at most
        ``GRID_CACHE`` entries, so the metrics of one sample share them; else sorted again
        on each call.

        The tie groups are those of the rounded projections, as a rule fitted on the grid
        applies them; with ``exact`` (the metrics' envelopes) those of the exact
        projections (:func:`~abstain._core.exact.refine_projections`): rounding can tie a
        point with one neighbour on a line and not with the other (``(2, 2)`` with
        ``(1, 3)``, not with ``(3, 1)``, at 45 degrees), an order no direction gives, and an
        envelope of such orders rose above the exact one."""
        for items in self._batches(n_directions, (exact,)):
            item = items.pop(exact)
            yield item
            del item  # not held while the next batch is sorted

    def grid_both(self, n_directions: int,
                  ) -> Iterator[tuple[tuple[GridOrders, RunningMasses],
                                      tuple[GridOrders, RunningMasses]]]:
        """:meth:`grid` with the rounded and with the exact tie groups, per batch, from one
        sort of each direction (the two share their orders and running masses where no
        projections are near): the rule search and the envelopes of one pass."""
        for items in self._batches(n_directions, (False, True)):
            pair = items.pop(False), items.pop(True)
            yield pair
            del pair  # not held while the next batch is sorted

    def _batches(self, n_directions: int, flags: tuple[bool, ...],
                 ) -> Iterator[dict[bool, tuple[GridOrders, RunningMasses]]]:
        """Per batch, :meth:`grid`'s item for each tie rule of ``flags`` (``exact`` or not):
        from the kept items, the kept orders (:meth:`keep_orders`, a resample's) or one
        sort of each direction."""
        if all((n_directions, f) in self._grid for f in flags):
            yield from (dict(zip(flags, items, strict=True)) for items in
                        zip(*(self._grid[n_directions, f] for f in flags), strict=True))
            return
        w = self.directions("grid", n_directions)
        n = self.s.shape[0]
        keep = n * w.shape[0] <= GRID_CACHE
        kept = {f: self._orders.get((n_directions, f)) for f in flags}
        out: dict[bool, list[tuple[GridOrders, RunningMasses]]] = {f: [] for f in flags}
        for k, (b0, b1) in enumerate(grid_batches(n, w.shape[0])):
            orders: dict[bool, GridOrders] = {}
            for f in flags:
                stored = kept[f]
                if stored is not None:
                    orders[f] = stored[k]
            if len(orders) < len(flags):
                orders = dict(zip(flags, self._sorted(w[b0:b1], flags), strict=True))
            items: dict[bool, tuple[GridOrders, RunningMasses]] = {}
            for f in flags:  # orders shared by both rules share their running masses
                o = orders[f]
                same = [g for g in items if orders[g] is o]
                # (or those of the directions the two share, GridOrders.base)
                like = [g for g in items if o.base is not None and o.base[0] is orders[g]]
                items[f] = (o, items[same[0]][1] if same else RunningMasses(
                    o, self.compact_weights(), items[like[0]][1] if like else None))
                if keep:
                    out[f].append(items[f])
            del orders
            yield items
            del items  # not held while the next batch is sorted
        if keep:
            for f in flags:
                self._grid[n_directions, f] = out[f]

    def _sorted(self, w: F64, flags: tuple[bool, ...]) -> tuple[GridOrders, ...]:
        """The orders of the directions ``w`` for each tie rule of ``flags``, from one sort
        (a resample's drawn rows alone; one score: its groups, ascending and distinct)."""
        n = self.s.shape[0]
        if self.s.shape[1] == 1:
            o = GridOrders(np.arange(n)[None, :], self.s.T, np.ones((1, max(n - 1, 0)), bool))
            return (o,) * len(flags)
        if len(flags) == 1:
            out: tuple[GridOrders, ...] = (grid_orders(self.s, w, flags[0]),)
        else:
            out = grid_orders_both(self.s, w)
        if self._drawn is not None:
            out = tuple(_draw_each(out, self._drawn, {}))
        return out

    def compact_weights(self) -> list[NDArray[Any]]:
        """The ID, OOD and loss weights as the grid's running sums gather them
        (:func:`~abstain._ood_search.search.compact_weights`), converted once per sample."""
        if self._compact is None:
            self._compact = [compact_weights(v) for v in (self.w_id, self.w_ood, self.w_loss)]
        return self._compact

    def keep_orders(self, n_directions: int) -> bool:
        """Sort the grid's directions once and keep their orders, with the rounded and the
        exact tie groups (:func:`~abstain._ood_search.search.grid_orders_both`), for
        :meth:`resampled` (where they fit in ``GRID_CACHE`` entries); whether they are
        kept."""
        w = self.directions("grid", n_directions)
        n = self.s.shape[0]
        if n * w.shape[0] > GRID_CACHE:
            return False
        if (n_directions, True) not in self._orders:
            rounded, exact = [], []
            weights = (self.w_id, self.w_ood, self.w_loss)
            for b0, b1 in grid_batches(n, w.shape[0]):
                r, e = self._sorted(w[b0:b1], (False, True))
                g = r.grouped()
                # the knot blocks serve the envelopes alone: the rounded orders need them
                # where the exact ones are these, or these but for a few directions
                if e is r or e.base is not None:
                    g = g.blocked(*weights)
                rounded.append(g)
                exact.append(g if e is r else e.grouped().blocked(*weights)._replace(
                    base=None if e.base is None else (g, e.base[1])))
            self._orders[n_directions, False] = rounded
            self._orders[n_directions, True] = exact
        return True

    def resampled(self, counts: NDArray[np.integer]) -> Sample:
        """The sample of the resample that draws row ``i`` ``counts[i]`` times: the same
        rows with every weight multiplied by its count. The grid's orders kept by
        :meth:`keep_orders` are kept for the drawn rows, so the grid metrics and searches of
        the resample sort nothing; without them the sample holds the drawn rows alone. The
        masses equal those of the drawn rows (the same sums, a row drawn ``k`` times
        weighted ``k``; exact for whole-number weights)."""
        c = np.asarray(counts, dtype=np.float64)
        drawn = c > 0
        above = bool(np.any(drawn & (self.w_loss > self.w_id)))
        if not self._orders:
            out = Sample(self.s[drawn], (self.w_id * c)[drawn], (self.w_ood * c)[drawn],
                         (self.w_loss * c)[drawn], loss_above_one=above, grouped=True)
            out.unit = self.unit  # the scores were divided already
            return out
        out = Sample(self.s, self.w_id * c, self.w_ood * c, self.w_loss * c,
                     loss_above_one=above, grouped=True)
        out.unit = self.unit
        done: dict[int, GridOrders] = {}
        for key, batches in self._orders.items():
            out._orders[key] = _draw_each(batches, drawn, done)
        out._drawn = drawn
        return out

    def run(self, search: str, n_directions: int, ratio: Constraint | None,
            slopes: tuple[float, float, float] | None,
            record: Callable[[F64, F64], None] | None = None) -> Found | None:
        """Best ``(point, weights, threshold, anchor)`` (:data:`Found`).

        ``record`` is given the knots of every direction that the sweep visits (one score,
        or the grid; not the exact search, which visits directions by branch and bound):
        see :func:`~abstain._ood_search.search.grid_search`.
        """
        if search == "exact" and self.s.shape[1] == 2:
            rows = self.weighted_rows()
            if self.unit == 1.0 and rows.size and float(np.max(np.abs(rows))) >= TOP:
                # not divided by 16 (a subnormal score would be lost): the offsets between
                # points overflow, and the directions found from them are not numbers
                raise ValueError(
                    "the scores reach 2**1020 (about 1.1e307) and also hold values below "
                    "2**-1018, so the exact search cannot divide them to keep the offsets "
                    "between points finite; scale the score columns, or use search='grid'.")
            return self._exact(ratio, slopes)
        found: list[tuple[Best, float] | None] = []
        for orders, cum in self.grid(n_directions):
            found += grid_best(orders, cum, ratio, slopes, self.n_id, self.n_ood, record=record)
            del orders, cum  # not held while the next batch is sorted
        return self.best_of(found, n_directions, slopes)

    def best_of(self, found: list[tuple[Best, float] | None], n_directions: int,
                slopes: tuple[float, float, float] | None) -> Found | None:
        """The best of the grid's directions' rules ``found`` (:func:`grid_best`, one per
        direction, None where a direction has none), as :meth:`run` picks it."""
        best: Found | None = None
        for w, f in zip(self.directions("grid", n_directions), found, strict=True):
            if f is None:
                continue
            r, thr = f
            if best is None or better(r, False, best[0], False, linear=slopes is not None):
                best = (r, w, thr, None)
        return best

    def weighted_rows(self) -> F64:
        """The scores of the rows of positive weight (a row of weight 0 is no row)."""
        return self.s[(self.w_id > 0) | (self.w_ood > 0)]

    def pairs(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The distinct score pairs (m, 2), ascending, and their ID, OOD and loss masses
        (m, 3); pairs of rows of weight 0 alone are left out (no anchor of the exact search,
        which would otherwise pick among equal rules by them)."""
        pts, inv = np.unique(self.s, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        x = np.zeros((pts.shape[0], 3))
        for j, w in enumerate((self.w_id, self.w_ood, self.w_loss)):
            x[:, j] = np.bincount(inv, weights=w, minlength=pts.shape[0])
        mass = (x[:, 0] > 0) | (x[:, 1] > 0)
        return (pts, x) if mass.all() else (pts[mass], x[mass])

    def _exact(self, ratio: Constraint | None,
               slopes: tuple[float, float, float] | None) -> Found | None:
        pts, x = self.pairs()
        state = branch_search(pts, x, ratio, slopes, self.n_id, self.n_ood)
        if state is None:
            return None
        e = state.best.at
        threshold = float(project(pts[e : e + 1], state.weights)[0])
        return state.best, state.weights, threshold, pts[e].copy()


#: The most directions a grid takes (a million directions of a few rows already take hours;
#: beyond, the grid's arrays outgrow memory, and 2**63 ended in an AssertionError).
MAX_DIRECTIONS = 1_000_000


def check_directions(n_directions: Any) -> int:
    """``n_directions`` as an int in ``[1, MAX_DIRECTIONS]``."""
    d = check_int("n_directions", n_directions, 1)
    if d > MAX_DIRECTIONS:
        raise ValueError(f"n_directions must be an integer in [1, {MAX_DIRECTIONS}]; got {d}.")
    return d


def check_search(search: Any, n_directions: Any) -> tuple[str, int]:
    """Validate a direction search: ``search`` in :data:`SEARCH`, ``n_directions`` an int in
    ``[1, MAX_DIRECTIONS]``."""
    return check_choice("search", search, SEARCH), check_directions(n_directions)


#: The ``search`` option of a pair's metrics: :func:`abstain.metrics.evaluate_ood`, the
#: displays and the command line (the estimators' own ``search`` is one of :data:`SEARCH`).
PAIR_SEARCH = ("auto", "exact", "grid")


def check_pair_search(search: Any) -> str:
    """Validate the ``search`` option of a pair's metrics and return it.

    One of ``"auto"``, ``"exact"`` and ``"grid"`` (:func:`abstain.metrics.evaluate_ood`,
    the displays and ``abstain evaluate`` take it); anything else is a ``ValueError``
    naming ``search``.

    Examples
    --------
    >>> from abstain.metrics import check_pair_search
    >>> check_pair_search("exact")
    'exact'
    >>> check_pair_search("fast")
    Traceback (most recent call last):
    ...
    ValueError: search must be one of 'auto', 'exact', 'grid'; got 'fast'.
    """
    return check_choice("search", search, PAIR_SEARCH)


class ResolvedSearch(NamedTuple):
    """How a pair's metrics are computed (:func:`resolve_search`)."""

    how: str | None
    """None for anything but two score columns, else ``"exact"``, ``"grid"`` or
    ``"scaled grid"``."""
    columns: Any
    """The columns (or table) to compute them on."""
    search: str | None
    """The ``search`` keyword of a pair metric on ``columns``: ``"exact"``, or ``"grid"``
    for both grids; None for anything but two score columns."""


def resolve_search(scores: Any, search: str = "auto", *,
                   resampled: bool = False) -> ResolvedSearch:
    """How :func:`abstain.metrics.evaluate_ood` computes the metrics of ``scores`` under
    ``search`` (``"auto"``, ``"exact"`` or ``"grid"``, checked by
    :func:`check_pair_search`), the columns it computes them on, and the ``search``
    keyword of a pair metric on them: ``(how, columns, search)``.

    ``how`` is None for anything but two score columns (returned as given), else
    ``"exact"``, ``"grid"`` or ``"scaled grid"``; ``"auto"`` gives ``"exact"`` up to
    :data:`AUTO_EXACT_ROWS` rows and, above, ``"scaled grid"`` with each column divided by
    its standard deviation over the rows (1 for a constant column): a grid that no positive
    rescaling of a column changes. The keyword is ``"exact"`` when ``how`` is ``"exact"``,
    else ``"grid"`` (None when ``how`` is). A :class:`PairTable` is resolved the same way
    and returned as a table. The deviations come from exact sums rounded once
    (:func:`~abstain._core.exact.exact_deviation`), so the rows in any order and their table
    get the same columns, bit for bit, on every CPU.

    With ``resampled`` (the metrics will be bootstrapped), ``"auto"`` gives ``"scaled grid"``
    at every size: the point value and every resample's are then the same statistic, the
    grid of the columns divided by the rows' deviations, and the resamples keep the rows'
    directions and their orders (:meth:`Sample.resampled`), where the exact search would
    run again on every resample.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import resolve_search
    >>> s = np.array([[0.1, 10.0], [0.4, 30.0], [0.3, 20.0], [0.9, 40.0]])
    >>> resolve_search(s).how, resolve_search(s, resampled=True).how
    ('exact', 'scaled grid')
    >>> resolve_search(s, resampled=True).columns.std(axis=0)
    array([1., 1.])
    """
    how, columns = _resolve(scores, check_pair_search(search), resampled)
    keyword = None if how is None else "exact" if how == "exact" else "grid"
    return ResolvedSearch(how, columns, keyword)


def _resolve(scores: Any, search: str, resampled: bool = False) -> tuple[str | None, Any]:
    """``how`` and the columns of :func:`resolve_search`, for a checked ``search``."""
    if isinstance(scores, PairTable):
        n, s = scores.n, scores.values
    elif np.ndim(scores) != 2 or np.shape(scores)[1] != 2:
        return None, scores
    else:
        s = as_real_array(scores, "scores")
        n = s.shape[0]
    if search != "auto":
        return search, scores if isinstance(scores, PairTable) else s
    if n <= AUTO_EXACT_ROWS and not resampled:
        return "exact", scores if isinstance(scores, PairTable) else s
    # Each column is divided by a power of two at least its largest magnitude first (exact),
    # so that the squares of a deviation never overflow (columns near 1e300 made it inf and
    # dropped the column from the pair); the quotient is the same to the last bit.
    top = np.max(np.abs(s), axis=0) if s.shape[0] else np.ones(2)
    # (scaled by ldexp: 2.0 ** 1024, the power for a column reaching 2**1023, overflows to
    # inf, which zeroed the column)
    unit = np.ldexp(s, -np.where(top > 0, np.frexp(top)[1], 0))
    # the deviations over the rows from exact sums (of a table's pairs times their counts),
    # so the rows in any order and their table divide by the same floats on every CPU: their
    # last bits decide which pairs' projections tie on the grid
    counts = scores.counts.astype(np.float64) if isinstance(scores, PairTable) else None
    sd = np.array([exact_deviation(unit[:, j], counts) if n else 0.0 for j in range(2)])
    if isinstance(scores, PairTable):
        scaled = copy.copy(scores)
        scaled.values = unit / np.where(sd > 0, sd, 1.0)
        return "scaled grid", scaled
    return "scaled grid", unit / np.where(sd > 0, sd, 1.0)


def _draw_each(orders: Sequence[GridOrders], rows: NDArray[np.bool_],
               done: dict[int, GridOrders]) -> list[GridOrders]:
    """``o.drawn(rows)`` of each of ``orders``, once per object (``done``: those drawn so
    far, by ``id``), so orders that both tie rules share stay shared. Orders that equal
    another's except in some directions (:attr:`GridOrders.base`) are the other's drawn
    orders with those directions drawn again, and keep saying so."""
    for o in orders:
        if id(o) in done:
            continue
        if o.base is None:
            done[id(o)] = o.drawn(rows)
            continue
        other, at = o.base
        if id(other) not in done:
            done[id(other)] = other.drawn(rows)
        like = done[id(other)]
        part = o.part(at).drawn(rows)
        order, change = like.order.copy(), like.change.copy()
        order[at], change[at] = part.order, part.change
        knot = None
        if like.knot is not None and part.knot is not None:
            knot = like.knot.copy()
            knot[at] = part.knot
        done[id(o)] = GridOrders(order, o.proj, change, base=(like, at), knot=knot)
    return [done[id(o)] for o in orders]


def tpr_fpr_constraint(sample: Sample, tpr: float, fpr: float) -> Constraint:
    """TPR >= ``tpr`` and FPR <= ``fpr`` as masses of ``sample`` (problem 13)."""
    return Constraint(tpr * sample.n_id, fpr * sample.n_ood, 0.0)


def ood_fraction(sample: Sample) -> float:
    """The OOD share of the sample's weight: the default OOD prior."""
    return sample.n_ood / (sample.n_id + sample.n_ood)


def precision_recall_constraint(sample: Sample, precision: float, recall: float,
                                prior: float) -> Constraint:
    """Recall >= ``recall`` and precision >= ``precision`` at OOD prior ``prior`` (problem 14).

    ``precision >= kappa`` is ``FPR <= (1 - pi)(1 - kappa) / (pi kappa) * TPR``: linear in
    the accepted masses.
    """
    # divided in turn: prior * precision underflows to 0 for a precision near 5e-324; a slope
    # beyond float64 is the largest float (the precision bound then binds nothing accepted)
    k = (1 - prior) * (1 - precision) / prior / precision * sample.n_ood / sample.n_id
    return Constraint(recall * sample.n_id, 0.0, min(k, sys.float_info.max))
