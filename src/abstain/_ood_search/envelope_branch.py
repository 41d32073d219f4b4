"""The exact envelope of :mod:`~abstain._ood_search.envelope` by pruning intervals of directions.

:func:`~abstain._ood_search.envelope.envelopes` collects the segment of every state of every
anchor with OOD mass, O(m^2 log m) for m distinct score pairs. :func:`branch_envelopes`
collects only the states that can rise above a known lower bound of the envelope, and that
bound itself, with the intervals and bounds of :mod:`~abstain._ood_search.branch`:

* **Lower bound.** The curve of any one direction lies on or below the envelope, so the
  largest gain ``L(k)`` that one of ``GRID`` directions (the angles 0 and pi/2, exact
  projections, and equally spaced angles between the grid's) reaches at accepted OOD mass
  at most ``k`` is a nondecreasing lower bound of it at every OOD mass in ``[k, k + 1)``.
  Rounded projections may misorder points whose projections are within a round-off of
  each other; such runs are taken as one block and only the knots between blocks (where the
  order is certain) count. Every segment collected later raises ``L`` at its two ends.
* **Pruning.** On an interval ``J`` of directions, the bounds of
  :class:`~abstain._ood_search.branch.IntervalSearch` give, for each anchor ``e``, the mass ``C(e)``
  certainly below it and ``N(e)`` certainly above it at every direction of ``J``. Every
  segment of ``e`` there starts at OOD mass at least ``O(C(e))`` and never exceeds gain
  ``G_total - G(N(e))``; when ``L(O(C(e)))`` is above that by more than a round-off margin
  in every gain column, each of those segments lies below ``L`` at each of its points, and
  the pair (anchor, ``J``) is dropped, on the sub-intervals of ``J`` too. The one spread
  screens the anchors (and narrows the pool) on the starting intervals only; below them the
  band bounds alone decide, which costs less than screening first (76 s against 91 s at
  1e5 rows of the benchmark's Gaussian pair; the rule search screens on every interval,
  where screening pays).
* **Refinement.** Intervals with many possible movers are halved; the others are swept:
  every state of each surviving anchor at the directions of the interval
  (``IntervalSearch.states_of``), with the keep rules of the full sweep (the two-point ties
  and the angle pi left out, the flat unit segments kept by start). An interval whose
  halvings have stopped shedding movers is swept as well (:func:`stalled`).
* **Cuts of a swept interval.** Before its states are computed, a swept interval is cut
  into ``CUTS`` equal parts and each mover's swap is placed among them by its key
  (:func:`~abstain._core.exact.swap_slots`: two parts where rounding could put it on either
  side of a cut). On each part the masses certainly below the anchor and those that may
  move past it are then exact totals, not band bounds, and the same test drops the
  (anchor, part) pairs that cannot rise above ``L``; only the movers of the pairs kept
  are sorted by angle. At 5e4 rows of the benchmark's Gaussian pair, the sweeps took 7.2 s
  before the cuts and 3.8 s after, and the larger leaves this allows (``LEAF_WORK`` 2 to
  8) save bounds: 24 s to 17 s in all (the sweeps' time line-profiled).
* **Bands of the parent.** An interval's halves are bounded on its bands
  (:meth:`_Envelope.narrow`, ``IntervalSearch.bands``), which is as tight as their own but
  for the anchor's own band, so the pool is cut and sorted on every other level only.
* **Exactness.** The envelope of the segments swept plus the flat unit pieces of ``L``
  equals the full sweep's at every OOD mass: every piece is on or below the envelope, and
  where a dropped segment would reach it, ``L`` does. The pieces differ, the envelope
  (:func:`~abstain._ood_search.envelope.area`, ``value_at``, ``first_reach``) does not, up to
  the round-off of masses summed in another order.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .._core.exact import sums_exact, swap_slots
from .._core.groups import take_rows
from .branch import (
    INTERVALS_PER_POINT,
    MIN_WIDTH,
    Arc,
    BandSplit,
    Frame,
    IntervalSearch,
    Pool,
    Prior,
    mover_pairs,
)
from .search import F64, along, unit_weights

#: Up to this many distinct pairs :func:`~abstain._ood_search.envelope.envelopes` sweeps all
#: states: the pruning breaks even near 3,000 pairs of a one-dimensional sample such as the
#: section-3.1 example, near 600 on a Gaussian pair (3 times faster at 2,000 there).
SWEEP_BELOW = 3000
#: Equal intervals of [0, pi] the search starts from.
START = 32
#: Directions of the starting lower bound (besides 0 and pi/2).
GRID = 64
#: An interval is swept when its surviving anchors have at most this many movers per point
#: (the parts of :data:`CUTS` make a sweep cheaper than bounding more intervals).
LEAF_WORK = 8.0
#: A swept interval is cut into this many equal parts, each swept only for the anchors
#: whose exact masses there may reach above ``L``.
CUTS = 16
#: Intervals narrower than this (radians) are swept whole.
_CUT_WIDTH = 1e-6
#: At most this many (anchor, point) pairs per batch of a sweep.
_CHUNK = 1 << 17
#: An interval is swept whatever its movers after this many halvings in a row that kept
#: more than ``STALL_SHARE`` squared of the movers two levels up (:func:`stalled`).
STALL = 3
STALL_SHARE = 0.6


def stalled(movers: float, up: tuple[float, float], stall: int) -> tuple[tuple[float, float],
                                                                        int]:
    """The movers of an interval's halves' parent and grandparent, and how many halvings
    in a row, up to this interval's, kept more than ``STALL_SHARE ** 2`` of the movers two
    levels up (0 where this one did not): ``movers`` its movers in all, ``up`` its parent's
    and grandparent's, ``stall`` the parent's count. Two levels, as the bands are cut anew
    on every other level and the two levels shed movers in turn.

    Halving pays while it sheds movers. Points whose offsets from an anchor are far smaller
    than the bands (a first score with few values and a second of a far smaller scale, or
    pairs near one line) stay movers on every interval the bounds can tell apart, though
    they never swap there; halving them down to ``MIN_WIDTH`` bounded millions of intervals
    (12 values of the first score and a second of scale 1e-6 at 4,000 rows: minutes),
    while a sweep places each of them exactly (about 4 s)."""
    return (movers, up[0]), stall + 1 if movers > STALL_SHARE**2 * up[1] else 0


class _Envelope(IntervalSearch):
    """The bounds of :class:`~abstain._ood_search.branch.IntervalSearch` with the envelope's test:
    the masses are laid out as (gain 0, OOD, gain 1, count)."""

    def __init__(self, points: F64, x4: F64, n_ood: int, n_gain: int) -> None:
        super().__init__(points, x4[:, :3], None, None, 1.0, 1.0)
        self.n_ood, self.n_gain = n_ood, n_gain
        self.gain_cols = (0, 2)[:n_gain]
        # Where every sum of the gains is exact (sums_exact) a segment that reaches L
        # without exceeding it is dropped (it changes no value). Otherwise L must exceed
        # the reach by more than the round-off of either side.
        self.margin = [-0.0 if sums_exact(x4[:, c]) else 1e-9 * float(np.sum(np.abs(x4[:, c])))
                       for c in self.gain_cols]
        self.low = [np.full(n_ood + 1, -np.inf) for _ in self.gain_cols]
        self.cols = [np.ascontiguousarray(x4[:, c]) for c in range(4)]

    # ---------------------------------------------------------------- the lower bound
    def raise_low(self, o: F64, g: list[F64]) -> None:
        """Raise ``L`` by knots at OOD masses ``o`` with gains ``g[c]`` (one per column)."""
        k = np.clip(np.rint(o).astype(np.intp), 0, self.n_ood)
        for low, gc in zip(self.low, g, strict=True):
            np.maximum.at(low, k, gc)
            np.maximum.accumulate(low, out=low)

    def seed(self, angles: F64) -> F64:  # type: ignore[override]
        """Raise ``L`` by the curves of the directions ``angles``: per direction, the knots
        between blocks of points whose rounded projections are within ``eps`` in a row."""
        pts = self.points
        m = pts.shape[0]
        cols = (1, *self.gain_cols)
        step = max(1, (1 << 21) // m)
        for b0 in range(0, angles.size, step):
            a = angles[b0 : b0 + step]
            w = unit_weights(a)
            s = along(pts[None, :, 0], pts[None, :, 1], w[:, :1], w[:, 1:])
            order = np.argsort(s, axis=1, kind="stable")
            s = take_rows(s, order)
            end = np.ones(s.shape, dtype=bool)
            end[:, :-1] = s[:, 1:] - s[:, :-1] > 2 * self.eps
            cum = [np.cumsum(np.take(self.x4[:, c], order), axis=1)[end] for c in cols]
            self.raise_low(cum[0], cum[1:])
        return np.zeros(angles.size)

    def _above(self, o: F64, reach: F64) -> NDArray[np.bool_]:
        """Whether segments starting at OOD mass ``o`` or later and reaching at most the gains
        ``reach`` (rows, columns of ``x4``) may rise above ``L`` in some gain column."""
        k = np.clip(np.rint(o).astype(np.intp), 0, self.n_ood)
        keep = np.zeros(o.size, dtype=bool)
        for low, c, margin in zip(self.low, self.gain_cols, self.margin, strict=True):
            r = reach[:, c]
            keep |= (low[k] < r) if margin == 0 else (low[k] <= r + margin)
        return keep

    def _decide(self, C: F64, N: F64, neg: F64) -> tuple[NDArray[np.intp], F64, F64]:
        """Keep the anchors whose segments may rise above ``L`` in some gain column."""
        movers = self.points.shape[0] - 1 - C[:, 3] - N[:, 3]
        idx = np.flatnonzero(self._above(C[:, 1], self.tot4[None, :] - N))
        return idx, np.zeros(idx.size), movers[idx]

    def narrow(self, arc: Arc, e: NDArray[np.intp], pool: Pool,
               parent: tuple[Frame, Prior] | None,
               ) -> tuple[NDArray[np.intp], F64, BandSplit, tuple[Frame, Prior] | None]:
        """The anchors of ``e`` kept on ``arc`` by the band bounds alone, their movers and
        bands: on the bands of the parent interval (``parent``: its frame and the bands of
        ``e`` there) or, without them, on the interval's own, which are returned for its
        halves. On a half, the parent's bands bound as tightly as its own, but for the
        points of the anchor's band, and about one end in two of each anchor's part of a
        band is the parent's; so only every other level cuts and sorts the pool anew."""
        if parent is None:
            frame = self.frame(0.5 * (arc.a0 + arc.a1), pool[0], self._columns(pool[0]))
            split, prior = self.bands(arc.a0, arc.a1, e, pool[1], frame)
        else:
            frame = parent[0]
            split, prior = self.bands(arc.a0, arc.a1, e, pool[1], frame, parent[1])
        keep, _, movers = self._decide(split.C, self.tot4 - split.C - split.band[:, :4],
                                       split.band[:, 4:])
        kept = split.take(keep)
        # the halves take the kept anchors' bands as they are (the same rows as ``kept``)
        return (e[keep], movers, kept,
                (frame, prior._replace(lo=kept.lo, hi=kept.hi)) if parent is None else None)

    # ---------------------------------------------------------------- sweeps
    def collect(self, arc: Arc, anchors: NDArray[np.intp], split: BandSplit,
                out: list[tuple[F64, F64]], cuts: int = CUTS) -> None:
        """Every kept state of ``anchors`` at the directions of ``[a0, a1]`` that may reach
        above ``L``, appended to ``out`` as (P, G), masses below the group and of the group
        (columns of ``x4``). The interval is cut into ``cuts`` equal parts first, and only
        the (anchor, part) pairs that the exact masses below and moving past the anchor
        there do not exclude are swept (:meth:`_cut`)."""
        inner = 0.0 < arc.a0 and arc.a1 < math.pi and arc.a1 - arc.a0 >= _CUT_WIDTH
        if cuts > 1 and inner:
            angles = arc.a0 + (arc.a1 - arc.a0) * np.arange(cuts + 1) / cuts
            w = unit_weights(angles)
            w[0], w[-1] = arc.w0, arc.w1
        for b0, b1 in split.batches(_CHUNK):
            e, base = anchors[b0:b1], split.C[b0:b1, :4]
            row, q = mover_pairs(e, split.order, split.lo[b0:b1], split.hi[b0:b1])
            found = self._cut(e, row, q, base, w) if cuts > 1 and inner else None
            if found is None:
                found = self.states_of(e, row, q, self.x4, base, (arc.w0, arc.w1),
                                       arc.a0 == 0.0, arc.a1 == math.pi), e.size
            (_, P, G), k = found
            keep = self._kept(k, P.shape[0], arc.a0 == 0.0, arc.a1 == math.pi, G[:, 3])
            P, G = P[keep], G[keep]
            self.raise_low(np.concatenate((P[:, 1], P[:, 1] + G[:, 1])),
                           [np.concatenate((P[:, c], P[:, c] + G[:, c]))
                            for c in self.gain_cols])
            # the states that reach above L (the same test as for an anchor on an interval)
            keep = self._above(P[:, 1], P + G)
            out.append((P[keep], G[keep]))

    def _cut(self, e: NDArray[np.intp], row: NDArray[np.intp], q: NDArray[np.intp],
             base: F64, w: F64) -> tuple[tuple[NDArray[np.intp], F64, F64], int] | None:
        """The states of the anchors ``e`` (movers ``q`` of ``e[row]``, masses ``base``
        certainly below) on the parts between the directions ``w`` (rows) that may reach
        above ``L``: for each kept (anchor, part), the states of ``states_of`` on that
        part, with rows numbering the kept pairs (and their count). None where the
        directions are too close to place the swaps among them.

        Each mover's swap is placed among the parts by its key (``swap_slots``, two parts
        where rounding could put it on either side of a cut), so on each part the masses
        certainly below the anchor ``C`` and those that may move past it ``M`` are exact
        totals; a part whose states start at OOD mass at least ``C`` and reach at most the
        gains ``C + M`` plus the anchor's own cannot rise above ``L`` when ``_above`` says so.
        """
        ea = e[row]
        dr, dg = self.pr[q] - self.pr[ea], self.pg[q] - self.pg[ea]
        slots = swap_slots(dr, dg, w)
        if slots is None:
            return None
        u, v = slots
        k, parts = e.size, w.shape[0] - 1
        # per (anchor, part): masses certainly below (C) and moving (M), as differences
        # along the parts: below before the swap (u > part) or after it (v < part)
        before = (dr < 0) | ((dr == 0) & (dg < 0))
        r0 = row * (parts + 1)
        ib = np.flatnonzero(before & (u > 0))
        ia = np.flatnonzero((dr > 0) & (v < parts - 1))
        im = np.flatnonzero((u < parts) & (v >= 0))
        um, vm = np.maximum(u[im], 0), np.minimum(v[im] + 1, parts)
        at_c = np.concatenate((r0[ib], r0[ib] + np.minimum(u[ib], parts),
                               r0[ia] + np.maximum(v[ia] + 1, 0)))
        at_m = np.concatenate((r0[im] + um, r0[im] + vm))
        q_c, q_m = q[np.concatenate((ib, ib, ia))], np.tile(q[im], 2)
        sign_c = np.concatenate((np.ones(ib.size), -np.ones(ib.size), np.ones(ia.size)))
        sign_m = np.repeat([1.0, -1.0], im.size)
        x = self.x4
        n = k * (parts + 1)
        C = np.zeros((k, parts, 4))
        M = np.zeros((k, parts, 4))
        for c in (0, 1, *self.gain_cols[1:]):
            col = self.cols[c]
            d = np.bincount(at_c, weights=col[q_c] * sign_c, minlength=n)
            C[:, :, c] = np.cumsum(d.reshape(k, parts + 1), axis=1)[:, :parts]
            if c != 1:  # the OOD column of M is not needed
                d = np.bincount(at_m, weights=col[q_m] * sign_m, minlength=n)
                M[:, :, c] = np.cumsum(d.reshape(k, parts + 1), axis=1)[:, :parts]
        C += base[:, None, :]
        C[:, :, 3] = 0.0  # the count below a group is never used
        reach = (C + M + x[e][:, None, :]).reshape(-1, 4)
        keep = self._above(C[:, :, 1].reshape(-1), reach)
        kept = np.flatnonzero(keep)  # (anchor, part) pairs, anchor-major
        # the movers of the kept pairs: one entry per part a mover may swap in
        lo_p, hi_p = um, np.minimum(v[im], parts - 1)
        many = hi_p - lo_p + 1
        ent = np.repeat(im, many)
        part = np.repeat(lo_p, many) + (np.arange(ent.size) - np.repeat(np.cumsum(many) - many,
                                                                         many))
        pair = row[ent] * parts + part
        sel = np.flatnonzero(keep[pair])
        ent, pair, part = ent[sel], pair[sel], part[sel]
        new_row = np.searchsorted(kept, pair)
        found = self.states_of(e[kept // parts], new_row, q[ent], x,
                               C.reshape(-1, 4)[kept], (w[part], w[part + 1]), False, False)
        return found, kept.size

    @staticmethod
    def _kept(k: int, total: int, at_zero: bool, at_pi: bool,
              count: F64) -> NDArray[np.bool_]:
        """The states of ``IntervalSearch.states_of`` that the full sweep keeps. Its rows are, in
        order: the open state before the interval (k), the angle 0 (k, if the interval
        starts there), the angle pi (k, if it ends there), the swaps' groups (g) and the open
        states after them (g). The angle pi and groups of two points are left out."""
        head = k * (1 + at_zero + at_pi)
        g = (total - head) // 2
        assert head + 2 * g == total
        keep = np.ones(total, dtype=bool)
        if at_pi:
            keep[k * (1 + at_zero) : head] = False
        keep[head : head + g] = count[head : head + g] >= 3  # the anchor and 2 or more
        return keep


def branch_envelopes(points: F64, x: F64, *, start: int = START, grid: int = GRID,
                     leaf_work: float = LEAF_WORK, refine: bool = True, cuts: int = CUTS,
                     ) -> tuple[list[tuple[F64, F64]], list[F64]] | None:
    """The states of the anchors with OOD mass that may reach above the lower bound ``L``,
    or None past ``INTERVALS_PER_POINT`` bounded intervals per point (run the full sweep).

    ``points`` (m, 2) distinct pairs, ``x`` (m, 1 + g) their OOD mass (whole numbers) and
    ``g`` (1 or 2) gain masses. Returns the kept states as (P, G) blocks of columns
    (gain 0, OOD, gain 1, count) and ``L`` per gain (values at OOD masses 0..n_ood), whose
    flat unit pieces complete the envelope (see the module docstring). ``start``,
    ``grid``, ``leaf_work``, ``refine`` (the band bounds on every interval, else only on
    those swept) and ``cuts`` (the parts of a swept interval) tune the search; the
    envelope does not depend on them.
    """
    m, g = points.shape[0], x.shape[1] - 1
    x4 = np.zeros((m, 4))
    x4[:, 0], x4[:, 1], x4[:, 3] = x[:, 1], x[:, 0], 1.0
    if g == 2:
        x4[:, 2] = x[:, 2]
    n_ood = int(round(float(x[:, 0].sum())))
    search = _Envelope(points, x4, n_ood, g)
    fine = (np.arange(grid) + 0.5) * (math.pi / grid)
    search.seed(np.concatenate(([0.0, 0.5 * math.pi], fine)))
    anchors = np.flatnonzero(x[:, 0] > 0)
    # (interval, anchors, pool, parent's frame and bands, movers of the parent and the
    # grandparent, stalled halvings)
    no_up = (math.inf, math.inf)  # a starting interval has no parent
    todo: list[tuple[Arc, NDArray[np.intp], Pool | None, tuple[Frame, Prior] | None,
                     tuple[float, float], int]] = [(arc, anchors, None, None, no_up, 0)
                                                   for arc in Arc.cover(start)]
    out: list[tuple[F64, F64]] = []
    bounded = 0
    while todo:
        arc, alive, pool, parent, up, stall = todo.pop()
        a0, a1 = arc.a0, arc.a1
        if pool is None or not refine:
            alive, _, movers, pool, split = search.bounds(a0, a1, alive, pool, refine)
            parent = None
        else:
            # below the starting intervals the band bounds alone decide: screening by the
            # one spread first costs more than it prunes here (not so for branch_search)
            alive, movers, split, parent = search.narrow(arc, alive, pool, parent)
        if alive.size == 0:
            continue
        total = float(movers.sum())
        up, stall = stalled(total, up, stall)
        bounded += 1
        if bounded > INTERVALS_PER_POINT * m:  # the bounds do not shed: the full sweep
            return None
        if total <= leaf_work * m or a1 - a0 < MIN_WIDTH or stall >= STALL:
            if split is None:
                split = search.split(a0, a1, alive, pool)
            search.collect(arc, alive, split, out, cuts)
            continue
        lo, hi = arc.halves()
        todo += [(hi, alive, pool, parent, up, stall), (lo, alive, pool, parent, up, stall)]
    return out, search.low
