"""A score pair's curves on the grid of directions, all directions at once: the envelope of
the accepted gain against the accepted OOD mass (the AUROC and OSCR of a pair on the grid) and
the least FPR at a TPR, from the knots of :meth:`~abstain._ood_search.sample.Sample.grid`
(each direction sorted once per sample, and not at all for a bootstrap resample's sample).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np
from numpy.typing import NDArray

from .best import Best, Constraint
from .sample import Found, Sample
from .search import F64, GridOrders, Knots, Masses, grid_best, knots, least_fpr_rows, project

#: Queries per block of :func:`_interp_max`: a direction is interpolated inside a block only
#: where its value at the next block's first query can reach the best value at its first.
_QUERY_BLOCK = 16
#: Directions per block of :func:`_interp_max` (their knots stay in cache).
_INTERP_ROWS = 32


def _segment_values(ood: F64, j: NDArray[np.intp], last: NDArray[np.intp], b: F64,
                    ys: list[F64]) -> list[F64]:
    """Each ``y`` of ``ys`` at the queries ``b`` (broadcast with ``j``) whose last knot at or
    below is ``j``, on the segment to the next knot (none after a direction's ``last``)."""
    nxt = j + 1
    np.minimum(nxt, last, out=nxt)
    o0 = ood[j]
    do = ood[nxt]
    do -= o0
    # the fraction of the segment from knot j (0 at a direction's last knot): below 1, as
    # the next knot lies above b, and at least 0 once the nudge's ulps are cut off
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.subtract(b, o0)
        f /= do
    f[do == 0] = 0.0
    np.maximum(f, 0.0, out=f)
    out = []
    for y in ys:
        y0 = y[j]
        v = y[nxt]
        v -= y0
        v *= f
        v += y0
        out.append(v)
    return out


def _interp_max(ood: F64, ys: list[F64], starts: NDArray[np.intp], sizes: NDArray[np.intp],
                b: F64, whole: bool = False) -> list[F64]:
    """The largest over several directions of each ``y`` of ``ys`` on the randomised rules at
    accepted-OOD mass ``b`` (ascending; the largest ``y`` at tied ``ood``), shape (b.size,):
    direction ``r``'s knots are ``ood[starts[r]:starts[r] + sizes[r]]`` (and ``y``),
    ascending, each from 0, and each ``y`` nondecreasing along them. A query's knot is the
    last at or below ``b (1 + 1e-12)``.

    Each curve is nondecreasing, so on a block of queries a direction whose value at the
    next block's first query (the last block's: the last query) is below the best value at
    the block's first (less a relative 1e-12, far above the ulps by which rounded
    interpolation can break monotonicity) never holds the largest value there: only the
    other (direction, block) pairs are interpolated at every query, and the maximum is
    theirs, bit for bit that of all directions. Each direction is interpolated at the
    blocks' first queries once, for both bounds.

    ``whole``: every ``ood`` is a whole number (whole-number weights). A knot is then at or
    below ``b (1 + 1e-12)`` iff it is at or below that bound's floor ``v``, so where the
    largest ``ood`` is below the number of queries, a table of each direction's last knot
    at or below each of 0, 1, ..., the largest ``ood`` gives every query's knot (read at
    ``v``; the table is smaller than the directions' knots at every query). Else, where
    there are fewer whole numbers than knots, a knot's rank among the queries is read from a
    table of the ranks of 0, 1, ..., the largest ``ood`` (one binary search per whole number
    instead of one per knot). The same knots either way.
    """
    q, rows = b.size, starts.size
    nudged = b * (1 + 1e-12)
    rank_of = None
    # the column of the knot table that each query reads: the query itself, or (``whole``,
    # few whole numbers) the floor of its bound among 0, 1, ..., top
    col = np.arange(q)
    by_whole = 0  # with a table by whole number: its columns, 0, 1, ..., the largest ood
    if whole and rows:
        top = int(ood[starts + sizes - 1].max())  # the directions' last knots: the most
        if top < q:
            by_whole = top + 1
            col = np.minimum(np.floor(nudged), top).astype(np.intp)
        elif top < ood.size:
            rank_of = np.searchsorted(nudged, np.arange(top + 1, dtype=np.float64),
                                      side="left")
    first = np.arange(0, q, _QUERY_BLOCK)
    # each block's first query, then the last query: a block's values are at most those at
    # the next block's first query (the last block's: at the last query)
    edges = np.append(first, q - 1)
    span = np.minimum(first[:, None] + np.arange(_QUERY_BLOCK), q - 1)  # (blocks, QB)
    # per block of directions (its knots stay in cache): each query's knot, and the values
    # at every block's first query and at the last query
    blocks = []
    for r0 in range(0, rows, _INTERP_ROWS):
        st, sz = starts[r0 : r0 + _INTERP_ROWS], sizes[r0 : r0 + _INTERP_ROWS]
        if by_whole:
            # each direction's last knot at or below each whole number up to the largest:
            # its knots at or below, counted
            at = np.repeat(np.arange(st.size) * by_whole, sz)
            k0 = int(st[0])
            at += ood[k0 : k0 + at.size].astype(np.intp)
            count = np.bincount(at, minlength=st.size * by_whole).reshape(st.size, by_whole)
            j = np.cumsum(count, axis=1)
            j += st[:, None] - 1
        elif int(sz.sum()) > q * st.size:
            # more knots than queries: a binary search of the queries in each direction's
            # knots (they ascend), the last at or below each
            j = np.empty((st.size, q), dtype=np.intp)
            for d0, (s0, n0) in enumerate(zip(st.tolist(), sz.tolist(), strict=True)):
                j[d0] = np.searchsorted(ood[s0 : s0 + n0], nudged, side="right")
                j[d0] += s0 - 1
        else:
            # fewer: knot k is at or below query i iff fewer than i + 1 queries lie below
            # it, so each knot's rank among the queries, counted per direction, gives them
            k0 = int(st[0])
            at = np.repeat(np.arange(st.size) * (q + 1), sz)
            cut = ood[k0 : k0 + at.size]
            at += (np.searchsorted(nudged, cut, side="left") if rank_of is None
                   else rank_of[cut.astype(np.intp)])
            count = np.bincount(at, minlength=st.size * (q + 1)).reshape(st.size, q + 1)
            j = np.cumsum(count[:, :q], axis=1)
            j += st[:, None] - 1
        last = (st + sz - 1)[:, None]
        blocks.append((j, last, _segment_values(ood, j[:, col[edges]], last, b[edges], ys)))
    best = []
    for k, y in enumerate(ys):
        floor = np.max([at_edge[k][:, :-1].max(axis=0) for _, _, at_edge in blocks], axis=0)
        floor -= 1e-12 * np.abs(floor)
        out = np.full(q, -np.inf)
        for j, last, at_edge in blocks:
            # those that may hold a block's largest
            r, blk = np.nonzero(at_edge[k][:, 1:] >= floor)
            qi = span[blk]
            (v,) = _segment_values(ood, j[r[:, None], col[qi]], last[r], b[qi], [y])
            np.maximum.at(out, qi.reshape(-1), v.reshape(-1))
        best.append(out)
    return best


#: The running masses :func:`_grid_knots` reads, by name: the running ID, OOD and loss
#: masses of :meth:`Sample.grid` and "ccr", ID less loss (the correct-and-accepted mass).
_RUNNING = ("id", "ood", "loss", "ccr")


def _grid_knots(sample: Sample, n_directions: int, names: tuple[str, ...],
                batches: Iterable[tuple[GridOrders, Masses]] | None = None,
                blocks: bool = False,
                ) -> Iterator[tuple[NDArray[np.intp], NDArray[np.intp], list[F64]]]:
    """Per batch of the grid's directions (:meth:`Sample.grid` with the exact tie groups,
    shared by the metrics of one sample, or ``batches``): each direction's first knot and
    number of knots, and the knots' running masses ``names`` (of :data:`_RUNNING`; leading 0
    included; flat, direction by direction): the knots of each direction's tie groups.
    Yielded batch by batch, so that only one batch's knots are held (every direction's at
    once took about 6 kB per row).

    ``blocks``: where the orders say where knot blocks start (a resample's,
    :attr:`GridOrders.knot`), only the blocks' ends: the knots that the envelopes and the
    least FPR read (:meth:`GridOrders.blocked`)."""
    wanted = [i for i, k in enumerate(_RUNNING[:3])
              if k in names or (k in ("id", "loss") and "ccr" in names)]
    if batches is None:
        batches = sample.grid(n_directions, exact=True)
    for orders, cum in batches:
        d, n = orders.order.shape
        change = orders.knot if blocks and orders.knot is not None else orders.change
        if change.all():  # no ties: every position is a knot
            sizes = np.full(d, n + 1)
            knots = {_RUNNING[i]: cum[i].reshape(-1) for i in wanted}
        else:
            is_knot = np.ones((d, n + 1), dtype=bool)
            is_knot[:, 1:n] = change
            sizes = np.count_nonzero(is_knot, axis=1)
            at = np.flatnonzero(is_knot)
            knots = {_RUNNING[i]: cum[i].reshape(-1)[at] for i in wanted}
        starts = np.cumsum(sizes) - sizes
        if "ccr" in names:
            knots["ccr"] = knots["id"] - knots["loss"]
        out = [knots[k] for k in names]
        del orders, cum, knots, change  # a batch is not held while the next one is sorted
        yield starts, sizes, out
        del out


def envelopes_on_grid(sample: Sample, gains: tuple[str, ...], grid: F64,
                      n_directions: int) -> list[F64]:
    """Per gain of ``gains`` (:data:`_RUNNING` names), ``max over directions of (accepted
    gain mass) / #ID`` at each FPR of ``grid`` (in any order)."""
    order = np.argsort(grid, kind="stable")  # the knots are looked up in ascending order
    out = []
    for best in envelopes_and_least_fpr(sample, gains, grid[order], n_directions, None)[0]:
        out.append(np.empty(grid.size))
        out[-1][order] = best
    return out


def envelopes_and_least_fpr(sample: Sample, gains: tuple[str, ...], grid: F64,
                            n_directions: int, tpr: float | None,
                            batches: Iterable[tuple[GridOrders, Masses]] | None = None,
                            ) -> tuple[list[F64], float]:
    """:func:`envelopes_on_grid` and (unless ``tpr`` is None, then NaN)
    :func:`least_fpr_on_grid` at ``tpr``, from one extraction of the directions' knots
    (of ``batches`` where given, see :func:`_grid_knots`)."""
    best = [np.zeros(grid.size) for _ in gains]
    b = grid * sample.n_ood
    names = ("ood", *gains)
    if tpr is not None and "id" not in gains:
        names += ("id",)
    fpr = math.inf if tpr is not None else math.nan
    # whole-number OOD weights (counts) give whole-number running OOD masses
    whole = np.issubdtype(sample.compact_weights()[1].dtype, np.integer)
    for starts, sizes, (o, *g) in _grid_knots(sample, n_directions, names, batches, True):
        for k, y in enumerate(_interp_max(o, g[: len(gains)], starts, sizes, b, whole)):
            # the largest of the quotients is the quotient of the largest (division by a
            # positive number keeps the order of rounded values)
            best[k] = np.maximum(best[k], y / sample.n_id)
        if tpr is not None:
            i = g[names.index("id") - 1]
            fpr = min(fpr, float(least_fpr_rows(i, o, starts, sizes, sample.n_id,
                                                sample.n_ood, tpr).min()))
        del o, g  # the batch's knots are not held while the next one is made
    return best, fpr


def envelopes_fpr_and_rule(sample: Sample, gains: tuple[str, ...], grid: F64,
                           n_directions: int, tpr: float, con: Constraint,
                           ) -> tuple[list[F64], float, Found | None]:
    """:func:`envelopes_and_least_fpr` and the best rule under ``con`` on the grid (what
    :meth:`Sample.run` finds with ``search="grid"``), in one pass over the directions: each
    is sorted once for both (:meth:`Sample.grid_both`; the rule takes the rounded tie
    groups, the envelopes the exact ones)."""
    found: list[tuple[Best, float] | None] = []

    def exact_batches() -> Iterator[tuple[GridOrders, Masses]]:
        for (orders, cum), exact in sample.grid_both(n_directions):
            found.extend(grid_best(orders, cum, con, None, sample.n_id, sample.n_ood))
            del orders, cum  # not held while the next batch is sorted
            yield exact

    bests, least = envelopes_and_least_fpr(sample, gains, grid, n_directions, tpr,
                                           exact_batches())
    return bests, least, sample.best_of(found, n_directions, None)


def direction_knots(sample: Sample, n_directions: int) -> Iterator[tuple[F64, F64]]:
    """Each grid direction's running ID and OOD masses at the ends of its exact tie groups
    (leading 0 included), direction by direction: the knots of the grid's envelopes (one
    score: its groups)."""
    for starts, sizes, (i, o) in _grid_knots(sample, n_directions, ("id", "ood")):
        for st, sz in zip(starts.tolist(), sizes.tolist(), strict=True):
            yield i[st : st + sz], o[st : st + sz]


def least_fpr_on_grid(sample: Sample, t: float, n_directions: int) -> float:
    """The least FPR at TPR ``t`` over the grid's directions."""
    return min(float(least_fpr_rows(i, o, starts, sizes, sample.n_id, sample.n_ood, t).min())
               for starts, sizes, (i, o) in _grid_knots(sample, n_directions, ("id", "ood")))


def least_risk_at_fpr_on_grid(sample: Sample, fpr: float, targets: F64,
                              n_directions: int) -> F64:
    """The least selective risk ``L / I`` of a rule with FPR at most ``fpr`` and TPR at least
    each of ``targets`` over the ``n_directions`` grid, each target with its own direction
    (:func:`abstain.metrics.risk_coverage_curve_at_fpr` with ``search="grid"``); NaN where
    no rule meets both."""
    best = np.full(targets.size, np.inf)
    for w in sample.directions("grid", n_directions):
        kn = knots(project(sample.s, w), sample.w_id, sample.w_ood, sample.w_loss)
        best = np.fmin(best, _path_at_fpr(kn, fpr * sample.n_ood, targets * sample.n_id))
    best[~np.isfinite(best)] = np.nan
    return best


def _path_at_fpr(kn: Knots, b: float, targets: F64) -> F64:
    """Least risk ``L / I`` on the path prefix with ``O <= b`` and ``I >= targets`` (or NaN)."""
    g = kn.I.size - 1
    j = int(np.searchsorted(kn.O, b * (1 + 1e-12), side="right")) - 1  # last knot with O <= b
    pi_, pl = kn.I[j], kn.L[j]
    if j < g and kn.O[j + 1] > kn.O[j]:
        f = min((b - kn.O[j]) / (kn.O[j + 1] - kn.O[j]), 1.0)
        pi_, pl = pi_ + f * (kn.I[j + 1] - kn.I[j]), pl + f * (kn.L[j + 1] - kn.L[j])
    ki, kl = np.append(kn.I[1 : j + 1], pi_), np.append(kn.L[1 : j + 1], pl)
    with np.errstate(divide="ignore", invalid="ignore"):
        kr = np.where(ki > 0, kl / ki, np.inf)
    suffix = np.minimum.accumulate(kr[::-1])[::-1]
    # the point with I = target exactly, on the segment that reaches it
    pos = np.searchsorted(ki, targets * (1 - 1e-12), side="left")
    out = np.full(targets.size, np.nan)
    ok = pos < ki.size
    p = pos[ok]
    prev_i = np.where(p > 0, ki[np.maximum(p - 1, 0)], 0.0)
    prev_l = np.where(p > 0, kl[np.maximum(p - 1, 0)], 0.0)
    t = np.maximum(targets[ok], prev_i)
    di = ki[p] - prev_i
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(di > 0, (t - prev_i) / di, 1.0)
        li = prev_l + frac * (kl[p] - prev_l)
        r_at = np.where(t > 0, li / t, np.inf)
    out[ok] = np.minimum(r_at, suffix[p])
    out[~np.isfinite(out)] = np.nan
    return out
