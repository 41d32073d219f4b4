"""The exact envelope of the curves of a two-score method over all directions.

For two score columns every direction ``w = (cos a, sin a)``, ``a`` in ``[0, pi)`` (the
half-circle of the grid of :func:`~abstain._ood_search.search.grid_angles`), gives one
combined score and one curve of (accepted OOD mass, accepted gain mass) over the
randomised threshold rules (the repository's tie rule: every tie group is one segment).
The *envelope* is, at each accepted OOD mass, the largest gain over all these curves.

The order of the projected points changes only at the angles where two of them tie, so
every segment of every curve is the group of one *anchor* point in one of its states
(:func:`~abstain._ood_search.search.anchor_batches`): the angle 0, an open interval between
two of its events, or an event. Only anchors with OOD mass give segments of positive
width. At an event inside ``(0, pi)`` where the anchor ties with exactly one other point,
the group's segment is a diagonal of the parallelogram whose upper sides are the two
segments of the orders just before and after the event, so it never rises above them and
is left out; events where three or more points tie and the angle 0 are kept.

The masses of OOD rows count once each (integer masses), so every segment starts and ends
at an integer OOD mass. Cut at every segment's ends, the OOD axis falls into elementary
intervals that each segment covers whole or not at all, and on each the envelope is the
maximum of finitely many lines: :class:`Lines`. A segment covers at most as many of them as
its OOD width, and no more than there are segment ends, so a table of a few distinct pairs
with millions of OOD rows each gives few pieces.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from .search import anchor_batches, anchor_layouts, anchor_states

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: Flat segments (no gain) of up to this many OOD rows are kept by start in one array per
#: width instead of being sorted with the others (the commonest: one OOD row alone, or a
#: row drawn this many times in a resample), where the OOD rows are at most the larger of
#: ``DENSE_FLAT`` per distinct pair and ``2**19`` (their arrays: 71 MB per gain column at
#: 2**19). Beyond (a table of few pairs with many rows each), the arrays would grow with
#: the rows: the flat segments are kept as a list of distinct (width, start) pairs, which
#: costs more time per segment.
FLAT = 16
DENSE_FLAT = 4


class Lines(NamedTuple):
    """The envelope's pieces: on the elementary interval ``k[j]`` of accepted OOD mass, from
    ``edges[k[j]]`` to ``edges[k[j] + 1]`` (whole numbers), the line from gain ``a[j]``
    (left end) to ``b[j]`` (right end). ``total`` is the whole gain (the envelope's value
    at the last OOD mass ``n_ood``)."""

    k: I64
    a: F64
    b: F64
    n_ood: int
    total: float
    edges: I64


class _Flat:
    """Flat segments by (width, start): the largest gain of each, in one array per width
    (up to ``DENSE_FLAT`` OOD rows per distinct pair of the ``m``) or as distinct pairs."""

    def __init__(self, n_ood: int, m: int) -> None:
        dense = n_ood <= max(DENSE_FLAT * m, 1 << 19)
        self.dense = np.full((FLAT + 1, n_ood + 1), -np.inf) if dense else None
        self.sparse: F64 = np.zeros((3, 0))  # width, start, gain

    def add(self, width: NDArray[np.intp], start: NDArray[np.intp], gain: F64) -> None:
        if self.dense is not None:
            np.maximum.at(self.dense, (width, start), gain)
            return
        new = np.concatenate((self.sparse, np.stack((width, start, gain)).astype(np.float64)),
                             axis=1)
        self.sparse = new[:, _keep_highest((new[0], new[1]), new[2])]

    def items(self) -> tuple[NDArray[np.intp], NDArray[np.intp], F64]:
        if self.dense is not None:
            w, at = np.nonzero(self.dense > -np.inf)
            return w, at, self.dense[w, at]
        return (self.sparse[0].astype(np.intp), self.sparse[1].astype(np.intp),
                self.sparse[2])


def _keep_highest(key: tuple[F64, ...], value: F64) -> NDArray[np.intp]:
    """Indices of the largest ``value`` of every distinct ``key`` (a tuple of columns)."""
    order = np.lexsort((value, *key[::-1]))
    last = np.ones(order.size, dtype=bool)
    same = np.ones(order.size - 1, dtype=bool) if order.size else np.ones(0, dtype=bool)
    for col in key:
        c = col[order]
        same &= c[1:] == c[:-1]
    last[:-1] = ~same
    return order[last]


def envelope_lines(scores: F64, ood: F64, gain: F64) -> Lines:
    """The exact envelope of the two-column ``scores`` (n, 2) with per-row OOD mass ``ood``
    (0 or a whole number) and ``gain`` (the mass of the curve's second axis).

    O(m^2 log m) time over the m distinct score pairs (only anchors with OOD mass are
    swept), memory of one batch of anchors plus the distinct segments found, whatever the
    OOD mass (the flat segments of up to ``FLAT`` OOD rows take 136 bytes per OOD row up to
    the larger of ``DENSE_FLAT`` OOD rows per distinct pair and 2**19; the branch and bound above
    ``SWEEP_BELOW`` pairs also holds its lower bound at every whole OOD mass: 8 bytes per
    OOD row).
    """
    return envelopes(scores, ood, gain[:, None])[0]


def envelopes(scores: F64, ood: F64, gains: F64, *, sweep_below: int | None = None,
              ) -> list[Lines]:
    """:func:`envelope_lines` of each column of ``gains`` (n, g), from one sweep: the
    anchors' states are computed once for every column, so g envelopes cost little more
    than one (the sort of the swap angles dominates).

    Above ``sweep_below`` distinct pairs (default
    :data:`~abstain._ood_search.envelope_branch.SWEEP_BELOW`) and for at most two gain
    columns, only the states that can rise above a lower bound of the envelope are swept
    (:func:`~abstain._ood_search.envelope_branch.branch_envelopes`); the envelope is the same.
    """
    pts, inv = np.unique(scores, axis=0, return_inverse=True)
    return _lines(pts, _masses(inv.reshape(-1), pts.shape[0], ood, gains), sweep_below)


def _masses(inv: NDArray[np.intp], m: int, ood: F64, gains: F64) -> F64:
    """The (OOD, gain...) masses of the ``m`` distinct pairs that rows ``inv`` fall on."""
    x = np.zeros((m, 1 + gains.shape[1]))
    x[:, 0] = np.bincount(inv, weights=ood, minlength=m)
    for c in range(gains.shape[1]):
        x[:, 1 + c] = np.bincount(inv, weights=gains[:, c], minlength=m)
    return x


def _lines(pts: F64, x: F64, sweep_below: int | None) -> list[Lines]:
    """The envelopes of the distinct pairs ``pts`` with masses ``x`` (OOD, gain...): the
    full sweep over the anchors with OOD mass or, above ``sweep_below`` pairs, the branch
    and bound."""
    from . import envelope_branch as branch  # it builds on this module

    m, g = pts.shape[0], x.shape[1] - 1
    n_ood = int(round(float(x[:, 0].sum())))
    # per gain, segments (start OOD, start gain, OOD width, gain rise); one per (width,
    # rise, start). The commonest, flat ones of a few OOD rows (width w <= FLAT, rise 0,
    # such as one OOD row alone or a row drawn w times), are kept by start in ``flat[w]``.
    segs = [np.zeros((4, 0)) for _ in range(g)]
    flat = [_Flat(n_ood, m) for _ in range(g)]
    below = branch.SWEEP_BELOW if sweep_below is None else sweep_below
    pruned = (branch.branch_envelopes(pts, x) if m > below and g <= 2 and n_ood > 0
              else None)
    if pruned is not None:
        found, low = pruned
        for P, G in found:
            _add_segments(segs, flat, P[:, 1], G[:, 1], [P[:, c] for c in (0, 2)[:g]],
                          [G[:, c] for c in (0, 2)[:g]])
        for c in range(g):  # L's steps: one flat segment per run of equal values
            steps = low[c][:n_ood]
            run = np.flatnonzero(np.concatenate(([True], steps[1:] != steps[:-1])))
            width = np.diff(np.append(run, n_ood)).astype(np.float64)
            ok = np.isfinite(steps[run])  # no curve reaches there yet
            run, width = run[ok], width[ok]
            segs[c] = _merged(segs[c], flat[c], run.astype(np.float64), width, steps[run],
                              np.zeros(run.size))
    else:
        for lay in anchor_layouts(pts, np.flatnonzero(x[:, 0] > 0)):
            st = anchor_states(lay, x, ties=2)  # a tie of two points is dominated (above)
            keep = st.ok.copy()
            keep[:, 2 * m + 2] = False  # the angle pi is not a direction of the half-circle
            _add_segments(segs, flat, st.P[0][keep], st.G[0][keep],
                          [st.P[1 + c][keep] for c in range(g)],
                          [st.G[1 + c][keep] for c in range(g)])
    return [_pieces(segs[c], flat[c], n_ood, float(x[:, 1 + c].sum())) for c in range(g)]


def _add_segments(segs: list[F64], flat: list[_Flat], p0: F64, g0: F64, pg: list[F64],
                  gg: list[F64]) -> None:
    """Add the states with OOD masses ``p0`` below and ``g0`` in the group, and gains
    ``pg[c]`` below and ``gg[c]`` in it, to each gain's ``segs`` and ``flat``."""
    for c in range(len(segs)):
        segs[c] = _merged(segs[c], flat[c], p0, g0, pg[c], gg[c])


def _merged(segs: F64, flat: _Flat, p0: F64, g0: F64, pg: F64, gg: F64) -> F64:
    """One gain's segments ``segs`` with the segments of OOD start ``p0`` and width ``g0``,
    gain start ``pg`` and rise ``gg`` added (the flat ones of a few OOD rows to ``flat``)."""
    width = np.rint(g0)
    new = np.stack((p0, pg, g0, gg))
    alone = (width == g0) & (width >= 1) & (width <= FLAT) & (gg == 0)
    flat.add(width[alone].astype(np.intp), np.rint(p0[alone]).astype(np.intp), pg[alone])
    sc = np.concatenate((segs, new[:, ~alone]), axis=1)
    return sc[:, _keep_highest((sc[2], sc[3], sc[0]), sc[1])]


def _pieces(segs: F64, flat: _Flat, n_ood: int, total: float) -> Lines:
    """The :class:`Lines` of the segments ``segs`` and the flat segments ``flat``: each
    segment cut at the ends of all of them into pieces of the elementary intervals."""
    w, at, v = flat.items()
    segs = np.concatenate((segs, np.stack((at.astype(np.float64), v, w.astype(np.float64),
                                           np.zeros(at.size)))), axis=1)
    start = np.rint(segs[0]).astype(np.int64)
    width = np.rint(segs[2]).astype(np.int64)
    edges = np.unique(np.concatenate((start, start + width)))
    first = np.searchsorted(edges, start)
    many = np.searchsorted(edges, start + width) - first  # elementary intervals covered
    which = np.repeat(np.arange(start.size), many)
    k = first[which] + (np.arange(which.size) - np.repeat(np.cumsum(many) - many, many))
    slope = segs[3][which] / width[which]
    a = segs[1][which] + slope * (edges[k] - start[which])
    b = segs[1][which] + slope * (edges[k + 1] - start[which])
    pick = _keep_highest((k.astype(np.float64), a), b)
    return Lines(k[pick], a[pick], b[pick], n_ood, total, edges)


def _max_of_lines_area(a: F64, b: F64) -> float:
    """``integral over t in [0, 1] of max_j (a_j + (b_j - a_j) t)``: exact, by the values at
    every crossing of two lines (the maximum is linear between consecutive crossings)."""
    # lines dominated by another at both ends never reach the maximum
    order = np.lexsort((-b, -a))
    a, b = a[order], b[order]
    keep = b > np.concatenate(([-np.inf], np.maximum.accumulate(b)[:-1]))
    a, b = a[keep], b[keep]
    if a.size == 1:
        return float(a[0] + b[0]) / 2
    s = b - a
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (a[None, :] - a[:, None]) / (s[:, None] - s[None, :])
    t = np.unique(np.concatenate(([0.0, 1.0], t[(t > 0) & (t < 1)])))
    v = np.max(a[None, :] + s[None, :] * t[:, None], axis=1)
    return float(np.sum(np.diff(t) * (v[1:] + v[:-1]) / 2))


def area(lines: Lines) -> float:
    """Area under the envelope, in (OOD mass) x (gain mass)."""
    k, a, b = lines.k, lines.a, lines.b
    n = lines.edges.size - 1
    span = np.diff(lines.edges).astype(np.float64)
    amax = np.full(n, -np.inf)
    bmax = np.full(n, -np.inf)
    np.maximum.at(amax, k, a)
    np.maximum.at(bmax, k, b)
    # an interval where one line is highest at both ends: that line is the envelope
    top = np.zeros(n, dtype=bool)
    top[k[(a == amax[k]) & (b == bmax[k])]] = True
    total = float(np.sum(span[top] * (amax[top] + bmax[top]) / 2))
    order = np.argsort(k, kind="stable")
    ks = k[order]
    bounds = np.searchsorted(ks, np.arange(n + 1))
    for q in np.flatnonzero(~top).tolist():
        sl = order[bounds[q] : bounds[q + 1]]
        total += float(span[q]) * _max_of_lines_area(a[sl], b[sl])
    return total


def value_at(lines: Lines, x: F64) -> F64:
    """The envelope at accepted OOD masses ``x`` in ``[0, n_ood]`` (the largest value where
    two pieces meet, the whole gain at ``n_ood``)."""
    out = np.full(x.size, -np.inf)
    edges = lines.edges
    for i, xi in enumerate(x.tolist()):
        if xi >= lines.n_ood:
            out[i] = lines.total
            continue
        q = int(np.searchsorted(edges, xi, side="right")) - 1
        t = (xi - edges[q]) / (edges[q + 1] - edges[q])
        here = lines.k == q
        v = np.max(lines.a[here] + (lines.b[here] - lines.a[here]) * t)
        if t == 0 and q > 0:
            v = max(v, float(np.max(lines.b[lines.k == q - 1])))
        out[i] = v
    return out


def first_reach(lines: Lines, target: float) -> float:
    """The least accepted OOD mass at which the envelope reaches gain ``target`` (a relative
    1e-12 of slack), ``n_ood`` if only the whole sample reaches it."""
    need = target * (1 - 1e-12)
    a, b = lines.a, lines.b
    rise = b - a
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(a >= need, 0.0,
                     np.where((b >= need) & (rise > 0),
                              np.clip((target - a) / rise, 0.0, 1.0), np.inf))
    lo, hi = _ends(lines)
    reach = float(np.min(lo + t * (hi - lo), initial=np.inf))
    return min(reach, float(lines.n_ood))


def _ends(lines: Lines) -> tuple[F64, F64]:
    """The OOD masses at the left and right ends of each piece."""
    return (lines.edges[lines.k].astype(np.float64),
            lines.edges[lines.k + 1].astype(np.float64))


def points_reaching(lines: Lines, target: float) -> tuple[F64, F64]:
    """Points ``(OOD mass, gain)`` on the pieces with gain at least ``target`` (a relative
    1e-12 of slack): every piece end that reaches it, the point where a rising piece
    reaches it, and the whole sample. Along a piece a ratio of linear functions of the
    point is monotone, so its best over the part of the piece at or above ``target`` is
    at one of these points."""
    need = target * (1 - 1e-12)
    a, b = lines.a, lines.b
    lo, hi = _ends(lines)
    rise = b - a
    cross = (a < need) & (b >= need) & (rise > 0)
    t = (target - a[cross]) / rise[cross]
    x = np.concatenate((lo[a >= need], hi[b >= need],
                        lo[cross] + np.clip(t, 0.0, 1.0) * (hi[cross] - lo[cross]),
                        [float(lines.n_ood)]))
    y = np.concatenate((a[a >= need], b[b >= need], np.maximum(a[cross] + rise[cross] * t,
                                                                target), [lines.total]))
    return x, y


def least_risk_at_fpr(scores: F64, w_id: F64, w_ood: F64, w_loss: F64, bound: float,
                      targets: F64) -> F64:
    """Least ``L / I`` over every rule of every direction ``a`` in ``[0, pi]`` with accepted
    OOD mass ``O <= bound`` and accepted ID mass ``I >= targets[j]`` (a relative 1e-12 of
    slack on both), for each target; inf where no rule meets both.

    Every rule is a point ``P + nu G`` of one anchor state's segment
    (:func:`~abstain._ood_search.search.anchor_batches`, every anchor, the angles 0 and pi
    included, as in the exact fits). The risk is monotone in ``nu`` and the constraints cut
    an interval of ``nu``, so the best point of a segment for a target is its start, its
    last point within the bound (``cap``) or its point with ``I = target``: the first two
    do not depend on the target (a suffix minimum over ``I`` serves every target), the
    third is evaluated only for the targets strictly inside the segment's ``I`` range.
    O(m^2 log m) time for m distinct score pairs, the memory of one batch of anchors.
    """
    pts, inv = np.unique(scores, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    m = pts.shape[0]
    x = np.stack([np.bincount(inv, weights=w, minlength=m) for w in (w_id, w_ood, w_loss)],
                 axis=1).astype(np.float64)
    lim = bound + 1e-12 * float(x[:, 1].sum())
    order = np.argsort(targets, kind="stable")
    sorted_t = targets[order]
    need = sorted_t * (1 - 1e-12)
    best = np.full(targets.size, np.inf)
    for _, st in anchor_batches(pts, x):
        i0, o0, l0 = (st.P[c][st.ok] for c in range(3))
        di, do, dl = (st.G[c][st.ok] for c in range(3))
        keep = o0 <= lim
        i0, o0, l0, di, do, dl = (v[keep] for v in (i0, o0, l0, di, do, dl))
        with np.errstate(divide="ignore", invalid="ignore"):
            nu = np.where(o0 + do <= lim, 1.0, np.clip((bound - o0) / do, 0.0, 1.0))
        ic, lc = i0 + nu * di, l0 + nu * dl
        # starts and caps: for each target, the least L / I among the points with I >= it
        ci, cl = np.concatenate((i0, ic)), np.concatenate((l0, lc))
        pos = ci > 0
        ci, cl = ci[pos], cl[pos]
        by_i = np.argsort(ci, kind="stable")
        ratio = cl[by_i] / ci[by_i]
        suffix = np.append(np.minimum.accumulate(ratio[::-1])[::-1], np.inf)
        at = np.searchsorted(ci[by_i], need, side="left")
        np.minimum(best, suffix[at][np.argsort(order)], out=best)
        # points with I equal to a target strictly inside a segment's range (start, cap)
        lo = np.searchsorted(sorted_t, i0, side="right")
        hi = np.searchsorted(sorted_t, ic, side="left")
        many = hi - lo
        seg = np.repeat(np.arange(i0.size), np.maximum(many, 0))
        if seg.size:
            j = np.arange(seg.size) - np.repeat(np.cumsum(many[many > 0]) - many[many > 0],
                                                many[many > 0]) + lo[seg]
            t = sorted_t[j]
            r = (l0[seg] + (t - i0[seg]) / di[seg] * dl[seg]) / t
            np.minimum.at(best, order[j], r)
    return best
