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
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._groups import sorted_by_uncertainty

F64 = NDArray[np.float64]

# Relative slack for round-off when checking a constraint that a rule meets exactly.
_RTOL = 1e-12


class Knots(NamedTuple):
    """Tie groups of one score, ascending, with running totals (leading 0 included).

    ``values`` has shape (G,); ``I``, ``O``, ``L`` have shape (G + 1,).
    """

    values: F64
    I: F64  # noqa: E741
    O: F64  # noqa: E741
    L: F64


def knots(score: F64, w_id: F64, w_ood: F64, w_loss: F64) -> Knots:
    """Group ``score`` with the shared sorter and total the three weights per group."""
    n = score.size
    u, order_f, ends = sorted_by_uncertainty(np.arange(n, dtype=np.float64), score, stable=False)
    order = order_f.astype(np.intp)
    zero = np.zeros(1)
    cols = []
    for w in (w_id, w_ood, w_loss):
        c = np.cumsum(np.take(w, order))
        cols.append(np.concatenate((zero, c if ends is None else c[ends])))
    values = u if ends is None else u[ends]
    return Knots(values, cols[0], cols[1], cols[2])


class Constraint(NamedTuple):
    """Feasible rules: ``I >= a`` and ``O - k * I <= b`` (masses, not rates)."""

    a: float
    b: float
    k: float

    def ok(self, i: F64, o: F64, scale_i: float, scale_o: float) -> NDArray[np.bool_]:
        return (i >= self.a - _RTOL * scale_i) & (
            o - self.k * i <= self.b + _RTOL * (scale_o + self.k * scale_i)
        )


class Best(NamedTuple):
    """Best point over a set of segments: index, ``nu`` and the masses it accepts."""

    at: int
    nu: float
    I: float  # noqa: E741
    O: float  # noqa: E741
    L: float
    objective: float


def best_ratio(
    i0: F64, o0: F64, l0: F64, di: F64, do: F64, dl: F64,
    con: Constraint, scale_i: float, scale_o: float,
) -> Best | None:
    """Minimal ``L / I`` over points ``start + nu * delta``, ``nu`` in [0, 1], meeting ``con``.

    The ratio is monotone along a segment and the constraints cut an interval of
    ``nu``, so each segment's optimum is at an end of that interval. Among equal
    risks the largest ``I`` wins, then the smallest ``O``, then the first segment.
    Returns None when no point is feasible.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.zeros_like(i0)
        hi = np.ones_like(i0)
        need = con.a - i0
        pos = di > 0
        lo = np.where(pos, np.maximum(lo, need / np.where(pos, di, 1.0)), lo)
        bad = (~pos) & (need > _RTOL * scale_i)
        e = do - con.k * di
        room = con.b - (o0 - con.k * i0)
        tol = _RTOL * (scale_o + con.k * scale_i)
        up = e > 0
        hi = np.where(up, np.minimum(hi, (room + tol) / np.where(up, e, 1.0)), hi)
        down = e < 0
        lo = np.where(down, np.maximum(lo, (room - tol) / np.where(down, e, 1.0)), lo)
        bad |= (e == 0) & (room < -tol)
        lo = np.clip(lo, 0.0, 1.0)
        hi = np.clip(hi, 0.0, 1.0)
        ok = (~bad) & (lo <= hi)
        if not np.any(ok):
            return None
        idx = np.flatnonzero(ok)
        cand_nu = np.concatenate((lo[idx], hi[idx]))
        seg = np.concatenate((idx, idx))
        ci = i0[seg] + cand_nu * di[seg]
        co = o0[seg] + cand_nu * do[seg]
        cl = l0[seg] + cand_nu * dl[seg]
        keep = con.ok(ci, co, scale_i, scale_o) & (ci > 0)
        if not np.any(keep):
            return None
        seg, cand_nu, ci, co, cl = seg[keep], cand_nu[keep], ci[keep], co[keep], cl[keep]
        risk = cl / ci
    # Equal risks up to round-off are equal: compare on a relative grid of 1e-12.
    best_risk = float(np.min(risk))
    near = risk <= best_risk + _RTOL * max(abs(best_risk), 1e-300)
    cand = np.flatnonzero(near)
    order = np.lexsort((seg[cand], co[cand], -ci[cand]))
    j = int(cand[order[0]])
    return Best(int(seg[j]), float(cand_nu[j]), float(ci[j]), float(co[j]), float(cl[j]),
                float(risk[j]))


def best_linear(
    i1: F64, o1: F64, l1: F64, slope_i: float, slope_o: float, slope_l: float
) -> Best:
    """Minimal ``slope_l * L + slope_i * I + slope_o * O`` over candidate points (knots).

    Among equal costs the largest accepted mass ``I + O`` wins (the larger coverage).
    """
    cost = slope_l * l1 + slope_i * i1 + slope_o * o1
    best = float(np.min(cost))
    near = np.flatnonzero(cost <= best + _RTOL * max(abs(best), 1.0))
    j = int(near[np.argmax((i1 + o1)[near])])
    return Best(j, 1.0, float(i1[j]), float(o1[j]), float(l1[j]), float(cost[j]))


def knot_ratio(kn: Knots, con: Constraint, scale_i: float, scale_o: float) -> Best | None:
    """Best rule on one score: segment ``g`` runs from knot ``g`` to knot ``g + 1``."""
    return best_ratio(
        kn.I[:-1], kn.O[:-1], kn.L[:-1],
        np.diff(kn.I), np.diff(kn.O), np.diff(kn.L), con, scale_i, scale_o,
    )


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


def grid_weights(n_directions: int) -> F64:
    """Unit weight vectors ``(cos a, sin a)`` of :func:`grid_angles`, shape (d, 2).

    Entries below 1e-12 in magnitude are set to 0, so angle pi/2 is exactly the
    second score (``cos(pi/2)`` is 6e-17 in float64, which would break its ties).
    """
    a = grid_angles(n_directions)
    w = np.stack((np.cos(a), np.sin(a)), axis=1)
    w[np.abs(w) < 1e-12] = 0.0
    return w


class State(NamedTuple):
    """Where the exact search found its best rule."""

    best: Best
    weights: F64
    angle: float
    critical: bool


def _better(new: Best, crit: bool, old: Best | None, old_crit: bool) -> bool:
    if old is None:
        return True
    tol = _RTOL * max(abs(old.objective), 1e-300)
    if new.objective < old.objective - tol:
        return True
    if new.objective > old.objective + tol:
        return False
    return (-new.I, new.O, crit) < (-old.I, old.O, old_crit)


def exact_search(
    points: F64, x: F64, evaluate, linear: bool  # type: ignore[no-untyped-def]
) -> State | None:
    """Best rule over all directions ``a`` in [0, pi] of ``points @ (cos a, sin a)``.

    ``points`` (m, 2) are distinct score pairs, ``x`` (m, 3) their ID, OOD and
    loss masses. The order of two points changes only at the one angle where
    their difference is orthogonal to the direction. For every point ``e`` the
    angles of its m - 1 events are sorted and walked: between two events the set
    of points below ``e`` is fixed (one *open* state, evaluated at the middle
    angle), at an event the points tied with ``e`` join its group (a *critical*
    state, whose weight vector is the exact normal of the tied pair, so integer
    or dyadic scores tie exactly). Angles 0 and pi are states too. Every rule of
    every direction is a point of one of these segments, so the optimum is exact;
    the cost is O(m^2 log m) time and O(m) memory.

    ``evaluate(i0, o0, l0, di, do, dl)`` returns the best point of the segments,
    or None; with ``linear`` it is given the segment ends only (nu = 0 is the
    prefix, nu = 1 the prefix with the group).
    """
    m = points.shape[0]
    best: State | None = None
    total = x.sum(axis=0)
    for e in range(m):
        others = np.concatenate((np.arange(e), np.arange(e + 1, m)))
        d = points[others] - points[e]
        dr, dg = d[:, 0], d[:, 1]
        xo = x[others]
        xe = x[e]
        zero_r = dr == 0
        below0 = (dr < 0) | (zero_r & (dg < 0))
        s_b0 = xo[below0].sum(axis=0)
        s_zero = xo[zero_r].sum(axis=0)
        crit_idx = np.flatnonzero(~zero_r)
        theta = np.arctan2(-dr[crit_idx], dg[crit_idx])
        theta = np.where(theta <= 0.0, theta + math.pi, theta)
        order = np.argsort(theta, kind="stable")
        k = crit_idx[order]
        th = theta[order]
        pref: list[F64] = [xo[dr < 0].sum(axis=0)]
        grp: list[F64] = [xe + s_zero]
        angles: list[float] = [0.0]
        crit: list[bool] = [bool(np.any(zero_r))]
        wts: list[tuple[float, float]] = [(1.0, 0.0)]
        if k.size:
            xk = xo[k]
            was_below = below0[k]
            signed = np.where(was_below[:, None], -xk, xk)
            after_each = s_b0 + np.cumsum(signed, axis=0)
            starts = np.flatnonzero(np.concatenate(([True], th[1:] != th[:-1])))
            ends = np.append(starts[1:], k.size) - 1
            after = after_each[ends]
            before = np.vstack((s_b0[None, :], after[:-1]))
            tied = np.add.reduceat(xk, starts, axis=0)
            tied_below = np.add.reduceat(np.where(was_below[:, None], xk, 0.0), starts, axis=0)
            # critical states
            pref.extend(before - tied_below)
            grp.extend(xe + tied)
            angles.extend(th[starts].tolist())
            crit.extend([True] * starts.size)
            d0 = d[k[starts]]
            flip = -d0[:, 0] > 0
            w = np.where(flip[:, None], np.stack((d0[:, 1], -d0[:, 0]), 1),
                         np.stack((-d0[:, 1], d0[:, 0]), 1))
            wts.extend(map(tuple, w.tolist()))
            # open states
            bounds = np.concatenate(([0.0], th[starts], [math.pi]))
            mids = 0.5 * (bounds[:-1] + bounds[1:])
            pref.extend(np.vstack((s_b0[None, :], after)))
            grp.extend(np.broadcast_to(xe, (mids.size, 3)))
            angles.extend(mids.tolist())
            crit.extend([False] * mids.size)
            wts.extend(zip(np.cos(mids).tolist(), np.sin(mids).tolist(), strict=False))
        else:
            pref.append(s_b0)
            grp.append(xe)
            angles.append(0.5 * math.pi)
            crit.append(False)
            wts.append((0.0, 1.0))
        pref.append(xo[dr > 0].sum(axis=0))
        grp.append(xe + s_zero)
        angles.append(math.pi)
        crit.append(bool(np.any(zero_r)))
        wts.append((-1.0, 0.0))
        p = np.asarray(pref)
        g = np.asarray(grp)
        if linear:
            ends_ = p + g
            allp = np.vstack((p, ends_))
            r = evaluate(allp[:, 0], allp[:, 1], allp[:, 2])
            if r is None:
                continue
            j = r.at % len(angles)
            r = r._replace(at=j, nu=0.0 if r.at < len(angles) else 1.0)
        else:
            r = evaluate(p[:, 0], p[:, 1], p[:, 2], g[:, 0], g[:, 1], g[:, 2])
            if r is None:
                continue
            j = r.at
        c = crit[j]
        if best is None or _better(r, c, best.best, best.critical):
            best = State(r._replace(at=e), np.asarray(wts[j], dtype=np.float64),
                         float(angles[j]), c)
    del total
    return best


# ------------------------------------------------------------------ row-wise (batched) sweeps
# Elements of one (rows, columns) work array; batches of directions or anchors are cut so
# that every temporary stays near 16 MB.
_BATCH_ELEMS = 1 << 21


class RowsBest(NamedTuple):
    """Best point of each row of segments: arrays of shape (rows,).

    ``at`` indexes the row's segments (or knots); ``found`` is False where no point
    of the row is feasible (the other entries are then meaningless).
    """

    found: NDArray[np.bool_]
    at: NDArray[np.intp]
    nu: F64
    I: F64  # noqa: E741
    O: F64  # noqa: E741
    L: F64
    objective: F64

    def best(self, r: int) -> Best:
        return Best(int(self.at[r]), float(self.nu[r]), float(self.I[r]), float(self.O[r]),
                    float(self.L[r]), float(self.objective[r]))


def _pick(near: NDArray[np.bool_], ci: F64, co: F64) -> NDArray[np.intp]:
    """Per row: among ``near``, the largest ``ci``, then the smallest ``co``, then the first."""
    imax = np.max(np.where(near, ci, -np.inf), axis=1, keepdims=True)
    m2 = near & (ci == imax)
    omin = np.min(np.where(m2, co, np.inf), axis=1, keepdims=True)
    return np.argmax(m2 & (co == omin), axis=1)


def rows_best_ratio(
    row: NDArray[np.intp], at: NDArray[np.intp], i0: F64, o0: F64, l0: F64,
    di: F64, do: F64, dl: F64, rows: int, con: Constraint, scale_i: float, scale_o: float,
) -> RowsBest:
    """:func:`best_ratio` on many rows of segments at once, given as flat arrays.

    Segment ``k`` belongs to row ``row[k]`` (non-decreasing) at index ``at[k]``
    (increasing within a row). The choice within a row is that of
    :func:`best_ratio`: least risk up to a relative 1e-12, then the largest ``I``,
    the smallest ``O``, the first segment, the lower end of its ``nu`` interval.
    """
    empty = RowsBest(np.zeros(rows, dtype=bool), np.zeros(rows, dtype=np.intp),
                     *(np.full(rows, np.nan) for _ in range(5)))
    with np.errstate(divide="ignore", invalid="ignore"):
        need = con.a - i0
        pos = di > 0
        lo = np.where(pos, np.maximum(0.0, need / np.where(pos, di, 1.0)), 0.0)
        bad = (~pos) & (need > _RTOL * scale_i)
        e = do - con.k * di
        room = con.b - (o0 - con.k * i0)
        tol = _RTOL * (scale_o + con.k * scale_i)
        up = e > 0
        hi = np.where(up, np.minimum(1.0, (room + tol) / np.where(up, e, 1.0)), 1.0)
        down = e < 0
        lo = np.where(down, np.maximum(lo, (room - tol) / np.where(down, e, 1.0)), lo)
        bad |= (e == 0) & (room < -tol)
        lo = np.clip(lo, 0.0, 1.0)
        hi = np.clip(hi, 0.0, 1.0)
        idx = np.flatnonzero((~bad) & (lo <= hi))
        # candidates interleaved as (segment, end): the lower end of a segment comes first
        nu = np.stack((lo[idx], hi[idx]), axis=1).reshape(-1)
        seg = np.repeat(idx, 2)
        ci = i0[seg] + nu * di[seg]
        co = o0[seg] + nu * do[seg]
        cl = l0[seg] + nu * dl[seg]
        keep = np.flatnonzero(con.ok(ci, co, scale_i, scale_o) & (ci > 0))
        if keep.size == 0:
            return empty
        seg, nu, ci, co, cl = seg[keep], nu[keep], ci[keep], co[keep], cl[keep]
        risk = cl / ci
    rw = row[seg]
    starts = np.flatnonzero(np.concatenate(([True], rw[1:] != rw[:-1])))
    rmin = np.minimum.reduceat(risk, starts)
    rmin = np.repeat(rmin, np.diff(np.append(starts, rw.size)))
    near = np.flatnonzero(risk <= rmin + _RTOL * np.maximum(np.abs(rmin), 1e-300))
    # keep order = (row, segment, end): lexsort is stable
    order = near[np.lexsort((co[near], -ci[near], rw[near]))]
    r_sorted = rw[order]
    first = order[np.concatenate(([True], r_sorted[1:] != r_sorted[:-1]))]
    out = empty
    r = rw[first]
    out.found[r] = True
    out.at[r] = at[seg[first]]
    for dst, src in zip(out[2:], (nu, ci, co, cl, risk), strict=True):
        dst[r] = src[first]
    return out


def rows_best_linear(
    i1: F64, o1: F64, l1: F64, valid: NDArray[np.bool_],
    slope_i: float, slope_o: float, slope_l: float,
) -> RowsBest:
    """:func:`best_linear` on every row of (rows, S) candidate points at once."""
    cost = np.where(valid, slope_l * l1 + slope_i * i1 + slope_o * o1, np.inf)
    best = np.min(cost, axis=1, keepdims=True)
    near = valid & (cost <= best + _RTOL * np.maximum(np.abs(best), 1.0))
    j = np.argmax(np.where(near, i1 + o1, -np.inf), axis=1)[:, None]
    take = lambda a: np.take_along_axis(a, j, axis=1)[:, 0]  # noqa: E731
    return RowsBest(np.isfinite(best[:, 0]), j[:, 0], np.ones(i1.shape[0]), take(i1),
                    take(o1), take(l1), take(cost))


def grid_search(
    scores: F64, weights: F64, w_id: F64, w_ood: F64, w_loss: F64,
    con: Constraint | None, slopes: tuple[float, float, float] | None,
    scale_i: float, scale_o: float,
) -> list[tuple[Best, float] | None]:
    """Best rule and its threshold for each direction (row of ``weights``), or None.

    For a batch of directions the projected scores form one (b, n) matrix, sorted
    row by row in one call; the tie groups, their running totals and the best point
    of each row come from 2-D array operations (no loop over samples). The rules
    and choices are those of :func:`knots` with :func:`knot_ratio` (``con``) or
    :func:`best_linear` (``slopes``) on each direction. O(d n log n) time, memory
    bounded by the batch.
    """
    n = scores.shape[0]
    d = weights.shape[0]
    step = max(1, _BATCH_ELEMS // max(n, 1))
    cols = np.arange(n)
    out: list[tuple[Best, float] | None] = []
    for b0 in range(0, d, step):
        w = weights[b0 : b0 + step]
        s = scores[None, :, 0] * w[:, 0:1]
        for j in range(1, scores.shape[1]):
            s = s + scores[None, :, j] * w[:, j : j + 1]
        order = np.argsort(s, axis=1)
        s = np.take_along_axis(s, order, axis=1)
        change = s[:, 1:] != s[:, :-1]
        rows = s.shape[0]
        true = np.ones((rows, 1), dtype=bool)
        is_end = np.concatenate((change, true), axis=1)
        cum = []
        for v in (w_id, w_ood, w_loss):
            c = np.empty((rows, n + 1))
            c[:, 0] = 0.0
            np.cumsum(np.take(v, order), axis=1, out=c[:, 1:])
            cum.append(c)
        if con is not None:
            start = None
            if not change.all():  # else every sample is its own group
                is_start = np.concatenate((true, change), axis=1)
                start = np.maximum.accumulate(np.where(is_start, cols, 0), axis=1)
            # Segments that can hold a feasible point: I at the group end reaches ``a``
            # and O - k I at one end is within ``b`` (the exact test follows).
            i_end = cum[0][:, 1:]
            cand = is_end & (i_end >= con.a - _RTOL * scale_i)
            flat = np.flatnonzero(cand)
            rix, pos = np.divmod(flat, n)
            pflat = rix * (n + 1) + (pos if start is None else start.reshape(-1)[flat])
            eflat = rix * (n + 1) + pos + 1
            c0 = [c.reshape(-1)[pflat] for c in cum]
            c1 = [c.reshape(-1)[eflat] for c in cum]
            lim = con.b + _RTOL * (scale_o + con.k * scale_i)
            sel = np.flatnonzero(
                np.minimum(c0[1] - con.k * c0[0], c1[1] - con.k * c1[0]) <= lim
            )
            r = rows_best_ratio(rix[sel], pos[sel], c0[0][sel], c0[1][sel], c0[2][sel],
                                c1[0][sel] - c0[0][sel], c1[1][sel] - c0[1][sel],
                                c1[2][sel] - c0[2][sel], rows, con, scale_i, scale_o)
            for k in range(rows):
                out.append((r.best(k), float(s[k, r.at[k]])) if r.found[k] else None)
        else:
            assert slopes is not None
            valid = np.concatenate((true, is_end), axis=1)
            r = rows_best_linear(cum[0], cum[1], cum[2], valid, *slopes)
            for k in range(rows):
                j = int(r.at[k])
                out.append((r.best(k), float(s[k, j - 1]) if j > 0 else -math.inf))
    return out
