"""Branch and bound over intervals of directions: the exact double-score search.

:func:`~abstain._ood_search.search.exact_search` visits every *state* of every anchor (the
rules whose threshold group holds that point, one per interval between two swaps and one
at each swap): O(m^2 log m) for m distinct score pairs. :func:`branch_search` returns the
same rule while sweeping only the (anchor, interval of directions) pairs whose bound does
not exclude them:

* **Bound.** On an interval ``J = [a0, a1]`` of angles with middle direction ``w_mid``,
  ``|(w(a) - w_mid) . (q - e)| <= rho (|q - c| + |e - c|)`` with ``rho = 2 sin(|J| / 4)``
  and ``c`` the coordinate-wise median. So every point ``q`` with
  ``s_mid(q) + rho |q - c| < s_mid(e) - rho |e - c|`` is strictly below anchor ``e`` at
  every direction of ``J`` (``C(e)``, summed by one sort and a binary search), every point
  above the mirror bound strictly above it (``N(e)``); only the rest (``M(e)``, with ``e``)
  can be accepted partly. A rule anchored at ``e`` in ``J`` accepts ``C(e)`` plus a part
  ``c_q in [0, 1]`` of each point of ``M(e)``, hence, with ``h_q = l_q - r i_q``
  (selective risk ``L / I`` below ``r`` iff ``L - r I < 0``) or the point's share of a
  linear cost, ``objective >= h(C(e)) + sum over M(e) of min(0, h_q)``, and the constraints
  bound ``I <= I(All) - I(N(e))`` and ``O >= O(C(e))``.
* **Bands.** The one spread above counts as movers of ``e`` many points that never swap
  with it on ``J`` (those near ``e`` but far from ``c``). Exactly: with ``u_mid`` the normal
  of ``w_mid``, ``d = w_mid . (q - e)`` and ``t = u_mid . (q - e)``, the order of ``q`` and
  ``e`` at angle ``mid + delta`` is the sign of ``d + tan(delta) t``, so ``q`` stays below
  ``e`` on ``J`` iff ``d < -tan(|J| / 2) |t|``. The pool is cut into bands of its ``u_mid``
  coordinate (quantiles, finer in the tails, :data:`BANDS`, and cut between tight
  clusters); for ``e`` in band ``i`` and ``q`` in band ``j``, ``|t|`` is at most the
  largest distance between the two bands' points, so the movers of ``e`` in band ``j``
  lie in one run of that band sorted by ``s_mid``, found by two binary searches, and the
  rest of the band is certainly below or above ``e``. These
  *band bounds* (the same formula on the smaller ``M(e)``) decide on every interval, after
  the one spread has screened the anchors; on the benchmark data they keep 3 to 20 times
  fewer (anchor, interval) pairs under the linear objective. The ratio objectives, whose
  constraints already prune well, gain little from them on such data, but without them a
  first score with few values and a second of a far smaller scale kept every interval
  down to ``MIN_WIDTH`` (a fit of 450 rows ran for minutes).
* **Pruning.** An (anchor, interval) pair is dropped when its constraints cannot hold,
  when its bound exceeds the incumbent by the relative margin ``MARGIN``, or when every
  rule in it is no better than the incumbent and accepts less ID mass (it loses the tie).
  A pair dropped on an interval stays dropped on its sub-intervals.
* **Refinement.** Intervals wait in a priority queue ordered by their least bound; one
  whose surviving anchors have few points ``M(e)`` is swept exactly (every state of each
  surviving anchor inside the interval, over the points of its bands only), the others
  are halved. The incumbent starts from the best of ``START + 1`` equally spaced
  directions and improves with every sweep. Under the linear objective a leaf is swept on
  the costs alone first (one column instead of three), and again with the masses only for
  the anchors that have a state within the pruning threshold.
* **Cost.** Nothing bounded from rounded projections can separate points whose swaps with
  each other are packed within a rounding error of one angle (a second score that
  underflows towards 0 on a quarter of the rows puts them on one line: in the benchmark
  data of ``n = 1e5``, 24,500 pairs with ``g < 1e-8`` make 3e8 swaps, 90% of them within
  1e-8 of ``pi / 2``); such intervals are halved down to ``MIN_WIDTH`` and swept, at a
  cost proportional to their swaps. Points that never swap but are within that slack of
  each other at an interval's middle direction (a first score with few values, a second of
  a far smaller scale) stay movers however narrow the interval: an interval where they
  are more than ``INSEPARABLE`` of the (anchor, mover) pairs is swept at once. A band whose
  points lie in a few tight clusters of the normal coordinate is cut between them
  (:func:`band_edges`), and bands are bounded by their points' extent, so that two such
  clusters never share one.
* **Exactly the same rule.** The anchors whose swept optimum is within a relative
  ``TIE`` (3e-12) of the optimum (with more than ``MAX_FINALISTS`` of them under a ratio
  objective, those of them with the largest ID mass and then the smallest OOD mass) are
  passed to ``exact_search(..., anchors=...)``, which evaluates every state of each and
  breaks ties as the full sweep does (objectives within a relative 1e-12 are equal; then
  the larger ID mass, the smaller OOD mass, each up to a relative 1e-12, the open state,
  the first anchor). The rule therefore equals the full sweep's: masses are sums of the
  same numbers in another order, whose last bits differ with non-integer weights, and an
  exact comparison of them used to decide 0.4 % of weighted random draws differently. The
  one case left open: a chain of anchors whose objectives (or masses) are each within 1e-12
  of the next but spread over more than ``TIE``, where the full sweep's choice depends on
  the order in which it visits anchors; the objective then still agrees to a relative 1e-12.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._core.exact import cos_sin, dot_sign, sorted_events
from .best import RTOL, Constraint, ahead, rows_best_ratio
from .search import F64, State, along, exact_search, grid_search, unit_weights

#: Relative margin by which a bound must exceed the incumbent to prune.
MARGIN = 1e-9
#: Relative distance to the optimum within which anchors are finalists.
TIE = 3e-12
#: Below this many distinct pairs the full sweep runs instead (it is as fast there).
SWEEP_BELOW = 64
#: Equal intervals of [0, pi] the search starts from (their ends seed the incumbent).
START = 32
#: An interval is swept when its surviving anchors have at most this many movers per point
#: in all (a sweep then costs about as much as bounding the two halves).
LEAF_WORK = 0.5
#: An interval split with more than 1 / SEED_SHARE of the points as surviving anchors has
#: its middle direction evaluated exactly (to improve the incumbent and order the queue).
SEED_SHARE = 64
#: Intervals narrower than this (radians) are swept whatever their movers.
MIN_WIDTH = 1e-7
#: Past this many bounded intervals per point the search stops and runs the full sweep
#: instead: a safety net for data whose bounds never shed movers (halved down to MIN_WIDTH,
#: their intervals double at every level); the benchmark data stay far below it (0.003 to
#: 0.25 per point).
INTERVALS_PER_POINT = 4
#: An interval is swept whatever its movers when more than this share of them are within
#: the rounding slack of its anchors at its middle direction (halving cannot shed them).
INSEPARABLE = 0.5
#: Quantiles of the normal coordinate that cut a pool into bands (finer in the tails, where
#: a few far points would otherwise widen a band).
BANDS = np.concatenate(([0.0, 1e-3, 0.01], np.linspace(0.05, 0.95, 7),
                        [0.99, 0.999, 1.0]))
#: A band is cut at its widest gaps when at most this many hold all but GAP_REST of its
#: span (:func:`band_edges`).
GAP_CUTS = 16
GAP_REST = 0.02
#: At most this many (anchor, point) pairs per batch of a sweep.
_CHUNK = 1 << 16
#: Ratio objectives with more tied anchors than this keep those of the largest ID mass.
MAX_FINALISTS = 64

Slopes = tuple[float, float, float]
#: Points that may still move past a surviving anchor (indices) and the masses (ID, OOD,
#: loss, count) of those below every surviving anchor.
Pool = tuple[NDArray[np.intp], F64]


def _cumsum0(a: F64) -> F64:
    out = np.zeros((a.shape[0] + 1,) + a.shape[1:])
    np.cumsum(a, axis=0, out=out[1:])
    return out


def _rows(a: F64, i: NDArray[np.intp]) -> F64:
    """``a[i]`` (rows): ``np.take`` gathers rows several times faster than indexing."""
    return np.take(a, i, axis=0)


def _search(sorted_a: F64, q: F64, side: Literal["left", "right"]) -> NDArray[np.intp]:
    """``np.searchsorted(sorted_a, q, side)``, with the queries searched in sorted order
    (several times faster on large unsorted ``q``)."""
    o = np.argsort(q)
    out = np.empty(q.size, dtype=np.intp)
    out[o] = np.searchsorted(sorted_a, q[o], side=side)
    return out


def _cos_sin(a: float) -> tuple[float, float]:
    """``cos a, sin a`` with the same bits on every CPU (:func:`~abstain._core.exact.cos_sin`)."""
    c, s = cos_sin(np.array([a]))
    return float(c[0]), float(s[0])


def _sin(a: float) -> float:
    return _cos_sin(a)[1]


class Arc(NamedTuple):
    """An interval of directions: its end angles ``a0 < a1`` (for the bounds) and the unit
    vectors ``w0``, ``w1`` of its ends, computed once and shared with the neighbouring
    intervals. A sweep places each swap against these vectors exactly, so a swap at an end
    lies in both intervals that share it, and in no gap, whatever the rounding of the
    vectors."""

    a0: float
    a1: float
    w0: F64
    w1: F64

    @classmethod
    def cover(cls, start: int) -> list[Arc]:
        """``start`` equal intervals of ``[0, pi]``."""
        angles = np.linspace(0.0, math.pi, start + 1)
        angles[-1] = math.pi
        w = unit_weights(angles)
        return [cls(float(angles[j]), float(angles[j + 1]), w[j], w[j + 1])
                for j in range(start)]

    def halves(self) -> tuple[Arc, Arc]:
        mid = 0.5 * (self.a0 + self.a1)
        wm = unit_weights(np.array([mid]))[0]
        return Arc(self.a0, mid, self.w0, wm), Arc(mid, self.a1, wm, self.w1)


class _Record(NamedTuple):
    anchor: NDArray[np.intp]
    obj: F64
    I: F64  # noqa: E741
    O: F64  # noqa: E741


class BandSplit(NamedTuple):
    """The bands of a pool on an interval: ``order`` the pool's points by band, then by
    projection on the middle direction; for each anchor (row), the part of band ``j`` that may
    move past it is ``order[lo[:, j]:hi[:, j]]``; ``C`` (ID, OOD, loss, count) the masses
    certainly below it, ``band`` the masses of its movers and their negative parts."""

    order: NDArray[np.intp]
    lo: NDArray[np.intp]
    hi: NDArray[np.intp]
    C: F64
    band: F64

    def take(self, keep: NDArray[np.intp]) -> BandSplit:
        return BandSplit(self.order, self.lo[keep], self.hi[keep], self.C[keep], self.band[keep])

    def batches(self, chunk: int) -> Iterator[tuple[int, int]]:
        """Consecutive anchor rows ``[b0, b1)`` whose movers total at most ``chunk`` (at
        least one row each): the batches of a sweep."""
        work = (self.hi - self.lo).sum(axis=1)
        ends = np.cumsum(work)
        b0 = 0
        while b0 < work.size:
            b1 = max(b0 + 1, int(np.searchsorted(ends, ends[b0] - work[b0] + chunk, "right")))
            yield b0, b1
            b0 = b1


class Frame(NamedTuple):
    """A pool cut into bands (:meth:`IntervalSearch.frame`): the direction ``mid`` (angle)
    whose normal coordinate the band ``edges`` cut, the pool's points ``order`` by band and
    then by projection ``ss`` on ``mid``, where each band starts in them (``start``), the
    running masses ``cum`` along them (a row of zeros first), and the least and largest
    normal coordinate of each band's points (``t_min``, ``t_max``)."""

    mid: float
    edges: F64
    order: NDArray[np.intp]
    ss: F64
    start: NDArray[np.intp]
    cum: F64
    t_min: F64
    t_max: F64


def band_edges(sample: F64) -> F64:
    """Edges of bands of the sorted ``sample``: its quantiles :data:`BANDS`, each band then
    cut at its widest gaps when at most :data:`GAP_CUTS` of them (and at most one in four)
    hold all but :data:`GAP_REST` of its span (its points lie in a few tight clusters, such
    as a score with few values). Points of one cluster then share a band only with their
    own cluster, whose span, not the gaps', bounds their offsets."""
    edges = np.quantile(sample, BANDS)
    pos = np.searchsorted(sample, edges, side="left")
    cuts = []
    for j in range(edges.size - 1):
        seg = sample[pos[j]:pos[j + 1]]
        most = min(GAP_CUTS, (seg.size - 1) // 4)  # clusters of 4 sample points or more
        if most <= 0:
            continue
        gap = np.diff(seg)
        widest = np.sort(gap)[::-1][:most]
        k = int(np.searchsorted(np.cumsum(widest), (1 - GAP_REST) * (seg[-1] - seg[0])))
        if k < most and widest[k] > 0:
            cuts.append(seg[1:][gap >= widest[k]][:most])
    if not cuts:
        return edges
    return np.sort(np.concatenate((edges, np.setdiff1d(np.concatenate(cuts), edges))))


def _extents(t: F64, start: NDArray[np.intp], edges: F64) -> tuple[F64, F64]:
    """The least and largest of ``t`` in each band (``t[start[j]:start[j + 1]]``); an empty
    band gets its lower edge for both."""
    t_min, t_max = edges[:-1].copy(), edges[:-1].copy()
    full = np.flatnonzero(start[1:] > start[:-1])
    if full.size:
        t_min[full] = np.minimum.reduceat(t, start[full])
        t_max[full] = np.maximum.reduceat(t, start[full])
    return t_min, t_max


def _band_ends(seg: F64, at: int, q_s: F64, q_b: NDArray[np.intp], d: F64,
               side: Literal["left", "right"], old: tuple[NDArray[np.intp], F64] | None,
               ) -> NDArray[np.intp]:
    """``at`` plus the positions in ``seg`` of the projections ``q_s`` shifted by the
    offset ``d`` of their band ``q_b``; ``old``: positions searched before and the
    offsets they were searched at, kept where the offset is the same."""
    if old is None:
        return at + np.searchsorted(seg, q_s + d[q_b], side=side)
    out = old[0].copy()
    new = np.flatnonzero((d != old[1])[q_b])
    out[new] = at + np.searchsorted(seg, q_s[new] + d[q_b[new]], side=side)
    return out


class Prior(NamedTuple):
    """An interval's bands of its anchors (rows of ``lo`` and ``hi`` as in
    :class:`BandSplit`) and the offsets ``d_lo``, ``d_hi`` (anchor's band, point's band)
    they were searched at, with the largest ``|tan|`` of its angles from the frame's
    direction (:meth:`IntervalSearch.bands`)."""

    lo: NDArray[np.intp]
    hi: NDArray[np.intp]
    d_lo: F64
    d_hi: F64
    reach: float


def mover_pairs(e: NDArray[np.intp], oc: NDArray[np.intp], lo: NDArray[np.intp],
           hi: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The (row of the anchor in ``e``, point) pairs of the runs ``oc[lo[i, j]:hi[i, j]]`` of
    each anchor ``e[i]``, the anchor itself left out."""
    start, stop = lo.reshape(-1), hi.reshape(-1)
    counts = stop - start
    row = np.repeat(np.repeat(np.arange(e.size), lo.shape[1]), counts)
    offs = np.cumsum(counts) - counts
    q = oc[np.arange(row.size) - np.repeat(offs - start, counts)]
    own = q != e[row]
    return row[own], q[own]


class IntervalSearch:
    """The sample, the incumbent and the swept (anchor, objective) records."""

    def __init__(self, points: F64, x: F64, con: Constraint | None, slopes: Slopes | None,
                 scale_i: float, scale_o: float) -> None:
        self.points, self.x, self.con, self.slopes = points, x, con, slopes
        self.scale_i, self.scale_o = scale_i, scale_o
        m = points.shape[0]
        c = np.median(points, axis=0)
        self.r = np.hypot(points[:, 0] - c[0], points[:, 1] - c[1])
        # round-off of a projected score, far below any gap the bounds rely on
        self.eps = 4e-12 * float(np.max(np.abs(points[:, 0])) + np.max(np.abs(points[:, 1])))
        self.pr, self.pg = points[:, 0].copy(), points[:, 1].copy()
        self.xi, self.xo, self.xl = x[:, 0].copy(), x[:, 1].copy(), x[:, 2].copy()
        self.x4 = np.concatenate((x, np.ones((m, 1))), axis=1)
        self.tot4 = self.x4.sum(axis=0)
        self.slack_i = 1e-9 * max(scale_i, 1.0)
        if slopes is not None:
            sl, si, so = slopes[2], slopes[0], slopes[1]
            self.h = sl * x[:, 2] + si * x[:, 0] + so * x[:, 1]
            self.h_abs = float(np.sum(np.abs(self.h)))
        self.inc: tuple[float, float, float] | None = None  # objective, I, O
        self.records: list[_Record] = []

    # ---------------------------------------------------------------- incumbent
    def offer(self, obj: float, i: float, o: float) -> None:
        if self.inc is None:
            self.inc = (obj, i, o)
            return
        tol = RTOL * max(abs(self.inc[0]), 1e-300)
        if obj < self.inc[0] - tol or (obj <= self.inc[0] + tol
                                       and ahead(i, o, self.inc[1], self.inc[2])):
            self.inc = (obj, i, o)

    def seed(self, angles: F64) -> F64:
        """Evaluate the directions of ``angles`` exactly (tie groups of the exact projections,
        so the incumbent is always a rule of the exact search); their best objectives (inf
        where no rule is feasible)."""
        w = unit_weights(angles)
        x = self.x
        out = np.full(angles.size, math.inf)
        for j, f in enumerate(grid_search(self.points, w, x[:, 0], x[:, 1], x[:, 2], self.con,
                                          self.slopes, self.scale_i, self.scale_o,
                                          exact=True)):
            if f is not None:
                self.offer(f[0].objective, f[0].I, f[0].O)
                out[j] = f[0].objective
        return out

    def threshold(self) -> float:
        """Bounds above this cannot hold the optimum."""
        if self.inc is None:
            return math.inf
        v = self.inc[0]
        if self.con is not None:
            return v * (1 + MARGIN)
        return v + MARGIN * max(abs(v), 1.0) + 1e-9 * self.h_abs

    def inseparable(self, mid: float, e: NDArray[np.intp], pool: Pool) -> float:
        """The (anchor, point) pairs of ``e`` and ``pool`` whose projections on the direction
        ``mid`` are within the rounding slack of the bounds: movers of the anchor on every
        interval around ``mid``, however narrow, unless their normal offset is large."""
        cw, sw = _cos_sin(mid)
        idx = pool[0]
        s = np.sort(along(self.pr[idx], self.pg[idx], cw, sw))
        s_e = along(self.pr[e], self.pg[e], cw, sw)
        near = (np.searchsorted(s, s_e + 4 * self.eps, side="right")
                - np.searchsorted(s, s_e - 4 * self.eps, side="left"))
        return float(np.maximum(near - 1, 0).sum())

    # ---------------------------------------------------------------- bounds
    def bounds(self, a0: float, a1: float, anchors: NDArray[np.intp] | None,
               pool: Pool | None, refine: bool = True, screen: bool = True,
               ) -> tuple[NDArray[np.intp], F64, F64, Pool, BandSplit | None]:
        """Surviving anchors of ``[a0, a1]``, their lower bounds, their numbers of movers, the
        pool of points that can be movers of one of them there and, with ``refine``, their
        movers by bands (whose bounds then decide). Without ``screen`` (only with ``refine``
        and a ``pool``) the band bounds alone decide: the one spread neither screens the
        anchors nor narrows the pool first."""
        m = self.points.shape[0]
        e = np.arange(m) if anchors is None else anchors
        if not screen:
            assert refine and pool is not None
            split = self._split(a0, a1, e, pool[0], pool[1], self._columns(pool[0]))
            out = self._decide(split.C, self.tot4 - split.C - split.band[:, :4],
                               split.band[:, 4:])
            return e[out[0]], out[1], out[2], pool, split.take(out[0])
        rho = 2.0 * _sin(0.25 * (a1 - a0)) * (1 + 1e-9)
        mid = 0.5 * (a0 + a1)
        cw, sw = _cos_sin(mid)
        if pool is None:
            idx, base = np.arange(m), np.zeros(4)
            s = along(self.pr, self.pg, cw, sw)
            spread = rho * self.r + self.eps
        else:
            idx, base = pool
            s = along(self.pr[idx], self.pg[idx], cw, sw)
            spread = rho * self.r[idx] + self.eps
        hi, lo = s + spread, s - spread
        if anchors is None:
            lo_e, hi_e = lo, hi
        else:
            s_e = along(self.pr[e], self.pg[e], cw, sw)
            spread_e = rho * self.r[e] + self.eps
            lo_e, hi_e = s_e - spread_e, s_e + spread_e
        # points below (above) every anchor's bound count for all of them, here and in
        # every sub-interval
        if pool is not None:
            under = hi < float(lo_e.min())
            base = base + self.x4[idx[under]].sum(axis=0)
            keep = np.flatnonzero(~under & (lo <= float(hi_e.max())))
            idx, hi, lo = idx[keep], hi[keep], lo[keep]
        v = self._columns(idx)
        oh, ol = np.argsort(hi), np.argsort(lo)
        ch, cl = _cumsum0(_rows(v, oh)), _cumsum0(_rows(v, ol))
        band = cl[-1]
        cb = _rows(ch, _search(hi[oh], lo_e, "left"))  # band points below e
        nb = band - _rows(cl, _search(lo[ol], hi_e, "right"))  # band points above e
        out = self._decide(base + cb[:, :4], (self.tot4 - base - band[:4]) + nb[:, :4],
                           band[4:] - cb[:, 4:] - nb[:, 4:])
        e, lo_e, hi_e = e[out[0]], lo_e[out[0]], hi_e[out[0]]
        if e.size == 0:
            return e, np.zeros(0), np.zeros(0), (idx, base), None
        # the pool of the survivors
        under = hi < float(lo_e.min())
        base = base + v[under, :4].sum(axis=0)
        keep = np.flatnonzero(~under & (lo <= float(hi_e.max())))
        idx, v = idx[keep], v[keep]
        if not refine:
            return e, out[1], out[2], (idx, base), None
        split = self._split(a0, a1, e, idx, base, v)
        out = self._decide(split.C, self.tot4 - split.C - split.band[:, :4], split.band[:, 4:])
        return e[out[0]], out[1], out[2], (idx, base), split.take(out[0])

    def split(self, a0: float, a1: float, e: NDArray[np.intp], pool: Pool) -> BandSplit:
        """The bands of ``pool`` for the anchors ``e`` on ``[a0, a1]`` (:meth:`_split`)."""
        return self._split(a0, a1, e, pool[0], pool[1], self._columns(pool[0]))

    def _columns(self, idx: NDArray[np.intp]) -> F64:
        """The masses (ID, OOD, loss, count) of the points ``idx`` and the negative parts
        that bound the objective over movers."""
        cols = [self.xi[idx], self.xo[idx], self.xl[idx], np.ones(idx.size)]
        inc = self.inc
        if self.con is not None and inc is not None:
            xi, xl = cols[0], cols[2]
            r_t = inc[0] * (1 + MARGIN)
            cols += [np.minimum(0.0, xl - r_t * xi), np.minimum(0.0, xl - inc[0] * xi)]
        elif self.slopes is not None:
            cols.append(np.minimum(0.0, self.h[idx]))
        return np.stack(cols, axis=1)

    def _decide(self, C: F64, N: F64, neg: F64) -> tuple[NDArray[np.intp], F64, F64]:
        """The anchors kept, their bounds and movers, from the masses ``C`` certainly below
        and ``N`` certainly above each (ID, OOD, loss, count) and ``neg``, the negative parts
        over the rest (its movers, the anchor included)."""
        m = self.points.shape[0]
        inc = self.inc
        movers = m - 1 - C[:, 3] - N[:, 3]  # the anchor itself excluded
        i_hi = self.tot4[0] - N[:, 0]
        if self.con is not None:
            con = self.con
            drop = i_hi < con.a - RTOL * self.scale_i
            drop |= C[:, 1] - con.k * i_hi > con.b + RTOL * (self.scale_o + con.k * self.scale_i)
            with np.errstate(divide="ignore", invalid="ignore"):
                lb = np.where(i_hi > 0, C[:, 2] / i_hi, math.inf)
            if inc is not None:
                r_t = inc[0] * (1 + MARGIN)
                d_t = C[:, 2] - r_t * C[:, 0] + neg[:, 0]
                drop |= d_t > 1e-9 * (self.tot4[2] + r_t * self.tot4[0]) + 1e-300
                d_0 = C[:, 2] - inc[0] * C[:, 0] + neg[:, 1]
                slack = 0.0 if inc[0] == 0 else 1e-9 * (self.tot4[2] + inc[0] * self.tot4[0])
                drop |= (d_0 >= slack) & (i_hi < inc[1] - self.slack_i)
        else:
            assert self.slopes is not None and inc is not None
            sl, si, so = self.slopes[2], self.slopes[0], self.slopes[1]
            lb = sl * C[:, 2] + si * C[:, 0] + so * C[:, 1] + neg[:, 0]
            drop = lb > self.threshold()
            drop |= (lb >= inc[0] + 1e-9 * self.h_abs) & (i_hi < inc[1] - self.slack_i)
        keep = np.flatnonzero(~drop)
        return keep, lb[keep], movers[keep]

    def _split(self, a0: float, a1: float, e: NDArray[np.intp], idx: NDArray[np.intp],
               base: F64, v: F64) -> BandSplit:
        """The pool ``idx`` (columns ``v`` of :meth:`_columns`) cut into bands of ``t``, the
        coordinate along the normal ``u_mid`` of the middle direction, and for each anchor the
        part of each band that may move past it on ``[a0, a1]`` (see the module docstring)."""
        return self.bands(a0, a1, e, base, self.frame(0.5 * (a0 + a1), idx, v))[0]

    def frame(self, mid: float, idx: NDArray[np.intp], v: F64) -> Frame:
        """The pool ``idx`` (columns ``v``) in bands of its coordinate along the normal of the
        direction ``mid``, each band sorted by the projection on it."""
        cw, sw = _cos_sin(mid)
        s = along(self.pr[idx], self.pg[idx], cw, sw)
        t = along(self.pr[idx], self.pg[idx], -sw, cw)
        # any edges will do (a point's band is found by the same edges); the outer ones hold
        # every point
        edges = band_edges(np.sort(t[:: max(1, t.size // 4096)]))
        edges[0], edges[-1] = t.min(), t.max()
        b = np.searchsorted(edges[1:-1], t, side="right").astype(np.uint8)
        order = np.argsort(s)
        order = order[np.argsort(b[order], kind="stable")]
        start = np.searchsorted(b[order], np.arange(edges.size))
        t_min, t_max = _extents(t[order], start, edges)
        return Frame(mid, edges, idx[order], s[order], start, _cumsum0(_rows(v, order)),
                     t_min, t_max)

    def bands(self, a0: float, a1: float, e: NDArray[np.intp], base: F64, frame: Frame,
              prior: Prior | None = None) -> tuple[BandSplit, Prior]:
        """For each anchor ``e`` and band of ``frame``, the part of the band that may move
        past it on ``[a0, a1]`` (any frame whose direction is within pi/2 of the interval's),
        and these parts with the offsets they were searched at, for a sub-interval's call.

        With ``d`` and ``t`` the offset of a point from the anchor along the frame's
        direction and its normal, the point is on the anchor's side ``d + tan(delta) t`` at
        the angle ``mid + delta``; for ``delta`` over the interval and ``t`` over the
        offsets between two bands, the points that may change side have ``d`` between the
        least and the largest of the four products ``-t tan(delta)`` at the corners.
        ``prior``: the same for the anchors ``e`` on an interval holding ``[a0, a1]``, on the
        same frame; an end searched at the same offset there is taken as it is (on a half,
        about one end in two). The offsets are widened by the round-off of ``t`` times the
        largest ``|tan|``, so that an interval as wide as ``[0, pi]`` (``start=1``) keeps
        the pairs that tie with the anchor at its ends as movers."""
        cw, sw = _cos_sin(frame.mid)
        er, eg = self.pr[e], self.pg[e]
        s_e = along(er, eg, cw, sw)
        t_e = along(er, eg, -sw, cw)
        edges, start, ss, cum = frame.edges, frame.start, frame.ss, frame.cum
        b_e = np.searchsorted(edges[1:-1], t_e, side="right")
        tan = []
        for a in (a0, a1):
            c, s = _cos_sin(a - frame.mid)
            tan.append(s / c)
        # the same slack on a half as on its parent, so that shared corners are equal
        reach = max(abs(tan[0]), abs(tan[1])) if prior is None else prior.reach
        tan = [tan[0] - 1e-9 * reach, tan[1] + 1e-9 * reach]
        # the least and largest offset t between a point of band j and an anchor of band i
        t_min, t_max = frame.t_min.copy(), frame.t_max.copy()
        np.minimum.at(t_min, b_e, t_e)
        np.maximum.at(t_max, b_e, t_e)
        t_lo = t_min[None, :] - t_max[:, None]
        t_hi = t_max[None, :] - t_min[:, None]
        corners = np.stack([-t * x for t in (t_lo, t_hi) for x in tan])
        # the round-off of t (within eps) grows by |tan|: an interval as wide as [0, pi]
        # (|tan| up to 1.6e16 at its ends) makes every point a mover; narrow ones add ~eps
        pad = 4 * self.eps * (1.0 + reach)
        d_lo = corners.min(axis=0) - pad
        d_hi = corners.max(axis=0) + pad
        nb = edges.size - 1
        k = e.size
        # the anchors by band, then by projection: each band's queries of a band of points
        # are shifted by one offset, so they stay sorted (sorted queries search faster)
        by = np.argsort(s_e)
        by = by[np.argsort(b_e[by].astype(np.uint8), kind="stable")]
        q_s, q_b = s_e[by], b_e[by]
        C = np.tile(base, (k, 1))
        band = np.zeros((k, cum.shape[1]))
        lo_t = np.empty((nb, k), dtype=np.intp)
        hi_t = np.empty((nb, k), dtype=np.intp)
        olds: list[tuple[NDArray[np.intp], F64] | None] = [None] * (2 * nb)
        if prior is not None:
            old_lo, old_hi = np.take(prior.lo, by, axis=0), np.take(prior.hi, by, axis=0)
            for j in range(nb):
                olds[j] = (old_lo[:, j], prior.d_lo[:, j])
                olds[nb + j] = (old_hi[:, j], prior.d_hi[:, j])
        for j in range(nb):
            seg = ss[start[j]:start[j + 1]]
            lo_t[j] = _band_ends(seg, int(start[j]), q_s, q_b, d_lo[:, j], "left", olds[j])
            hi_t[j] = _band_ends(seg, int(start[j]), q_s, q_b, d_hi[:, j], "right",
                                 olds[nb + j])
            c_lo = _rows(cum, lo_t[j])
            C += c_lo[:, :4] - cum[start[j], :4]
            band += _rows(cum, hi_t[j]) - c_lo
        # back to the anchors' order (np.take gathers rows faster than indexing scatters)
        inv = np.empty(k, dtype=np.intp)
        inv[by] = np.arange(k)
        lo, hi = np.take(lo_t.T, inv, axis=0), np.take(hi_t.T, inv, axis=0)
        C, band = np.take(C, inv, axis=0), np.take(band, inv, axis=0)
        return BandSplit(frame.order, lo, hi, C, band), Prior(lo, hi, d_lo, d_hi, reach)

    # ---------------------------------------------------------------- exact sweep of a leaf
    def sweep(self, arc: Arc, anchors: NDArray[np.intp], split: BandSplit) -> None:
        """Every state of each anchor at the directions of ``[a0, a1]``: the incumbent and the
        records (each anchor's best there). Only the points of an anchor's bands in ``split``
        may move past it; the others are below it (``split.C``) or above it there."""
        for b0, b1 in split.batches(_CHUNK):
            e, base = anchors[b0:b1], split.C[b0:b1, :3]
            lo, hi = split.lo[b0:b1], split.hi[b0:b1]
            if self.slopes is not None:
                # the costs alone first: only anchors with a state near the incumbent are
                # swept again with their masses
                sl, si, so = self.slopes[2], self.slopes[0], self.slopes[1]
                row, P, G = self._states(arc, e, split.order, lo, hi, self.h[:, None],
                                       (sl * base[:, 2] + si * base[:, 0]
                                        + so * base[:, 1])[:, None])
                lim = self.threshold() + 1e-12 * self.h_abs
                near = np.unique(row[np.minimum(P[:, 0], P[:, 0] + G[:, 0]) <= lim])
                e, base, lo, hi = e[near], base[near], lo[near], hi[near]
            if e.size:
                self._reduce(e, *self._states(arc, e, split.order, lo, hi, self.x, base))

    def _states(self, arc: Arc, e: NDArray[np.intp], oc: NDArray[np.intp],
                lo: NDArray[np.intp], hi: NDArray[np.intp], x: F64,
                base: F64) -> tuple[NDArray[np.intp], F64, F64]:
        """The states of the anchors ``e`` on ``[a0, a1]``: for each, its row in ``e``, the
        masses (columns of ``x``) below it and those of its group. The points that may move
        past ``e[i]`` are ``oc[lo[i, j]:hi[i, j]]``; ``base[i]`` holds those below it."""
        row, q = mover_pairs(e, oc, lo, hi)
        a0, a1, w0, w1 = arc
        return self.states_of(e, row, q, x, base, (w0, w1), a0 == 0.0, a1 == math.pi)

    def states_of(self, e: NDArray[np.intp], row: NDArray[np.intp], q: NDArray[np.intp],
                  x: F64, base: F64, ends: tuple[F64, F64], at_zero: bool, at_pi: bool,
                  ) -> tuple[NDArray[np.intp], F64, F64]:
        """The states of :meth:`_states` from the movers ``q`` of the anchors ``e[row]`` (each
        anchor's interval of directions from ``ends[0]`` to ``ends[1]``: unit vectors, one
        for all or one row per mover; ``at_zero``, ``at_pi``: whether it starts at the angle
        0 or ends at pi)."""
        pts = self.points
        k = e.size
        ea = e[row]
        pr, pg, er, eg = pts[q, 0], pts[q, 1], pts[ea, 0], pts[ea, 1]
        dr, dg = pr - er, pg - eg
        zero = dr == 0
        # where each swap lies against the ends of the interval, exactly: with u the offset
        # signed so that u_r > 0, a swap lies before the direction w iff u . w < 0
        side = np.where(dr < 0, -1, 1).astype(np.int8)
        w0, w1 = ends
        t0 = side * dot_sign(pr, pg, er, eg, w0[..., 0], w0[..., 1], (dr, dg))
        t1 = side * dot_sign(pr, pg, er, eg, w1[..., 0], w1[..., 1], (dr, dg))
        # at the start of the interval (just before a0): a point of smaller first score is
        # below until its swap, one of larger first score from its swap on
        below = np.where(zero, dg < 0, np.where(dr < 0, t0 >= 0, t0 < 0))
        xq = x[q]
        xe = x[e]
        c = x.shape[1]

        def per_row(mask: NDArray[np.bool_]) -> F64:
            return np.stack([np.bincount(row, weights=np.where(mask, xq[:, j], 0.0),
                                         minlength=k) for j in range(c)], axis=1)

        p0 = base + per_row(below)
        P, G, R = [p0], [xe], [np.arange(k)]
        if at_zero:
            P.append(base + per_row(dr < 0))
            G.append(xe + per_row(zero))
            R.append(np.arange(k))
        if at_pi:
            P.append(base + per_row(dr > 0))
            G.append(xe + per_row(zero))
            R.append(np.arange(k))
        ev = np.flatnonzero(~zero & (t0 >= 0) & (t1 <= 0))
        if ev.size:
            srt, new = sorted_events(row[ev], er[ev], eg[ev], pr[ev], pg[ev])
            ev = ev[srt]
            rw, xv = row[ev], xq[ev]
            wb = np.where(below[ev][:, None], xv, 0.0)
            cx, cwb = _cumsum0(xv), _cumsum0(wb)
            flip = cx - 2.0 * cwb  # below flips to above: -x; above to below: +x
            first = np.flatnonzero(np.concatenate(([True], rw[1:] != rw[:-1])))
            row_first = np.repeat(first, np.diff(np.append(first, rw.size)))
            gs = np.flatnonzero(new)
            ge = np.append(gs[1:], rw.size)
            gr = rw[gs]
            rf = row_first[gs]
            before = p0[gr] + flip[gs] - flip[rf]
            P += [before - (cwb[ge] - cwb[gs]), p0[gr] + flip[ge] - flip[rf]]
            G += [xe[gr] + cx[ge] - cx[gs], xe[gr]]
            R += [gr, gr]
        return np.concatenate(R), np.concatenate(P), np.concatenate(G)

    def _reduce(self, e: NDArray[np.intp], row: NDArray[np.intp], P: F64, G: F64) -> None:
        """Each anchor's best state point: the records and the incumbent."""
        k = e.size
        if self.con is not None:
            order = np.argsort(row, kind="stable")
            row, P, G = row[order], P[order], G[order]
            con = self.con
            lim = con.b + RTOL * (self.scale_o + con.k * self.scale_i)
            i_end = P[:, 0] + G[:, 0]
            o_start = P[:, 1] - con.k * P[:, 0]
            cand = np.flatnonzero((i_end >= con.a - RTOL * self.scale_i)
                                  & ((o_start <= lim) | (o_start + G[:, 1] - con.k * G[:, 0]
                                                         <= lim)))
            r = rows_best_ratio(row[cand], cand, P[cand, 0], P[cand, 1], P[cand, 2],
                                G[cand, 0], G[cand, 1], G[cand, 2], k, con, self.scale_i,
                                self.scale_o)
            found, obj, ii, oo = r.found, r.objective, r.I, r.O
        else:
            assert self.slopes is not None
            si, so, sl = self.slopes
            pts = np.concatenate((P, P + G))
            rr = np.concatenate((row, row))
            cost = sl * pts[:, 2] + si * pts[:, 0] + so * pts[:, 1]
            near = np.flatnonzero(cost <= self.threshold())  # others cannot be finalists
            if near.size == 0:
                return
            pts, rr, cost = pts[near], rr[near], cost[near]
            o1 = np.lexsort((pts[:, 1], -pts[:, 0], cost, rr))
            firsts = o1[np.concatenate(([True], rr[o1][1:] != rr[o1][:-1]))]
            found = np.zeros(k, dtype=bool)
            obj, ii, oo = np.full(k, np.inf), np.zeros(k), np.zeros(k)
            fr = rr[firsts]
            found[fr] = True
            obj[fr], ii[fr], oo[fr] = cost[firsts], pts[firsts, 0], pts[firsts, 1]
        f = np.flatnonzero(found)
        if f.size == 0:
            return
        self.records.append(_Record(e[f], obj[f], ii[f], oo[f]))
        best = f[np.lexsort((oo[f], -ii[f], obj[f]))[0]]
        self.offer(float(obj[best]), float(ii[best]), float(oo[best]))

    # ---------------------------------------------------------------- finalists
    def finalists(self) -> NDArray[np.intp] | None:
        if not self.records:
            return None
        rec = _Record(*(np.concatenate(c) for c in zip(*self.records, strict=True)))
        opt = float(rec.obj.min())
        if self.con is not None:
            tie = opt * (1 + TIE)
        else:
            tie = opt + TIE * max(abs(opt), 1e-300) + 1e-12 * self.h_abs
        near = rec.obj <= tie
        if self.con is not None and np.unique(rec.anchor[near]).size > MAX_FINALISTS:
            near &= rec.I >= rec.I[near].max() - self.slack_i
            near &= rec.O <= rec.O[near].min() + 1e-9 * max(self.scale_o, 1.0)
        return np.unique(rec.anchor[near])


def branch_search(
    points: F64, x: F64, con: Constraint | None, slopes: Slopes | None,
    scale_i: float, scale_o: float, *, sweep_below: int = SWEEP_BELOW,
    leaf_work: float = LEAF_WORK, start: int = START, refine: bool = True,
) -> State | None:
    """The rule of :func:`~abstain._ood_search.search.exact_search` (same arguments) by branch
    and bound over intervals of directions (see the module docstring).

    ``sweep_below``: at most this many points run the full sweep; ``leaf_work`` (movers
    per point) and ``start`` tune the refinement, ``refine`` whether the band bounds decide
    on every interval (else only the one spread does); the result does not depend on them.
    """
    m = points.shape[0]
    if m <= sweep_below:
        return exact_search(points, x, con, slopes, scale_i, scale_o)
    search = IntervalSearch(points, x, con, slopes, scale_i, scale_o)
    arcs = Arc.cover(start)
    value = search.seed(np.array([a.a0 for a in arcs] + [math.pi]))
    # (priority, order, interval, surviving anchors or None for all, pool, lower bound): the
    # interval whose ends' best rule is best comes first, so that the incumbent improves
    # early; the bound decides what is pruned
    heap: list[tuple[float, int, Arc, NDArray[np.intp] | None, Pool | None, float]] = [
        (min(value[j], value[j + 1]), j, arc, None, None, -math.inf)
        for j, arc in enumerate(arcs)]
    heapq.heapify(heap)
    count = start
    bounded = 0
    while heap:
        priority, _, arc, anchors, pool, key = heapq.heappop(heap)
        if key > search.threshold():
            continue
        a0, a1 = arc.a0, arc.a1
        alive, lb, movers, pool, split = search.bounds(a0, a1, anchors, pool, refine)
        if alive.size == 0:
            continue
        work = float(movers.sum())
        bounded += 1
        if bounded > INTERVALS_PER_POINT * m:  # the bounds do not shed: sweep every swap
            return exact_search(points, x, con, slopes, scale_i, scale_o)
        if (work <= leaf_work * m or a1 - a0 < MIN_WIDTH
                or search.inseparable(0.5 * (a0 + a1), alive, pool) > INSEPARABLE * work):
            search.sweep(arc, alive, search.split(a0, a1, alive, pool) if split is None
                         else split)
            continue
        if alive.size * SEED_SHARE > m:  # many anchors survive: try the middle direction
            priority = float(search.seed(np.array([0.5 * (a0 + a1)]))[0])
        low = float(lb.min())
        for half in arc.halves():
            heapq.heappush(heap, (priority, count, half, alive, pool, low))
            count += 1
    chosen = search.finalists()
    if chosen is None:
        return None
    return exact_search(points, x, con, slopes, scale_i, scale_o, anchors=chosen)
