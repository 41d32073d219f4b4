"""The best point of rows of segments under a constraint or a linear cost, and the tie rule
between rules of equal objective: shared by the grid, the full sweep and the branch and bound.

Along one direction's tie groups, a rule is a point ``knot[g] + nu * (knot[g + 1] - knot[g])``
of a segment (:mod:`~abstain._ood_search.search`); these functions pick the best such point
of many segments at once, with flat (row, segment) arrays, and :func:`better` compares the
best points of two rows. Masses equal up to a relative :data:`RTOL` count as equal
(:func:`same_mass`): sums of the same numbers in another order differ in their last bits.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]

#: Relative slack for round-off: of a constraint that a rule meets exactly, and of the
#: objectives and masses that tie (:func:`better`, :func:`same_mass`).
RTOL = 1e-12


class Constraint(NamedTuple):
    """Feasible rules: ``I >= a`` and ``O - k * I <= b`` (masses, not rates)."""

    a: float
    b: float
    k: float

    def ok(self, i: F64, o: F64, scale_i: float, scale_o: float) -> NDArray[np.bool_]:
        return (i >= self.a - RTOL * scale_i) & (
            o - self.k * i <= self.b + RTOL * (scale_o + self.k * scale_i)
        )


class Best(NamedTuple):
    """Best point over a set of segments: index, ``nu`` and the masses it accepts."""

    at: int
    nu: float
    I: float  # noqa: E741
    O: float  # noqa: E741
    L: float
    objective: float
    #: The magnitude of the terms that sum to ``objective`` (0 where it is a ratio): the
    #: round-off of a linear objective near 0 is relative to it, not to the objective.
    scale: float = 0.0


def same_mass(a: Any, b: Any) -> Any:
    """Whether two masses are equal up to a relative ``RTOL``: sums of the same numbers in
    another order (a batch, a leaf of the branch and bound) differ in their last bits, and
    a tie rule that compared them exactly would be decided by that round-off."""
    return np.abs(a - b) <= RTOL * np.maximum(np.abs(a), np.abs(b))


def ahead(i_new: float, o_new: float, i_old: float, o_old: float) -> bool | None:
    """The tie rule between two rules of equal objective: the larger ID mass, then the
    smaller OOD mass, each up to :func:`same_mass`; None where both are the same."""
    if not same_mass(i_new, i_old):
        return i_new > i_old
    if not same_mass(o_new, o_old):
        return o_new < o_old
    return None


def better(new: Best, crit: bool, old: Best | None, old_crit: bool, *,
           linear: bool = False) -> bool:
    """Whether ``new`` (a critical state where ``crit``) beats ``old``: a smaller objective
    (beyond a relative ``RTOL`` of the objectives or of the terms that sum to them), then
    :func:`ahead` (``linear``: the larger accepted mass ``I + O``, as
    :func:`rows_best_linear` ranks the points of one direction), then an open state over a
    critical one; on a full tie the first one found stays."""
    if old is None:
        return True
    tol = RTOL * max(abs(old.objective), abs(new.objective), old.scale, new.scale)
    if new.objective < old.objective - tol:
        return True
    if new.objective > old.objective + tol:
        return False
    if linear:
        cover_new, cover_old = new.I + new.O, old.I + old.O
        won = None if same_mass(cover_new, cover_old) else bool(cover_new > cover_old)
    else:
        won = ahead(new.I, new.O, old.I, old.O)
    return (not crit and old_crit) if won is None else won


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
    scale: F64 | None = None  # of a linear objective: see Best.scale

    def best(self, r: int) -> Best:
        return Best(int(self.at[r]), float(self.nu[r]), float(self.I[r]), float(self.O[r]),
                    float(self.L[r]), float(self.objective[r]),
                    0.0 if self.scale is None else float(self.scale[r]))


def _row_least(v: F64, row: NDArray[np.intp]) -> F64:
    """The least of ``v`` over each run of equal ``row`` (non-decreasing), at every entry."""
    starts = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1])))
    return np.repeat(np.minimum.reduceat(v, starts), np.diff(np.append(starts, row.size)))


def rows_best_ratio(
    row: NDArray[np.intp], at: NDArray[np.intp], i0: F64, o0: F64, l0: F64,
    di: F64, do: F64, dl: F64, rows: int, con: Constraint, scale_i: float, scale_o: float,
    crit: NDArray[np.bool_] | None = None,
) -> RowsBest:
    """Per row, minimal ``L / I`` over points ``start + nu * delta`` meeting ``con``.

    Segments are flat arrays: segment ``k`` belongs to row ``row[k]`` (non-decreasing)
    at index ``at[k]`` (increasing within a row). The ratio is monotone along a
    segment and the constraints cut an interval of ``nu``, so each segment's optimum
    is at an end of that interval. Within a row: least risk up to a relative 1e-12,
    then the largest ``I``, the smallest ``O`` (each up to :func:`same_mass`), a segment
    whose ``crit`` is False (where ``crit`` is given: an open state before a critical
    one), the first segment, the lower end.
    """
    empty = RowsBest(np.zeros(rows, dtype=bool), np.zeros(rows, dtype=np.intp),
                     *(np.full(rows, np.nan) for _ in range(5)))
    with np.errstate(divide="ignore", invalid="ignore"):
        need = con.a - i0
        pos = di > 0
        lo = np.where(pos, np.maximum(0.0, need / np.where(pos, di, 1.0)), 0.0)
        bad = (~pos) & (need > RTOL * scale_i)
        e = do - con.k * di
        room = con.b - (o0 - con.k * i0)
        tol = RTOL * (scale_o + con.k * scale_i)
        up = e > 0
        hi = np.where(up, np.minimum(1.0, (room + tol) / np.where(up, e, 1.0)), 1.0)
        down = e < 0
        # O - k I <= b + tol: nu <= (room + tol) / e where e > 0, nu >= (room + tol) / e
        # where e < 0
        lo = np.where(down, np.maximum(lo, (room + tol) / np.where(down, e, 1.0)), lo)
        bad |= (e == 0) & (room < -tol)
        lo = np.clip(lo, 0.0, 1.0)
        hi = np.clip(hi, 0.0, 1.0)
        idx = np.flatnonzero((~bad) & (lo <= hi))
        # the interval [lo, hi] meets the constraints up to ``tol``; its ends are taken where
        # ``O - k I`` meets ``b`` exactly (without ``tol``), so that the round-off of the end
        # never pushes it past the check below (an end placed at ``b + tol`` failed it about
        # one time in two, and the segment's best point was lost). An exact end outside
        # [lo, hi] is clipped, unless ``O - k I`` meets ``b`` along the whole segment up to
        # round-off (a precision at its target along a tie group): then the end with ``tol``
        # is kept, where it misses ``b`` by round-off alone (elsewhere it would place the
        # rule at the bound plus the slack)
        exact = room[idx] / np.where(e[idx] != 0, e[idx], 1.0)
        lo_i, hi_i, e_i, room_i = lo[idx], hi[idx], e[idx], room[idx]
        clipped = np.clip(exact, lo_i, hi_i)
        ro = 16 * np.finfo(np.float64).eps * (scale_o + con.k * scale_i)
        outside = (exact < lo_i) | (exact > hi_i)
        lo_c = np.where(down[idx], np.where(outside & (np.abs(e_i * lo_i - room_i) <= ro),
                                            lo_i, clipped), lo_i)
        hi_c = np.where(up[idx], np.where(outside & (np.abs(e_i * hi_i - room_i) <= ro),
                                          hi_i, clipped), hi_i)
        # candidates interleaved as (segment, end): the lower end of a segment comes first
        nu = np.stack((lo_c, hi_c), axis=1).reshape(-1)
        seg = np.repeat(idx, 2)
        ci = i0[seg] + nu * di[seg]
        # masses and losses are never negative: a negative total is the round-off of a
        # zero (running sums subtracted), and a risk of -3e-16 made the branch and bound's
        # incumbent, its pruning threshold and its finalists' tie negative (a fit with a
        # zero-risk rule came back infeasible)
        co = np.maximum(o0[seg] + nu * do[seg], 0.0)
        cl = np.maximum(l0[seg] + nu * dl[seg], 0.0)
        keep = np.flatnonzero(con.ok(ci, co, scale_i, scale_o) & (ci > 0))
        if keep.size == 0:
            return empty
        seg, nu, ci, co, cl = seg[keep], nu[keep], ci[keep], co[keep], cl[keep]
        risk = cl / ci
    rw = row[seg]
    near = np.arange(rw.size)
    # per row: the least risk (up to RTOL), then the largest I and the smallest O (up to
    # same_mass); ``near`` keeps the order (row, segment, end) throughout
    for v in (risk, -ci, co):
        vn = v[near]
        least = _row_least(vn, rw[near])
        if v is risk:
            near = near[vn <= least + RTOL * np.abs(least)]
        else:
            near = near[same_mass(vn, least)]
    # then an open state over a critical one, then the first (lexsort is stable)
    keys: list[NDArray[Any]] = [rw[near]]
    if crit is not None:
        keys.insert(0, crit[seg[near]])
    order = near[np.lexsort(keys)]
    r_sorted = rw[order]
    first = order[np.concatenate(([True], r_sorted[1:] != r_sorted[:-1]))]
    out = empty
    r = rw[first]
    out.found[r] = True
    out.at[r] = at[seg[first]]
    for dst, src in zip(out[2:7], (nu, ci, co, cl, risk), strict=True):
        dst[r] = src[first]
    return out


def rows_best_linear(
    i1: F64, o1: F64, l1: F64, valid: NDArray[np.bool_],
    slope_i: float, slope_o: float, slope_l: float, crit: NDArray[np.bool_] | None = None,
) -> RowsBest:
    """Minimal ``slope_l * L + slope_i * I + slope_o * O`` per row of (rows, S) points.

    Among equal costs (relative 1e-12) the largest accepted mass ``I + O`` wins (the
    larger coverage, up to :func:`same_mass`), then a point whose ``crit`` (rows, S) is
    False (where given), then the first point.
    """
    cost = np.where(valid, slope_l * l1 + slope_i * i1 + slope_o * o1, np.inf)
    best = np.min(cost, axis=1, keepdims=True)
    # equal up to the round-off of the terms: relative to their size, in any units (an
    # absolute floor of 1e-12 made every rule of costs scaled by 2**-40 a tie)
    with np.errstate(invalid="ignore"):
        terms = abs(slope_l) * l1 + abs(slope_i) * i1 + abs(slope_o) * o1
    near = valid & (cost <= best + RTOL * np.maximum(np.abs(best), terms))
    # the few points within the least cost, row-major: the first of the best rank per row
    r, c = np.nonzero(near)
    j = np.zeros((i1.shape[0], 1), dtype=np.intp)
    if r.size:
        cover = i1[r, c] + o1[r, c]
        rank = np.where(same_mass(cover, -_row_least(-cover, r)),
                        1 if crit is None else 2 - crit[r, c], 0)
        starts = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
        first = np.lexsort((-rank, r))[starts]  # stable: the first column of a rank leads
        j[r[first], 0] = c[first]
    take = lambda a: np.take_along_axis(a, j, axis=1)[:, 0]  # noqa: E731
    li, oi, ll = take(i1), take(o1), take(l1)
    with np.errstate(invalid="ignore"):  # rows without a valid point: not found
        scale = abs(slope_l) * ll + abs(slope_i) * li + abs(slope_o) * oi
    return RowsBest(np.isfinite(best[:, 0]), j[:, 0], np.ones(i1.shape[0]), li, oi, ll,
                    take(cost), scale)
