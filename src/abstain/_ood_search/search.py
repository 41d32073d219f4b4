"""Sweeps shared by the OOD selectors and the OOD metrics.

A validation sample has, per row, a score (one column, or two combined by a
direction), an ID weight, an OOD weight and the loss weight of an ID row. The
rules are the randomised threshold rules of the repository's one tie rule:
accept scores below ``threshold``, accept the whole tie group at ``threshold``
with one probability ``nu``, reject scores above it. Along the sorted tie groups
the accepted ID mass ``I``, OOD mass ``O`` and ID loss ``L`` of such a rule trace a
piecewise-linear path through the knots (the running totals at group ends); every
rule is a point ``knot[g] + nu * (knot[g + 1] - knot[g])`` of one segment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from .._core.exact import cos_sin, projections_near, refine_projections, sorted_events
from .._core.groups import group_totals, stable_orders, take_rows
from .best import F64, RTOL, Best, Constraint, better, rows_best_linear, rows_best_ratio


class Knots(NamedTuple):
    """Tie groups of one score, ascending, with running totals (leading 0 included).

    ``values`` has shape (G,); ``I``, ``O``, ``L`` have shape (G + 1,).
    """

    values: F64
    I: F64  # noqa: E741
    O: F64  # noqa: E741
    L: F64


def knots(score: F64, w_id: F64, w_ood: F64, w_loss: F64) -> Knots:
    """Group ``score`` with the shared grouping and total the three weights per group."""
    values, _, totals = group_totals(score, w_id, w_ood, w_loss)
    i, o, loss = (running_sums(t) for t in totals)
    return Knots(values, i, o, loss)


def running_sums(w: F64) -> F64:
    """Running sums of ``w`` after a leading 0 (one array, no concatenation)."""
    run = np.empty(w.size + 1)
    run[0] = 0.0
    np.cumsum(w, out=run[1:])
    return run


def least_fpr(i: F64, o: F64, n_id: float, n_ood: float, tpr: float) -> float:
    """The least FPR with TPR >= ``tpr`` on one direction's knots (running ID and OOD masses
    ``i``, ``o``, leading 0 included): the first knot that meets it, or the point of the
    segment that reaches it (the tie group at the threshold accepted with one probability).
    """
    one = np.zeros(1, dtype=np.intp)
    return float(least_fpr_rows(i, o, one, np.array([i.size]), n_id, n_ood, tpr)[0])


def least_fpr_rows(i: F64, o: F64, starts: NDArray[np.intp], sizes: NDArray[np.intp],
                   n_id: float, n_ood: float, tpr: float) -> F64:
    """:func:`least_fpr` of several directions at once: row ``r``'s knots are
    ``i[starts[r]:starts[r] + sizes[r]]`` (and ``o``), each row's leading 0 included."""
    x = i / n_id
    t = tpr * (1 - 1e-12)
    # the first knot at or above the target (the last where none is), per row
    below = np.add.reduceat((x < t).astype(np.intp), starts) if x.size else starts * 0
    j = starts + np.minimum(below, sizes - 1)
    prev = np.maximum(j - 1, starts)
    y0, y1 = o[prev] / n_ood, o[j] / n_ood
    at_knot = (x[j] <= tpr) | (j == starts)  # a knot meets it: the first such has the least FPR
    with np.errstate(divide="ignore", invalid="ignore"):
        # between the last knot below the target and the next one
        inside = y0 + (tpr - x[prev]) / (x[j] - x[prev]) * (y1 - y0)
    return np.where(at_knot, y1, inside)


def most_recall(i: F64, o: F64, n_id: float, n_ood: float, precision: float,
                prior: float) -> float:
    """The highest recall (TPR) with precision >= ``precision`` at OOD prior ``prior`` on one
    direction's knots (as in :func:`least_fpr`).

    Precision >= p is ``p pi FPR <= (1 - p)(1 - pi) TPR``, linear along each segment, so
    the answer is at the last knot meeting it or where the next segment crosses it.
    """
    fpr, tpr = o / n_ood, i / n_id
    a, b = precision * prior * fpr, (1 - precision) * (1 - prior) * tpr
    g = a - b
    ok = np.flatnonzero(g <= 1e-12 * (a + b))  # up to the round-off of the terms, any prior
    j = int(ok[-1])
    if j == tpr.size - 1:
        return float(tpr[j])
    f = g[j] / (g[j] - g[j + 1]) if g[j] < 0 else 0.0
    return float(tpr[j] + f * (tpr[j + 1] - tpr[j]))


def grid_angles(n_directions: int) -> F64:
    """The paper's grid: ``n_directions`` angles ``k * pi / n_directions``, k = 0..d-1.

    It holds angle 0 (the first score alone) and, for even d, pi/2 (the second alone).
    """
    return np.arange(n_directions, dtype=np.float64) * (math.pi / n_directions)


def project(scores: F64, weights: F64) -> F64:
    """Combined score ``scores @ weights`` (one multiply-add per column, in order)."""
    out = scores[:, 0] * weights[0]
    for j in range(1, scores.shape[1]):
        out = out + scores[:, j] * weights[j]
    return out


def along(r: Any, g: Any, wr: Any, wg: Any) -> F64:
    """Rounded projections ``r * wr + g * wg`` (broadcast) that the searches sort and bound
    with: every decision they take on them allows for their rounding (exact tie groups,
    margins), so their last bits may differ without changing a result (tested by
    perturbing them)."""
    return np.asarray(r * wr + g * wg, dtype=np.float64)


def grid_weights(n_directions: int) -> F64:
    """Unit weight vectors ``(cos a, sin a)`` of :func:`grid_angles`, shape (d, 2)
    (:func:`unit_weights`)."""
    return unit_weights(grid_angles(n_directions))


def unit_weights(angles: F64) -> F64:
    """Unit weight vectors ``(cos a, sin a)`` of ``angles``, shape (d, 2).

    Entries below 1e-12 in magnitude are set to 0, so angle pi/2 is exactly the
    second score (``cos(pi/2)`` is 6e-17 in float64, which would break its ties). The
    cosines and sines come from :func:`~abstain._core.exact.cos_sin` (basic operations
    only), so a direction is the same float vector on every CPU.
    """
    c, s = cos_sin(np.asarray(angles, dtype=np.float64))
    w = np.stack((c, s), axis=1)
    w[np.abs(w) < 1e-12] = 0.0
    return w


class State(NamedTuple):
    """Where the exact search found its best rule."""

    best: Best
    weights: F64
    angle: float
    critical: bool


# ------------------------------------------------------------------ row-wise (batched) sweeps
# Elements of one (rows, columns) work array; batches of directions or anchors are cut so
# that every temporary stays near 16 MB.
_BATCH_ELEMS = 1 << 21


class GridOrders(NamedTuple):
    """The rows in the order of each direction of a batch: ``order`` (d, n), the rows'
    projections ``proj`` (d, n, in row order) and ``change`` (d, n - 1), True where the next
    sorted row starts a new tie group."""

    order: NDArray[np.intp]
    proj: F64
    change: NDArray[np.bool_]
    #: the tie group of each sorted position (``change`` summed), kept by :meth:`grouped`
    group: NDArray[np.int32] | None = None
    #: ``(other, rows)`` where these are the orders ``other`` (of the same directions)
    #: except in the directions ``rows``: the exact tie groups where they differ from the
    #: rounded ones in a few directions (:func:`grid_orders_both`), whose running masses
    #: are then those of ``other`` with the ``rows`` summed again (:class:`RunningMasses`)
    base: tuple[GridOrders, NDArray[np.intp]] | None = None
    #: the knot block of each sorted position (:meth:`blocked`), as ``group``
    block: NDArray[np.int32] | None = None
    #: (d, n - 1), True where the next sorted row starts a new knot block: the orders of a
    #: resample's drawn rows (:meth:`drawn`) of orders with ``block``
    knot: NDArray[np.bool_] | None = None

    def part(self, rows: NDArray[np.intp]) -> GridOrders:
        """The orders of the directions ``rows`` alone."""
        return GridOrders(self.order[rows], self.proj[rows], self.change[rows],
                          None if self.group is None else self.group[rows],
                          block=None if self.block is None else self.block[rows])

    def blocked(self, w_id: F64, w_ood: F64, w_loss: F64) -> GridOrders:
        """These orders with ``block``: each direction's tie groups cut into knot blocks,
        runs of groups that move only the ID and loss masses (a vertical run of the
        directions' curves of accepted ID or correct mass against accepted OOD mass), runs
        of groups that move only the OOD mass (a horizontal run), each group that moves both
        and each run of groups of no weight. The rows ``w_id``, ``w_ood`` and ``w_loss``
        (per row, by row) of any resample that draws some rows have the same blocks (a
        drawn row's weights are a positive multiple of these), so inside a block the
        envelopes' knots between its ends are never the last at or below an OOD mass (a
        vertical run) or lie on the line between them (a horizontal one): :meth:`drawn`
        then keeps where blocks start (``knot``), and the envelopes read the blocks' ends
        alone, the same values."""
        order = self.order
        d, n = order.shape
        if not n:
            return self._replace(block=np.zeros((d, n), dtype=np.int32))
        moves = ((w_id != 0) | (w_loss != 0)).astype(np.uint8)
        moves |= (w_ood != 0).astype(np.uint8) << 1
        bits = moves[order]
        starts = np.ones((d, n), dtype=bool)
        starts[:, 1:] = self.change
        first = np.flatnonzero(starts)
        kind = np.bitwise_or.reduceat(bits.reshape(-1), first)
        new = np.ones(kind.size, dtype=bool)
        new[1:] = (kind[1:] != kind[:-1]) | (kind[1:] == 3)
        new[np.cumsum(np.count_nonzero(starts, axis=1))[:-1]] = True  # a direction's first
        block = np.zeros(d * n, dtype=np.int32)
        block[first] = new
        np.cumsum(block, out=block)
        return self._replace(block=block.reshape(d, n))

    def grouped(self) -> GridOrders:
        """These orders with ``group``, which :meth:`drawn` then reads instead of summing
        ``change`` again for every resample."""
        group = np.zeros(self.order.shape, dtype=np.int32)
        np.cumsum(self.change, axis=1, out=group[:, 1:])
        return self._replace(group=group)

    def value(self, k: int, p: int) -> float:
        """The projection of direction ``k``'s row at sorted position ``p``."""
        return float(self.proj[k, self.order[k, p]])

    def drawn(self, rows: NDArray[np.bool_]) -> GridOrders:
        """The orders of the rows marked in ``rows`` alone (a resample's drawn rows): every
        direction keeps the same rows, so the result stays rectangular. Two drawn rows are
        in one tie group iff no group starts between them here."""
        at = np.flatnonzero(rows[self.order])  # one scan; then two ordered lookups
        k = int(np.count_nonzero(rows))
        order = np.take(self.order.reshape(-1), at).reshape(-1, k)
        group = self.group if self.group is not None else self.grouped().group
        assert group is not None
        g = np.take(group.reshape(-1), at).reshape(-1, k)
        knot = None
        if self.block is not None:
            bl = np.take(self.block.reshape(-1), at).reshape(-1, k)
            knot = bl[:, 1:] != bl[:, :-1]
        return GridOrders(order, self.proj, g[:, 1:] != g[:, :-1], knot=knot)


def grid_orders(scores: F64, w: F64, exact: bool = False) -> GridOrders:
    """The :class:`GridOrders` of the directions ``w`` (rows): the rounded projections
    sorted stably (ties in row order, :func:`~abstain._core.groups.stable_orders`), or with
    ``exact`` (two columns) the exact order and tie groups of
    :func:`~abstain._core.exact.refine_projections`."""
    if scores.shape[1] == 2:
        s = along(scores[None, :, 0], scores[None, :, 1], w[:, 0:1], w[:, 1:2])
    else:
        s = scores[None, :, 0] * w[:, 0:1]
        for j in range(1, scores.shape[1]):
            s = s + scores[None, :, j] * w[:, j : j + 1]
    order, change = stable_orders(s)  # tie order fixes the sums
    if exact:
        refine_projections(scores[:, 0], scores[:, 1], w, s, order, change)
    return GridOrders(order, s, change)


def grid_orders_both(scores: F64, w: F64) -> tuple[GridOrders, GridOrders]:
    """:func:`grid_orders` of two columns, rounded and ``exact``, from one sort: the exact
    orders are the rounded ones (the same object) where ordering the near neighbours
    (:func:`~abstain._core.exact.projections_near`) exactly changes no direction's order
    or tie groups, else a copy with the near runs ordered exactly."""
    rounded = grid_orders(scores, w)
    pr, pg = scores[:, 0], scores[:, 1]
    near = projections_near(pr, pg, w, rounded.proj, rounded.order)
    if not near.any():
        return rounded, rounded
    order, change = rounded.order.copy(), rounded.change.copy()
    refine_projections(pr, pg, w, rounded.proj, order, change, near)
    # only the directions with near neighbours may differ, and often none does (the
    # rounded tie groups are exact): those that do are found, and where they are at most
    # half, the exact orders say so (their running masses are then the rounded ones',
    # those directions summed again)
    near_rows = np.flatnonzero(near.any(axis=1))
    differ = ((order[near_rows] != rounded.order[near_rows]).any(axis=1)
              | (change[near_rows] != rounded.change[near_rows]).any(axis=1))
    rows = near_rows[differ]
    if not rows.size:
        return rounded, rounded
    base = (rounded, rows) if 2 * rows.size <= near.shape[0] else None
    return rounded, GridOrders(order, rounded.proj, change, base=base)


def grid_batches(n: int, d: int) -> Iterator[tuple[int, int]]:
    """Batches ``[b0, b1)`` of ``d`` directions whose (batch, n) work arrays stay near 16 MB."""
    step = max(1, _BATCH_ELEMS // max(n, 1))
    for b0 in range(0, d, step):
        yield b0, min(d, b0 + step)


#: :func:`compact_weights` keeps whole-number weights as integers below this total.
_WHOLE_SUMS = float(2**52)


def compact_weights(v: F64) -> NDArray[Any]:
    """The per-row weights ``v`` as :func:`running_rows` gathers them: whole numbers with an
    absolute sum below 2**52 (counts, 0/1 losses) as the smallest integer type that holds
    them, other weights as they are. The running sums of whole numbers, accumulated in
    float64, are exact, so bit for bit those of the float weights; the smaller array stays
    in cache (a direction's gather and running sums at 1e6 rows: 5 ms instead of 13 ms)."""
    with np.errstate(invalid="ignore"):  # a weight too large for an integer: kept as float
        whole = v.astype(np.int64)
    if not (np.array_equal(whole, v) and float(np.abs(v).sum()) < _WHOLE_SUMS):
        return v
    top = int(np.abs(whole).max(initial=0))
    for kind in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(kind).max:
            return whole.astype(kind)
    return whole


def running_rows(orders: GridOrders, v: NDArray[Any]) -> F64:
    """Running sums of the weights ``v`` (per row, as float64 or :func:`compact_weights`) in
    each direction's order, after a leading 0: shape (d, n + 1), accumulated in float64 in
    that order."""
    d, n = orders.order.shape
    c = np.empty((d, n + 1))
    c[:, 0] = 0.0
    np.cumsum(np.take(v, orders.order), axis=1, dtype=np.float64, out=c[:, 1:])
    return c


class Masses(Protocol):
    """Running masses by column: a list of arrays, or :class:`RunningMasses`."""

    def __getitem__(self, i: int, /) -> F64: ...


class RunningMasses:
    """The running ID, OOD and loss masses (:func:`running_rows`) of one batch of directions,
    ``[0]``, ``[1]`` and ``[2]``, each summed when first read: a metric that reads two of
    them does not pay for the third.

    ``like``: the running masses of ``orders.base``'s orders (:attr:`GridOrders.base`),
    whose directions other than the base's rows are the same: those are copied from it (the
    same sums, in the same order), only the base's rows are summed."""

    def __init__(self, orders: GridOrders, weights: Sequence[NDArray[Any]],
                 like: RunningMasses | None = None) -> None:
        self._orders, self._weights, self._like = orders, weights, like
        self._sums: list[F64 | None] = [None] * len(weights)
        self._rows: NDArray[np.intp] | None = None
        if like is not None:
            assert orders.base is not None
            self._rows = orders.base[1]
            self._orders = orders.part(self._rows)

    def __getitem__(self, i: int) -> F64:
        c = self._sums[i]
        if c is None:
            c = running_rows(self._orders, self._weights[i])
            if self._like is not None:
                whole = self._like[i].copy()
                whole[self._rows] = c
                c = whole
            self._sums[i] = c
        return c


def grid_search(
    scores: F64, weights: F64, w_id: F64, w_ood: F64, w_loss: F64,
    con: Constraint | None, slopes: tuple[float, float, float] | None,
    scale_i: float, scale_o: float, exact: bool = False,
    record: Callable[[F64, F64], None] | None = None,
) -> list[tuple[Best, float] | None]:
    """Best rule and its threshold for each direction (row of ``weights``), or None.

    With ``exact`` (two score columns) the tie groups are those of the exact projections
    on each float direction (:func:`~abstain._core.exact.sorted_projection`), so every
    rule is a state of the exact search whatever the rounding: the exact search seeds its
    incumbent so. Otherwise they are those of the rounded projections, as the fitted rule
    computes them when it is applied.

    For a batch of directions the projected scores form one (b, n) matrix, sorted
    row by row in one call (:func:`grid_orders`); the best point of each row comes from
    :func:`grid_best` on those orders. O(d n log n) time, memory bounded by the batch.

    ``record``, where given, is called with the knots' running ID and OOD masses of each
    direction, in order (leading 0 included, as :func:`knots` gives them): what a fit
    attains besides its best rule (:func:`least_fpr`, :func:`most_recall`) comes from
    this sweep, not from another one.
    """
    out: list[tuple[Best, float] | None] = []
    compact = [compact_weights(v) for v in (w_id, w_ood, w_loss)]
    for b0, b1 in grid_batches(scores.shape[0], weights.shape[0]):
        orders = grid_orders(scores, weights[b0:b1], exact)
        out += grid_best(orders, RunningMasses(orders, compact), con, slopes, scale_i,
                         scale_o, record)
    return out


def grid_best(
    orders: GridOrders, cum: Masses,
    con: Constraint | None, slopes: tuple[float, float, float] | None,
    scale_i: float, scale_o: float,
    record: Callable[[F64, F64], None] | None = None,
) -> list[tuple[Best, float] | None]:
    """:func:`grid_search` on a batch of directions already ordered, with the running ID,
    OOD and loss masses ``cum`` in each direction's order (:func:`running_rows`): the best
    rule and its threshold for each row of ``orders``. The tie groups and the best point of
    each row come from 2-D array operations (no loop over samples); the rules are those of
    :func:`knots` on each direction (segment ``g`` from knot ``g`` to ``g + 1``), chosen by
    :func:`~abstain._ood_search.best.rows_best_ratio` (``con``) or
    :func:`~abstain._ood_search.best.rows_best_linear` (``slopes``, knots only)."""
    order, change = orders.order, orders.change
    rows, n = order.shape
    out: list[tuple[Best, float] | None] = []
    true = np.ones((rows, 1), dtype=bool)
    is_end = np.concatenate((change, true), axis=1)
    if record is not None:
        for k in range(rows):
            at = np.concatenate(([0], np.flatnonzero(is_end[k]) + 1))
            record(cum[0][k, at], cum[1][k, at])
    if con is not None:
        # Segments that can hold a feasible point: I at the group end reaches ``a``
        # and O - k I at one end is within ``b`` (the exact test follows).
        i_end = cum[0][:, 1:]
        cand = is_end & (i_end >= con.a - RTOL * scale_i)
        flat = np.flatnonzero(cand)
        rix, pos = np.divmod(flat, n)
        start = pos if change.all() else _group_starts(change, rix, pos)
        pflat = rix * (n + 1) + start
        eflat = rix * (n + 1) + pos + 1
        c0 = [cum[c].reshape(-1)[pflat] for c in range(3)]
        c1 = [cum[c].reshape(-1)[eflat] for c in range(3)]
        lim = con.b + RTOL * (scale_o + con.k * scale_i)
        sel = np.flatnonzero(
            np.minimum(c0[1] - con.k * c0[0], c1[1] - con.k * c1[0]) <= lim
        )
        r = rows_best_ratio(rix[sel], pos[sel], c0[0][sel], c0[1][sel], c0[2][sel],
                            c1[0][sel] - c0[0][sel], c1[1][sel] - c0[1][sel],
                            c1[2][sel] - c0[2][sel], rows, con, scale_i, scale_o)
        for k in range(rows):
            out.append((r.best(k), orders.value(k, int(r.at[k]))) if r.found[k] else None)
    else:
        assert slopes is not None
        valid = np.concatenate((true, is_end), axis=1)
        r = rows_best_linear(cum[0], cum[1], cum[2], valid, *slopes)
        for k in range(rows):
            j = int(r.at[k])
            out.append((r.best(k), orders.value(k, j - 1) if j > 0 else -math.inf))
    return out


#: Steps back that :func:`_group_starts` takes before it searches the whole row.
_WALK_BACK = 32


def _group_starts(change: NDArray[np.bool_], rix: NDArray[np.intp],
                  pos: NDArray[np.intp]) -> NDArray[np.intp]:
    """Where the tie group ending at each ``(rix, pos)`` starts (``change``: True where the
    next position starts a group). The ends ascend and a row's are all given after its first
    (:func:`grid_best`'s: the ID mass at an end never falls along a row), so a group starts
    one past the previous end; only a row's first group is walked back from its end."""
    start = np.empty_like(pos)
    if pos.size == 0:
        return start
    first = np.ones(pos.size, dtype=bool)
    first[1:] = rix[1:] != rix[:-1]
    start[1:] = pos[:-1] + 1
    f = np.flatnonzero(first)
    r, p = rix[f], pos[f].copy()
    for _ in range(_WALK_BACK):  # p is the group's start once p == 0 or change[r, p - 1]
        back = np.flatnonzero(p > 0)
        back = back[~change[r[back], p[back] - 1]]
        if back.size == 0:
            break
        p[back] -= 1
    else:  # groups longer than the walk: one past the last group end before them
        for k in np.flatnonzero((p > 0) & ~change[r, np.maximum(p, 1) - 1]):
            ends = np.flatnonzero(change[r[k], : p[k]])
            p[k] = ends[-1] + 1 if ends.size else 0
    start[f] = p
    return start


def _anchor_events(points: F64, e: NDArray[np.intp],
                   ) -> tuple[F64, F64, NDArray[np.bool_], NDArray[np.intp], NDArray[np.bool_]]:
    """Differences ``points - points[e]`` (B, m) and the anchors' swaps in exact order.

    The order of anchor ``e`` and point ``p`` changes at the one angle in (0, pi) where
    ``(cos a, sin a)`` is orthogonal to ``p - e``; points with the same first score
    (``dr == 0``, the anchor included) have no swap inside (0, pi) and come last in each
    row. Returns ``dr``, ``dg``, ``zero_r``, ``order`` (B, m: each row's points by
    swap angle, exact: :func:`~abstain._core.exact.sorted_events`) and ``new`` (B, m: True
    where a group of swaps at one exact angle starts; every point without a swap is its
    own group).
    """
    rows, m = e.size, points.shape[0]
    er, eg = points[e, 0][:, None], points[e, 1][:, None]
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: decided exactly
        dr = points[None, :, 0] - er
        dg = points[None, :, 1] - eg
    zero_r = dr == 0
    shape = (rows, m)
    order, new = sorted_events(np.repeat(np.arange(rows), m), np.broadcast_to(er, shape).ravel(),
                               np.broadcast_to(eg, shape).ravel(),
                               np.broadcast_to(points[None, :, 0], shape).ravel(),
                               np.broadcast_to(points[None, :, 1], shape).ravel(), width=m)
    return dr, dg, zero_r, order.reshape(shape) - (np.arange(rows) * m)[:, None], \
        new.reshape(shape)


def swap_normal(dr: float, dg: float) -> F64:
    """The direction in the upper half-plane orthogonal to the offset ``(dr, dg)``
    (``dr != 0``), as ``(-dg, dr)`` or ``(dg, -dr)`` (exact for exact offsets): where the
    two points swap."""
    return np.array([-dg, dr]) if dr > 0 else np.array([dg, -dr])


def _unit(w: F64) -> F64:
    """``w / |w|`` by basic operations, scaled first so that no square under- or overflows."""
    w = w / float(np.max(np.abs(w)))
    return w / math.sqrt(float(w[0] * w[0] + w[1] * w[1]))


def between(w0: F64, w1: F64) -> F64:
    """The unit direction halfway between unit directions ``w0`` and ``w1`` of the upper
    half-plane (angle ``w0`` < angle ``w1``); pi/2 for the whole half-circle."""
    w = w0 + w1
    return np.array([0.0, 1.0]) if not np.any(w) else _unit(w)


def _state_direction(points: F64, e: int, col: int) -> tuple[F64, float]:
    """Weight vector and angle of state ``col`` of anchor ``e`` (layout of :func:`exact_search`).

    A critical state's vector is the exact normal of its first tied pair (so integer
    scores, and dyadic ones of few significant bits, tie exactly) times the power of two
    that brings its largest entry into ``[0.5, 1)``; an open state's is the unit vector
    halfway between the normals of the swaps around it; all from basic operations, the
    same on every CPU.
    """
    m = points.shape[0]
    if col == 0:
        return np.array([1.0, 0.0]), 0.0
    if col == 2 * m + 2:
        return np.array([-1.0, 0.0]), math.pi
    dr, dg, zero_r, order, new = _anchor_events(points, np.array([e]))
    o = order[0]
    finite = int(np.count_nonzero(~zero_r[0]))
    starts = np.flatnonzero(new[0][:finite])

    def normal(j: int) -> F64:
        return _unit(swap_normal(float(dr[0, o[j]]), float(dg[0, o[j]])))

    if 1 <= col <= m:  # critical: the exact normal of the first tied pair
        first = int(starts[np.searchsorted(starts, col - 1, side="right") - 1])
        w = swap_normal(float(dr[0, o[first]]), float(dg[0, o[first]]))
        # times a power of two (exact: the pair still ties) to a largest entry in [0.5, 1):
        # a normal of scores near 1e155 or 1e-170 would overflow or underflow projections
        w = np.ldexp(w, -int(np.frexp(float(np.max(np.abs(w))))[1]))
    else:
        j = col - m - 2  # the open state after sorted swap j (-1: before the first)
        lo = np.array([1.0, 0.0]) if j < 0 else normal(j)
        hi = normal(j + 1) if j + 1 < finite else np.array([-1.0, 0.0])
        w = between(lo, hi)
    return w, math.atan2(float(w[1]), float(w[0]))


class AnchorStates(NamedTuple):
    """The states of a batch of anchors (layout of :func:`exact_search`), S = 2m + 3.

    ``P`` (c, B, S): masses strictly below the anchor's group, for each column of ``x``;
    ``G`` (c, B, S): the group's masses; ``ok`` (B, S): whether the state exists;
    ``has_zero`` (B,): whether another point has the anchor's first score; ``size`` (B, m):
    at critical state ``1 + j``, the number of points tied with the anchor.
    """

    P: F64
    G: F64
    ok: NDArray[np.bool_]
    has_zero: NDArray[np.bool_]
    size: NDArray[np.intp]


def _masked_sums(mask: NDArray[np.bool_], x: F64) -> F64:
    """``mask @ x`` (B, c): by a BLAS product where every sum is exact (masses that are
    whole multiples of 2^-10, totals below 2^52: any order of addition gives the same
    float), else by NumPy's own summation in a fixed order (BLAS kernels add in an order
    that depends on the CPU)."""
    v = x * 1024.0
    if bool(np.all(v == np.rint(v))) and float(np.abs(v).sum()) < 2.0**52:
        return mask.astype(np.float64) @ x
    return np.stack([np.where(mask, x[:, c], 0.0).sum(axis=1) for c in range(x.shape[1])],
                    axis=1)


class AnchorLayout(NamedTuple):
    """What the states of a batch of anchors owe to the points alone, not to their masses:
    each anchor's swaps in exact order (:func:`_anchor_events`) and which points lie below,
    tied with or beside it at the angle 0. :func:`anchor_states` totals masses over it."""

    e: NDArray[np.intp]
    order: NDArray[np.intp]
    below0: NDArray[np.bool_]
    tied0: NDArray[np.bool_]
    left: NDArray[np.bool_]
    right: NDArray[np.bool_]
    wb: NDArray[np.bool_]
    wa: NDArray[np.bool_]
    start: NDArray[np.intp]
    is_end: NDArray[np.bool_]
    has_zero: NDArray[np.bool_]

    @classmethod
    def of(cls, e: NDArray[np.intp], order: NDArray[np.intp], new: NDArray[np.bool_],
           valid: NDArray[np.bool_], below0: NDArray[np.bool_], tied0: NDArray[np.bool_],
           left: NDArray[np.bool_], right: NDArray[np.bool_]) -> AnchorLayout:
        """The layout of anchors ``e`` from their points in swap order ``order`` (B, m),
        ``new`` where a group of swaps starts and ``valid`` where the point has a swap in
        (0, pi) (both in that order), and per point (B, m) whether it is below the anchor at
        the angle 0, tied with it there, of smaller and of larger first score."""
        rows, m = order.shape
        cols = np.arange(m)
        change = new[:, 1:]
        true = np.ones((rows, 1), dtype=bool)
        is_end = valid & np.concatenate((change, true), axis=1)
        is_start = valid & np.concatenate((true, change), axis=1)
        start = np.maximum.accumulate(np.where(is_start, cols, 0), axis=1)
        wb = take_rows(below0, order) & valid
        return cls(e, order, below0, tied0, left, right, wb, valid & ~wb, start, is_end,
                   np.any(tied0, axis=1))


def anchor_layouts(points: F64, anchors: NDArray[np.intp] | None = None,
                   ) -> Iterator[AnchorLayout]:
    """The ``anchors`` (default every point) in batches, with the layout of each batch."""
    m = points.shape[0]
    step = max(1, _BATCH_ELEMS // (4 * max(m, 1)))
    todo = np.arange(m) if anchors is None else anchors
    for e0 in range(0, todo.size, step):
        e = todo[e0 : e0 + step]
        dr, dg, zero_r, order, new = _anchor_events(points, e)
        self_ = zero_r & (dg == 0)
        yield AnchorLayout.of(e, order, new, ~take_rows(zero_r, order),
                              (dr < 0) | (zero_r & (dg < 0)), zero_r & ~self_, dr < 0, dr > 0)


def anchor_states(lay: AnchorLayout, x: F64, ties: int = 1) -> AnchorStates:
    """Every state of the anchors of ``lay`` (see :func:`exact_search`) with the masses
    ``x`` (m, c) of the points; of the states at a swap, only those where at least ``ties``
    points swap with the anchor (the others are left out: ``ok`` False, masses unset)."""
    rows, m = lay.order.shape
    nc = x.shape[1]
    order, start = lay.order, lay.start
    size = np.arange(m)[None, :] - start + 1
    dense = ties <= 1
    crit = lay.is_end if dense else lay.is_end & (size >= ties)
    if not dense:
        rr, cc = np.nonzero(crit)
        st = start[rr, cc]
    s_b0 = _masked_sums(lay.below0, x)
    s_zero = _masked_sums(lay.tied0, x)
    s_lt = _masked_sums(lay.left, x)
    s_gt = _masked_sums(lay.right, x)
    xe = x[lay.e]
    # P: prefix masses (c, B, S), G: group masses, S = 2m + 3 states per anchor
    S = 2 * m + 3
    P = np.empty((nc, rows, S))
    G = np.empty((nc, rows, S))
    for c in range(nc):
        xs = x[:, c][order]
        cb = np.zeros((rows, m + 1))
        np.cumsum(np.where(lay.wb, xs, 0.0), axis=1, out=cb[:, 1:])
        ca = np.zeros((rows, m + 1))
        np.cumsum(np.where(lay.wa, xs, 0.0), axis=1, out=ca[:, 1:])
        run = s_b0[:, c : c + 1] - cb + ca
        pc, gc, xc = P[c], G[c], xe[:, c : c + 1]
        pc[:, 0] = s_lt[:, c]
        gc[:, 0] = xe[:, c] + s_zero[:, c]
        if dense:
            tied_b = cb[:, 1:] - take_rows(cb, start)
            tied = tied_b + ca[:, 1:] - take_rows(ca, start)
            pc[:, 1 : m + 1] = take_rows(run, start) - tied_b
            gc[:, 1 : m + 1] = xc + tied
        else:
            tb = cb[rr, cc + 1] - cb[rr, st]
            pc[rr, 1 + cc] = run[rr, st] - tb
            gc[rr, 1 + cc] = xe[rr, c] + (tb + ca[rr, cc + 1] - ca[rr, st])
        pc[:, m + 1] = s_b0[:, c]
        gc[:, m + 1 :] = xc
        pc[:, m + 2 : 2 * m + 2] = run[:, 1:]
        pc[:, 2 * m + 2] = s_gt[:, c]
        gc[:, 2 * m + 2] = gc[:, 0]
    ok = np.ones((rows, S), dtype=bool)
    ok[:, 1 : m + 1] = crit
    ok[:, m + 2 : 2 * m + 2] = lay.is_end
    return AnchorStates(P, G, ok, lay.has_zero, size)


def anchor_batches(
    points: F64, x: F64, anchors: NDArray[np.intp] | None = None,
) -> Iterator[tuple[NDArray[np.intp], AnchorStates]]:
    """The ``anchors`` (default every point) in batches, with every state of each (see
    :func:`exact_search`); ``x`` (m, c) holds the masses to total."""
    for lay in anchor_layouts(points, anchors):
        yield lay.e, anchor_states(lay, x)


def exact_search(
    points: F64, x: F64, con: Constraint | None, slopes: tuple[float, float, float] | None,
    scale_i: float, scale_o: float, anchors: NDArray[np.intp] | None = None,
) -> State | None:
    """Best rule over all directions ``a`` in [0, pi] of ``points @ (cos a, sin a)``.

    ``points`` (m, 2) are distinct score pairs, ``x`` (m, 3) their ID, OOD and
    loss masses. The order of two points changes only at the one angle where
    their difference is orthogonal to the direction. For every *anchor* point
    ``e`` (the threshold group's point) its m - 1 events are sorted by angle, exactly
    (:func:`~abstain._core.exact.sorted_events`: the order and the ties of two events are
    the sign of a cross product of the float inputs, computed without rounding error, so
    they do not depend on the CPU): between two events the set of points below ``e`` is
    fixed (an *open* state, whose weight vector is the unit vector halfway between the two
    swaps), at an event the points tied with ``e`` join its group (a *critical* state,
    whose weight vector is the exact normal of the tied pair, so integer scores, and dyadic
    ones of few significant bits, tie exactly). Angles 0 and pi are states too. Every rule
    of every direction is a point of one of these segments, so the optimum is exact.

    Anchors are processed in batches of B rows: one (B, m) matrix of event keys,
    sorted row by row and refined exactly, running totals by cumulative sums, and the best segment
    of every row by the flat reductions of :mod:`~abstain._ood_search.best` (``con``: ratio;
    ``slopes``: linear). O(m^2 log m) time, O(B m) memory.

    State layout of a row (its order breaks the ties left after the masses, open states
    first): 0 the angle 0; 1 + j the
    critical state ending at sorted event j; m + 1 the open state before the
    first event; m + 2 + j the open state after event j; 2m + 2 the angle pi.

    ``anchors`` (ascending) limits the sweep to those anchors' states (every direction
    of each): the best over them, found and tie-broken exactly as in the full sweep.
    """
    m = points.shape[0]
    S = 2 * m + 3
    best: State | None = None
    best_col = 0
    for e, (P, G, ok, has_zero, _) in anchor_batches(points, x, anchors):
        rows = e.size
        # the critical states (an event, or an end angle where points tie): on equal
        # objectives and masses an open state wins, as between anchors (``better``)
        critical = np.zeros((rows, S), dtype=bool)
        critical[:, 1 : m + 1] = True
        critical[:, [0, 2 * m + 2]] = has_zero[:, None]
        if con is not None:
            i_end = P[0] + G[0]
            lim = con.b + RTOL * (scale_o + con.k * scale_i)
            cand = ok & (i_end >= con.a - RTOL * scale_i)
            o_start = P[1] - con.k * P[0]
            cand &= (o_start <= lim) | (o_start + (G[1] - con.k * G[0]) <= lim)
            flat = np.flatnonzero(cand)
            rix, at = np.divmod(flat, S)
            p = [P[c].reshape(-1)[flat] for c in range(3)]
            g = [G[c].reshape(-1)[flat] for c in range(3)]
            r = rows_best_ratio(rix, at, p[0], p[1], p[2], g[0], g[1], g[2], rows, con,
                                scale_i, scale_o, crit=critical.reshape(-1)[flat])
            cols_won = r.at
        else:
            assert slopes is not None
            both = [np.concatenate((P[c], P[c] + G[c]), axis=1) for c in range(3)]
            r = rows_best_linear(both[0], both[1], both[2], np.concatenate((ok, ok), axis=1),
                                 *slopes, crit=np.concatenate((critical, critical), axis=1))
            cols_won = r.at % S
            r = r._replace(nu=np.where(r.at < S, 0.0, 1.0))
        for k in np.flatnonzero(r.found).tolist():
            col = int(cols_won[k])
            crit = bool(critical[k, col])
            cand_best = r.best(k)._replace(at=int(e[k]))
            if best is None or better(cand_best, crit, best.best, best.critical,
                                      linear=con is None):
                best = State(cand_best, np.zeros(2), 0.0, crit)
                best_col = col
    if best is None:
        return None
    w, angle = _state_direction(points, best.best.at, best_col)
    return best._replace(weights=w, angle=angle)
