"""Exact geometric predicates on float inputs, the same on every CPU.

The two-score searches order the swaps of pairs of score points by angle and compare score
points along a direction. A value computed by a vectorised transcendental (``arctan2``,
``cos``) or by a BLAS product differs between CPUs in its last bits, so a search that
compares two such values can split one event into two on one machine and not on another.
Here every decision is the sign of an exact expression of the float inputs:

* the rounded value is a *filter*: where it is farther from zero than a proven bound on its
  rounding error, its sign is the exact sign;
* elsewhere the expression is evaluated without rounding error: differences by ``TwoSum``,
  products by Dekker's ``TwoProduct`` (Veltkamp splitting), the sum of the resulting terms
  as a nonoverlapping expansion (Shewchuk's Grow-Expansion, whose sign is the sign of its
  largest component). Inputs whose products could overflow or underflow are scaled by
  powers of two, and those still out of range summed in Python integers.

Only IEEE-754 additions, subtractions, multiplications, divisions, square roots and
comparisons are used; each ufunc call is one correctly rounded operation, so the bits are
the same on every CPU. :func:`cos_sin` gives the unit vector of an angle from such
operations alone, so a direction is also the same float vector everywhere.

Angles of swaps are compared through :func:`sorted_events`: approximate keys (a monotone
*pseudo-angle* of basic operations) sorted once, then runs of keys within their error bound
ordered exactly by :func:`orient` and grouped where the swaps coincide exactly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .groups import take_rows

F64 = NDArray[np.float64]
I8 = NDArray[np.int8]

_U = 2.0**-53  # unit round-off of float64
_SPLIT = 134217729.0  # 2^27 + 1, Veltkamp's splitter
# Factors of an exact product must lie in [_TINY, _HUGE] (or be 0): the product is then at
# least 2^-960, so its error term is a float, and no splitting overflows.
_TINY, _HUGE = 2.0**-480, 2.0**480
# Absolute slack of the filters (covers products that underflow).
_ABS = 2.0**-960


def sum_round_off(n: Any) -> Any:
    """A bound, with room to spare, on the relative round-off of a float64 sum of up to
    ``n`` non-negative terms in any order: ``4 (n + 2) eps`` (``n`` a number, or an array
    of them: one bound each). Two such sums that differ by less than it times their
    magnitude are equal for the tie rules of the library.

    Examples
    --------
    >>> from abstain._core.exact import sum_round_off
    >>> sum_round_off(1000) < 1e-12
    True
    """
    eps = float(np.finfo(np.float64).eps)
    return 4.0 * (np.asarray(n, dtype=np.float64) + 2.0) * eps if np.ndim(n) else (
        4.0 * (float(n) + 2.0) * eps)


def sums_exact(values: F64) -> bool:
    """Whether every sum of some of the finite ``values`` is exact in float64, in any order
    and grouping: each value is a whole multiple of the least unit in the last place among
    them, and their absolute total stays below ``2**53`` such units (0/1 losses, whole
    numbers, multiples of 1/8 of moderate size).

    Examples
    --------
    >>> import numpy as np
    >>> from abstain._core.exact import sums_exact
    >>> sums_exact(np.array([0.0, 1.0, 0.125, 3.0])), sums_exact(np.array([0.1, 0.2]))
    (True, False)
    """
    v = np.abs(values[values != 0.0])
    if v.size == 0:
        return True
    m, e = np.frexp(v)  # v = m * 2**e, m in [0.5, 1): m * 2**53 is a whole number
    whole = (m * 2.0**53).astype(np.int64)
    low = np.frexp((whole & -whole).astype(np.float64))[1] - 1  # its trailing zero bits
    unit = int(np.min(e - 53 + low))  # the exponent of the least unit in the last place
    with np.errstate(over="ignore"):  # a total beyond float64: inf, no exact sum
        total = float(np.sum(v)) * (1.0 + 2.0**-40)
    if unit + 53 > 1023:  # 2**53 units lie beyond float64: every finite total is below
        return math.isfinite(total)
    # compared in the values' own scale (the total in units overflows for a unit far below
    # 1, 5e-324 beside 1.0)
    return total < math.ldexp(2.0**53, unit)


def two_sum(a: F64, b: F64) -> tuple[F64, F64]:
    """``s + e == a + b`` exactly, ``s = fl(a + b)`` (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: F64) -> tuple[F64, F64]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: F64, b: F64) -> tuple[F64, F64]:
    """``p + e == a * b`` exactly, ``p = fl(a * b)`` (Dekker; factors in range, see module)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def exact_deviation(values: F64, counts: F64 | None = None) -> float:
    """The standard deviation of ``values`` (each taken ``counts`` times, whole numbers,
    else once) from sums computed exactly and rounded once: :func:`math.fsum` of the
    values, then of the squared deviations from the mean (times the counts, split exactly
    by :func:`two_prod`). It depends on the multiset of values alone: not on their order,
    on grouping equal values into counts, or on the CPU's vector kernels (exact where the
    values and the squares lie in ``[2**-480, 2**480]`` in magnitude or are 0; else
    products of counts may round in the last bits). The values are first divided by the
    power of two at least their largest magnitude (exact; the deviation is multiplied back),
    so no sum overflows: a deviation beyond float64 is inf. Equal values give 0. Its error
    is that of the deviations from the rounded mean: a few units in the last place of the
    largest value, as NumPy's ``std`` (relatively large where the spread is that small). NaN
    where a value is not finite or there is none.

    >>> exact_deviation(np.array([0.1, 0.2, 0.2])) == exact_deviation(
    ...     np.array([0.2, 0.1]), np.array([2.0, 1.0]))
    True
    """
    def total(*terms: F64) -> float:
        if counts is None:
            return math.fsum([v for t in terms for v in t.tolist()])
        parts = [two_prod(t, counts) for t in terms]
        return math.fsum([v for pe in parts for half in pe for v in half.tolist()])

    if values.size == 0 or not bool(np.all(np.isfinite(values))):
        return math.nan
    top = float(np.max(np.abs(values)))
    k = math.frexp(top)[1] if top > 0 else 0
    values = np.ldexp(values.astype(np.float64), -k)
    n = float(values.size if counts is None else math.fsum(counts.tolist()))
    mean = total(values) / n
    # one correction by the exact residual (the differences split by two_sum): equal values
    # then have their own value as the mean, and a deviation of 0
    d, e = two_sum(values, np.full_like(values, -mean))
    mean += total(d, e) / n
    d = values - mean
    with np.errstate(over="ignore"):
        return float(np.ldexp(math.sqrt(total(d * d) / n), k))


def sign_of_sum(terms: list[F64]) -> I8:
    """Exact sign of ``sum(terms)`` row by row (each term an array of one shape).

    Where the rounded sum is farther from zero than its error bound (``2 k u`` times the
    sum of magnitudes for ``k`` terms), its sign is taken. Elsewhere Grow-Expansion adds the
    terms one by one into a nonoverlapping expansion of increasing magnitude; the sign of
    the sum is the sign of its largest nonzero component.
    """
    total, size = terms[0].copy(), np.abs(terms[0])
    for t in terms[1:]:
        total += t
        size += np.abs(t)
    sign = np.sign(total).astype(np.int8)
    hard = np.flatnonzero(~(np.abs(total) > 2.0 * len(terms) * _U * size + _ABS))
    if hard.size:
        sign[hard] = _distilled_sign(np.stack([t[hard] for t in terms]))
    return sign


def _distilled_sign(t: F64) -> I8:
    """Exact sign of the column sums of ``t`` (k terms, rows): passes of VecSum (a cascade
    of ``TwoSum`` that keeps the sum exactly and gathers it in the last term) until the last
    term outweighs the others; Grow-Expansion for the rows still open after a few passes."""
    k, n = t.shape
    sign = np.zeros(n, dtype=np.int8)
    rows = np.arange(n)
    for _ in range(4):
        for i in range(1, k):
            t[i], t[i - 1] = two_sum(t[i], t[i - 1])
        rest = np.abs(t[:-1]).sum(axis=0)
        top = t[-1]
        done = (rest == 0) | (np.abs(top) > rest * (1.0 + 2.0 * k * _U))
        sign[rows[done]] = np.sign(top[done]).astype(np.int8)
        rows, t = rows[~done], t[:, ~done]
        if rows.size == 0:
            return sign
    sign[rows] = _expansion_sign(list(t))
    return sign


def _expansion_sign(terms: list[F64]) -> I8:
    """Exact sign of ``sum(terms)`` by Grow-Expansion (Shewchuk), row by row."""
    comps = [terms[0]]
    for b in terms[1:]:
        q = b
        new = []
        for e in comps:
            q, h = two_sum(q, e)
            new.append(h)
        new.append(q)
        comps = new
    sign = np.zeros(terms[0].shape, dtype=np.int8)
    open_ = np.ones(terms[0].shape, dtype=bool)
    for c in reversed(comps):
        nz = open_ & (c != 0)
        sign[nz] = np.sign(c[nz]).astype(np.int8)
        open_ &= ~nz
    return sign


def _in_range(*factors: F64) -> NDArray[np.bool_]:
    ok = np.ones(factors[0].shape, dtype=bool)
    for f in factors:
        a = np.abs(f)
        ok &= (a == 0) | ((a >= _TINY) & (a <= _HUGE))
    return ok


Pairs = list[tuple[list[F64], list[F64], int]]


def _take(pairs: Pairs, rows: NDArray[Any]) -> Pairs:
    """``pairs`` at ``rows`` (indices or a mask) only."""
    return [([x[rows] for x in a], [y[rows] for y in b], s) for a, b, s in pairs]


def _products_sign(pairs: Pairs) -> I8:
    """:func:`_exact_products_sign` where every factor is 0 or in ``[_TINY, _HUGE]``."""
    terms: list[F64] = []
    for a, b, s in pairs:
        for x in a:
            for y in b:
                p, e = two_prod(x, y)
                terms += [p, e] if s > 0 else [-p, -e]
    # terms that are zero on every row add nothing
    return sign_of_sum([t for t in terms if t.any()] or [terms[0]])


def _scaled(pairs: Pairs) -> Pairs:
    """``pairs`` with the parts of each ``a_k`` times ``2^-e(a_k)`` and those of ``b_k``
    times ``2^(e(a_k) - E)`` row by row (``e``: the exponent of the largest part, ``E``: the
    largest ``e(a_k) + e(b_k)`` of the nonzero products): every product is scaled by one
    power of two, so the sign of the sum is kept; exact where no scaled part is subnormal."""
    def exponent(parts: list[F64]) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
        top = np.max(np.abs(np.stack(parts)), axis=0)
        return np.frexp(top)[1].astype(np.intp), top > 0

    ea, eb = zip(*[(exponent(a), exponent(b)) for a, b, _ in pairs], strict=True)
    e_prod = [np.where(za & zb, xa + xb, np.iinfo(np.intp).min)
              for (xa, za), (xb, zb) in zip(ea, eb, strict=True)]
    top = np.maximum.reduce(e_prod)
    top = np.where(top == np.iinfo(np.intp).min, 0, top)
    with np.errstate(over="ignore", under="ignore"):  # such rows are out of range: left
        return [([np.ldexp(x, -xa) for x in a], [np.ldexp(y, xa - top) for y in b], s)
                for (a, b, s), (xa, _) in zip(pairs, ea, strict=True)]


def _exact_products_sign(pairs: Pairs, n: int) -> I8:
    """Sign of ``sum_k s_k * (sum a_k) * (sum b_k)`` for ``pairs`` of (a parts, b parts,
    sign s_k), every part an exact float array of length ``n``. Rows with a factor out of
    ``[_TINY, _HUGE]`` are scaled by powers of two first (:func:`_scaled`); only rows still
    out of it (products far apart) are summed in integers (:func:`_integer_sign`)."""
    ok = _in_range(*[f for a, b, _ in pairs for f in (*a, *b)])
    out = np.zeros(n, dtype=np.int8)
    if ok.any():
        out[ok] = _products_sign(_take(pairs, ok))
    rest = np.flatnonzero(~ok)
    if rest.size:
        part = _take(pairs, rest)
        scaled = _scaled(part)
        fine = _in_range(*[f for a, b, _ in scaled for f in (*a, *b)])
        for (a, b, _), (sa, sb, _) in zip(part, scaled, strict=True):
            for x, y in zip((*a, *b), (*sa, *sb), strict=True):
                fine &= (x == 0) == (y == 0)  # no part scaled away to 0
        if fine.any():
            out[rest[fine]] = _products_sign(_take(scaled, fine))
        ok[rest[fine]] = True
    left = np.flatnonzero(~ok)
    if left.size:
        out[left] = _integer_sign(_take(pairs, left))
    return out


def _integer_sign(pairs: Pairs) -> I8:
    """The sign of :func:`_exact_products_sign` in Python integers, row by row: each part
    ``m 2^e`` with a 53-bit integer ``m``, each product of parts ``m m' 2^(e + e')``, the
    sum shifted to the least exponent of the row (products 2,000 binary orders apart)."""
    terms = []
    for a, b, s in pairs:
        for x in a:
            for y in b:
                mx, ex = np.frexp(x)
                my, ey = np.frexp(y)
                m = (np.ldexp(mx, 53).astype(np.int64).astype(object)
                     * np.ldexp(my, 53).astype(np.int64).astype(object) * s)
                terms.append((m, (ex.astype(np.int64) + ey).tolist()))
    n = terms[0][0].size
    out = np.zeros(n, dtype=np.int8)
    for i in range(n):
        row = [(m[i], e[i]) for m, e in terms if m[i]]
        if row:
            low = min(e for _, e in row)
            total = sum(m << (e - low) for m, e in row)
            out[i] = (total > 0) - (total < 0)
    return out


def _diff(a: F64, b: F64) -> list[F64]:
    """``a - b`` as an exact two-term list (the rounded difference and its error)."""
    h, lo = two_sum(a, -b)
    return [h, lo]


def orient(ax: F64, ay: F64, bx: F64, by: F64, cx: F64, cy: F64) -> I8:
    """Exact sign of the cross product ``(b - a) x (c - a)``: 1 where ``c`` lies to the left
    of the line from ``a`` to ``b`` (counter-clockwise), -1 to the right, 0 on it."""
    with np.errstate(over="ignore", invalid="ignore"):
        ux, uy, vx, vy = bx - ax, by - ay, cx - ax, cy - ay
        left, right = ux * vy, uy * vx
        det = left - right
        # Shewchuk's bound for this evaluation (differences rounded too), plus underflow slack
        bound = (3.0 * _U + 16.0 * _U * _U) * (np.abs(left) + np.abs(right)) + _ABS
    out = np.sign(np.nan_to_num(det)).astype(np.int8)
    hard = np.flatnonzero(~(np.abs(det) > bound))
    if hard.size:
        hard = _orient_degenerate(out, hard, (ax, ay, bx, by, cx, cy), (ux, uy, vx, vy))
    if hard.size:
        # whole numbers up to 2^25: the differences and products above were exact
        small = np.ones(hard.size, dtype=bool)
        for v in (ax, ay, bx, by, cx, cy):
            h = v[hard]
            small &= (np.abs(h) <= 2.0**25) & (h == np.rint(h))
        hard = hard[~small]
    if hard.size:
        t = [v[hard] for v in (ax, ay, bx, by, cx, cy)]
        with np.errstate(over="ignore", invalid="ignore"):
            d = [_diff(t[2], t[0]), _diff(t[3], t[1]), _diff(t[4], t[0]), _diff(t[5], t[1])]
        # a difference beyond the float64 range (1e308 - -1e308): the rows in integers, as
        # (b_x - a_x)(c_y - a_y) - (b_y - a_y)(c_x - a_x) of the coordinates themselves
        wide = ~np.logical_and.reduce([np.isfinite(x) for v in d for x in v])
        if wide.any():
            w = [v[wide] for v in t]
            out[hard[wide]] = _integer_sign([([w[2], -w[0]], [w[5], -w[1]], 1),
                                             ([w[3], -w[1]], [w[4], -w[0]], -1)])
            keep = ~wide
            hard, d = hard[keep], [[x[keep] for x in v] for v in d]
        # rows whose four differences are exact need 4 terms, not 16
        short = (d[0][1] == 0) & (d[1][1] == 0) & (d[2][1] == 0) & (d[3][1] == 0)
        for rows, parts in ((np.flatnonzero(short), 1), (np.flatnonzero(~short), 2)):
            if rows.size:
                dux, duy, dvx, dvy = ([x[rows] for x in v[:parts]] for v in d)
                out[hard[rows]] = _exact_products_sign([(dux, dvy, 1), (duy, dvx, -1)],
                                                       rows.size)
    return out


def _orient_degenerate(out: I8, hard: NDArray[np.intp], pts: tuple[F64, ...],
                       diffs: tuple[F64, ...]) -> NDArray[np.intp]:
    """Decide the rows ``hard`` of :func:`orient` that need no expansions, in ``out``; return
    the others. A rounded difference is 0 exactly where its coordinates are equal and has
    the sign of the exact one, so a product with a zero factor is 0 and one without has the
    sign of its factors' product (a constant score: every offset (u, 0)); and three points
    whose two coordinates are equal (or opposite) lie on one line (a score paired with
    itself)."""
    ux, uy, vx, vy = (d[hard] for d in diffs)
    left0, right0 = (ux == 0) | (vy == 0), (uy == 0) | (vx == 0)
    with np.errstate(invalid="ignore"):
        sign = np.where(left0, -np.sign(uy) * np.sign(vx), np.sign(ux) * np.sign(vy))
    done = left0 | right0
    ax, ay, bx, by, cx, cy = (v[hard] for v in pts)
    same = ((ax == ay) & (bx == by) & (cx == cy)) | ((ax == -ay) & (bx == -by) & (cx == -cy))
    sign[same] = 0
    done |= same
    out[hard[done]] = sign[done]
    return hard[~done]


def dot_sign(px: F64, py: F64, qx: F64, qy: F64, wx: float | F64, wy: float | F64,
             d: tuple[F64, F64] | None = None) -> I8:
    """Exact sign of ``(p - q) . (wx, wy)``: the order of ``p`` and ``q`` along the float
    direction ``w`` (one, or one per point; 1 where ``p`` projects above ``q``); ``d``: the
    rounded differences ``(px - qx, py - qy)`` where the caller has them."""
    with np.errstate(over="ignore", invalid="ignore"):
        dx, dy = (px - qx, py - qy) if d is None else d
        a, b = dx * wx, dy * wy
        det = a + b
        bound = (3.0 * _U + 16.0 * _U * _U) * (np.abs(a) + np.abs(b)) + _ABS
    out = np.sign(np.nan_to_num(det)).astype(np.int8)
    hard = np.flatnonzero(~(np.abs(det) > bound))
    if hard.size:
        h = hard
        wxa = np.broadcast_to(np.asarray(wx, dtype=np.float64), det.shape)[h]
        wya = np.broadcast_to(np.asarray(wy, dtype=np.float64), det.shape)[h]
        with np.errstate(over="ignore", invalid="ignore"):
            ex, ey = _diff(px[h], qx[h]), _diff(py[h], qy[h])
        # a difference beyond the float64 range (1e308 - -1e308): the rows in integers, as
        # (p_x - q_x) w_x + (p_y - q_y) w_y of the coordinates themselves
        wide = ~np.logical_and.reduce([np.isfinite(x) for x in (*ex, *ey)])
        if wide.any():
            g = h[wide]
            out[g] = _integer_sign([([px[g], -qx[g]], [wxa[wide]], 1),
                                    ([py[g], -qy[g]], [wya[wide]], 1)])
        keep = np.flatnonzero(~wide)
        if keep.size:
            out[h[keep]] = _exact_products_sign(
                [([x[keep] for x in ex], [wxa[keep]], 1),
                 ([x[keep] for x in ey], [wya[keep]], 1)], keep.size)
    return out


# ------------------------------------------------------------------ angles of swaps
def pseudo_angle(dr: F64, dg: F64) -> F64:
    """A key increasing with the swap angle of an offset ``(dr, dg)`` (the angle in
    ``(0, pi)`` where the direction is orthogonal to it), in ``(-1, 1)``; inf where
    ``dr == 0`` (no swap inside ``(0, pi)``).

    With ``a = |dr|`` and ``b = sign(dr) dg`` the key is ``b / (a + |b|)``, increasing in
    ``b / a = dg / dr``, as the angle is. Its relative error is below ``4u`` (u the unit
    round-off), since each of the four operations rounds once.
    """
    a = np.abs(dr)
    b = np.where(dr < 0, -dg, dg)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        k = b / (a + np.abs(b))
    return np.where(dr == 0, np.inf, k)


#: Keys closer than this (relative, plus :data:`_KEY_ABS`) may be misordered by rounding.
_KEY_REL = 2.0**-47
_KEY_ABS = 2.0**-900


def swap_slots(dr: F64, dg: F64, w: F64) -> tuple[NDArray[np.intp], NDArray[np.intp]] | None:
    """Where the swaps of offsets ``(dr, dg)`` lie among the directions ``w`` (k + 1 unit
    vectors of increasing angles inside ``(0, pi)``, rows), allowing for rounding.

    Slot ``j`` (0 to k - 1) is the closed interval of directions from ``w[j]`` to
    ``w[j + 1]``; -1 is before ``w[0]`` and ``k`` after ``w[k]``. Returns ``u <= v`` per
    offset: its swap lies in one of the slots ``u..v`` (one slot, or two where its
    :func:`pseudo_angle` is within the rounding bound of a direction's; ``-1..k`` where
    the key cannot be trusted: an offset whose size overflows). An offset with ``dr == 0``
    never swaps inside ``(0, pi)``: ``u = v = k + 1``. None when the directions' keys are
    not increasing by more than twice the rounding bound (too close to tell apart).
    """
    k = w.shape[0] - 1
    # the offset (sin a, -cos a) swaps exactly at the direction (cos a, sin a)
    bkey = pseudo_angle(w[:, 1], -w[:, 0])
    # a key within this of a direction's may lie on either side of it: an offset's key is
    # within 6 u of its exact value (the rounded differences, then three operations), a
    # direction's within 3 u, so where the key is at most twice the direction's in size
    # both err by less than 16 u of the direction's, and a key more than twice its size is
    # farther from it than both errors
    tol = _KEY_REL * 4 * np.abs(bkey) + 2 * _KEY_ABS
    if not bool(np.all(np.diff(bkey) > tol[1:] + tol[:-1])):
        return None
    size = np.abs(dr) + np.abs(dg)
    with np.errstate(invalid="ignore", divide="ignore"):
        key = np.sign(dr) * dg / size  # pseudo_angle where dr != 0
    # slots u..v: after every direction certainly below the key, up to the last one that
    # is not certainly above it
    # (counted by comparisons: a binary search of a few values mispredicts most branches)
    assert k < 2**15 - 2
    u16 = np.zeros(key.size, dtype=np.int16)
    v16 = np.zeros(key.size, dtype=np.int16)
    for b, t in zip(bkey.tolist(), tol.tolist(), strict=True):
        u16 += key > b + t
        v16 += key >= b - t
    u, v = u16.astype(np.intp) - 1, v16.astype(np.intp) - 1
    bad = ~np.isfinite(size) | np.isnan(key)
    u[bad], v[bad] = -1, k
    zero = dr == 0
    u[zero], v[zero] = k + 1, k + 1
    return u, v


def _swap_sign(er: F64, eg: F64, ar: F64, ag: F64, br: F64, bg: F64) -> I8:
    """Exact order of the swap angles of points ``a`` and ``b`` with anchor ``e`` (both with
    a first score other than the anchor's): the sign of ``angle(b) - angle(a)``.

    With ``v = p - e`` and ``u = sign(v_r) v``, the angle increases with ``u_g / u_r``, so
    ``angle(a) < angle(b)`` iff ``u_a x u_b > 0``, which is ``sign(v_a,r) sign(v_b,r)``
    times :func:`orient` ``(e, a, b)``.
    """
    s = orient(er, eg, ar, ag, br, bg)
    flip = (ar < er) != (br < er)
    return np.where(flip, -s, s).astype(np.int8)


Compare = Callable[[NDArray[np.intp], NDArray[np.intp]], I8]


def sorted_events(row: NDArray[np.intp], er: F64, eg: F64, pr: F64, pg: F64,
                  width: int | None = None) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """The swaps of points ``(pr, pg)`` with their anchors ``(er, eg)`` (one entry per
    swap, ``row`` the anchor's row), ordered by row, then by exact angle; entries whose
    first score equals the anchor's (no swap inside ``(0, pi)``) come last in their row,
    each a group of its own.

    Returns ``order`` (a permutation of the entries) and ``new`` (bool, per sorted entry):
    True where a group of swaps at one exact angle of one row starts. Keys of
    :func:`pseudo_angle` are sorted once (by row, then key, stable) and runs of keys within
    their error bound are ordered exactly (:func:`refine`). ``width``: the entries are rows
    of this many, one after another (``row`` is then ``repeat(arange(n // width), width)``),
    sorted row by row.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: decided exactly
        key = pseudo_angle(pr - er, pg - eg)
    if width:
        order = np.argsort(key.reshape(-1, width), axis=1, kind="stable")
        order = (order + (np.arange(order.shape[0]) * width)[:, None]).reshape(-1)
    elif row.size and row.max() < 1 << 16:  # by key, then by row: a radix sort of the rows
        order = np.argsort(key, kind="stable")
        order = order[np.argsort(row[order].astype(np.uint16), kind="stable")]
    else:
        order = np.lexsort((key, row))
    k, r = key[order], row[order]
    with np.errstate(invalid="ignore"):  # inf - inf: keys of no swap, never near
        near = (r[1:] == r[:-1]) & np.isfinite(k[1:]) & (
            k[1:] - k[:-1] <= _KEY_REL * (np.abs(k[1:]) + np.abs(k[:-1])) + _KEY_ABS)

    def compare(piv: NDArray[np.intp], el: NDArray[np.intp]) -> I8:
        return _swap_sign(er[el], eg[el], pr[piv], pg[piv], pr[el], pg[el])

    _sharpen(order, near, er, eg, pr, pg)
    return order, refine(order, near, compare)


#: Double-double keys closer than this (relative) may be misordered by their rounding.
_DD_REL = 2.0**-90


def _sharpen(order: NDArray[np.intp], near: NDArray[np.bool_], er: F64, eg: F64, pr: F64,
             pg: F64) -> None:
    """Reorder the runs of ``near`` by the pseudo-angle in double-double arithmetic (about
    100 bits, from the exact differences), in place, and keep ``near`` only between
    neighbours whose double-double keys are within their error bound: what is left for
    the exact predicates is then, mostly, swaps that coincide exactly. Only runs with a
    rounded difference need it (where every difference is exact, equal slopes already have
    equal keys and the exact predicates take 4 terms); runs with an input out of the exact
    products' range are left as they are."""
    pos, cid = _clusters(np.arange(order.size), near)
    if pos.size == 0:
        return
    el = order[pos]
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: the runs are kept
        dr, dg = _diff(pr[el], er[el]), _diff(pg[el], eg[el])
    runs = int(cid[-1]) + 1
    rounded = np.bincount(cid, weights=((dr[1] != 0) | (dg[1] != 0)), minlength=runs) > 0
    take = np.flatnonzero(rounded[cid])
    if take.size == 0:
        return
    pos, cid, el = pos[take], cid[take], el[take]
    dr, dg = [v[take] for v in dr], [v[take] for v in dg]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        neg = dr[0] < 0
        ah, al = np.abs(dr[0]), np.where(neg, -dr[1], dr[1])  # |dr|
        bh, bl = np.where(neg, -dg[0], dg[0]), np.where(neg, -dg[1], dg[1])  # sign(dr) dg
        up = bh >= 0
        dh, dl = _dd_add(ah, al, np.where(up, bh, -bh), np.where(up, bl, -bl))  # |dr| + |b|
        hi, lo = _dd_div(bh, bl, dh, dl)
    bad = ~(_in_range(*dr, *dg, dh, hi) & np.isfinite(hi) & np.isfinite(lo))
    bad_run = np.bincount(cid, weights=bad.astype(np.float64), minlength=runs)[cid] > 0
    hi, lo = np.where(bad_run, 0.0, hi), np.where(bad_run, 0.0, lo)
    o = np.lexsort((lo, hi, cid))
    order[pos] = el[o]
    hi, lo, bad_run = hi[o], lo[o], bad_run[o]
    inner = np.flatnonzero(cid[1:] == cid[:-1])
    gap = (hi[inner + 1] - hi[inner]) + (lo[inner + 1] - lo[inner])
    close = gap <= _DD_REL * (np.abs(hi[inner + 1]) + np.abs(hi[inner])) + _KEY_ABS
    near[pos[inner]] = close | bad_run[inner]


def _dd_add(ah: F64, al: F64, bh: F64, bl: F64) -> tuple[F64, F64]:
    """``(ah + al) + (bh + bl)`` in double-double (both nonnegative: no cancellation)."""
    s, e = two_sum(ah, bh)
    e = e + (al + bl)
    h = s + e
    return h, e - (h - s)


def _dd_div(xh: F64, xl: F64, yh: F64, yl: F64) -> tuple[F64, F64]:
    """``(xh + xl) / (yh + yl)`` in double-double (Dekker's division, about 100 bits)."""
    q1 = xh / yh
    p, pe = two_prod(q1, yh)
    r = (((xh - p) - pe) + xl) - q1 * yl
    q2 = r / yh
    h = q1 + q2
    return h, q2 - (h - q1)


def sorted_projection(pr: F64, pg: F64, w: F64) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """The points ``(pr, pg)`` ordered by their exact projection on the float direction
    ``w`` (shape (2,)), and ``new``: True where a group of exactly equal projections starts.

    The rounded projections are sorted (stable); runs within their error bound are ordered
    exactly by :func:`dot_sign` (:func:`refine_projections` of this one direction)."""
    wk = np.array([[float(w[0]), float(w[1])]])
    s = pr[None, :] * wk[:, :1] + pg[None, :] * wk[:, 1:]
    order = np.argsort(s, axis=1, kind="stable")
    ss = take_rows(s, order)
    change = ss[:, 1:] != ss[:, :-1]
    refine_projections(pr, pg, wk, s, order, change)
    return order[0], np.concatenate((np.ones(min(pr.size, 1), dtype=bool), change[0]))


def projections_near(pr: F64, pg: F64, w: F64, proj: F64,
                     order: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Which neighbours of the stable orders ``order`` of the rounded projections ``proj``
    (see :func:`refine_projections`) are near: within the error bound of their two
    projections, so rounding may have misordered or tied them (d, n - 1)."""
    ss = take_rows(proj, order)
    gap = ss[:, 1:] - ss[:, :-1]
    # a neighbour pair is near where its gap is within the bound of its two magnitudes
    # (|pr w_r| + |pg w_g|, rounded). Rounding is monotone, so no magnitude exceeds the one
    # of the largest |pr| and |pg|, nor a pair's bound the bound of two such: only the
    # (few) gaps within that are tested with their own magnitudes
    # (a gap of two projections that overflowed to one infinity is NaN: near, so that
    # identical rows stay tied and the others are ordered exactly)
    big = (np.abs(np.max(np.abs(pr), initial=0.0) * w[:, :1])
           + np.abs(np.max(np.abs(pg), initial=0.0) * w[:, 1:]))
    cand = ~(gap > _near_bound(big, big))
    if np.count_nonzero(cand) > cand.size // 8:  # magnitudes far apart: each pair's own
        mag = take_rows(np.abs(pr[None, :] * w[:, :1]) + np.abs(pg[None, :] * w[:, 1:]), order)
        return ~(gap > _near_bound(mag[:, 1:], mag[:, :-1]))
    row, at = np.nonzero(cand)
    near = np.zeros(gap.shape, dtype=bool)
    if row.size:
        lo, hi = order[row, at], order[row, at + 1]
        wr, wg = w[row, 0], w[row, 1]
        mag_lo = np.abs(pr[lo] * wr) + np.abs(pg[lo] * wg)
        mag_hi = np.abs(pr[hi] * wr) + np.abs(pg[hi] * wg)
        near[row, at] = ~(gap[row, at] > _near_bound(mag_hi, mag_lo))
    return near


def _near_bound(mag0: F64, mag1: F64) -> F64:
    """The error bound of the difference of two rounded projections of magnitudes ``mag0``
    and ``mag1`` (each ``|pr w_r| + |pg w_g|``, rounded): nondecreasing in both."""
    return 4.0 * _U * (mag0 + mag1) + _ABS


def refine_projections(pr: F64, pg: F64, w: F64, proj: F64, order: NDArray[np.intp],
                       change: NDArray[np.bool_],
                       near: NDArray[np.bool_] | None = None) -> None:
    """Make the stable orders of rounded projections exact, in place: ``proj`` (d, n) holds
    ``pr * w[k, 0] + pg * w[k, 1]`` rounded, ``order`` its rows sorted stably and ``change``
    (d, n - 1) True where a sorted row's next value differs. Each row then orders the points
    exactly on direction ``w[k]``, with ``change`` True where a group of exactly equal
    projections starts: neighbours farther apart than the error bound
    of their projections are ordered and unequal as rounded; the runs of nearer ones
    (``near``, default :func:`projections_near`) are ordered exactly (:func:`refine`), in
    the rows that have such runs only (the grid's directions in one pass,
    :func:`sorted_projection` one direction)."""
    if near is None:
        near = projections_near(pr, pg, w, proj, order)
    for k in np.flatnonzero(near.any(axis=1)):
        wx, wy = float(w[k, 0]), float(w[k, 1])

        def compare(piv: NDArray[np.intp], el: NDArray[np.intp]) -> I8:
            return dot_sign(pr[el], pg[el], pr[piv], pg[piv], wx, wy)  # noqa: B023

        change[k] = refine(order[k], near[k], compare)[1:]


#: Rounds of pivots :func:`refine` takes before a comparison sort orders what is left.
ROUNDS = 64


def refine(order: NDArray[np.intp], near: NDArray[np.bool_], compare: Compare,
           ) -> NDArray[np.bool_]:
    """Order the runs of ``near`` neighbours of ``order`` exactly, in place, and return
    ``new`` (True where a group of exactly equal entries starts).

    ``order`` is sorted by a rounded key; ``near[i]`` says that entries ``i`` and ``i + 1``
    may be misordered or equal (their keys are within the keys' error bound), so entries in
    different runs are ordered, and unequal, as their keys say. ``compare(pivot, entries)``
    is the exact sign of ``entry - pivot``. Each run is split by the exact order against its
    pivot (before it, with it, after it: a stable sort keeps the key order within each
    part); the parts before and after it are runs again, until none is left (after
    :data:`ROUNDS` rounds, a comparison sort finishes what is left).
    """
    n = order.size
    brk = ~near  # brk[i]: sorted entries i and i + 1 lie in different groups (where known)
    pos, cid = _clusters(np.arange(n), near)
    for rnd in range(ROUNDS):
        if pos.size == 0:
            break
        first = np.flatnonzero(np.concatenate(([True], cid[1:] != cid[:-1])))
        size = np.diff(np.append(first, cid.size))
        el = order[pos]
        # a pivot per run at a scrambled place, not the middle: keys of nearly aligned
        # points carry round-off rather than order, and the middle entry was the run's
        # least or largest round after round (a pair (r, 3r + 1): 64 rounds ended with
        # runs of 130, then a comparison sort took seconds). The order found is exact
        # whichever pivots are taken.
        at = (first * 2654435761 + rnd * 40503 + 97) % size
        s = compare(np.repeat(el[first + at], size), el)
        o = np.lexsort((s, cid))
        order[pos] = el[o]
        s = s[o]
        inner = cid[1:] == cid[:-1]
        brk[pos[:-1][inner]] = (s[1:] != s[:-1])[inner]
        pos, cid = _clusters(pos, inner & (s[1:] == s[:-1]) & (s[1:] != 0))
    else:
        _sort_clusters(order, pos, cid, compare, brk)
    return np.concatenate(([True], brk)) if n else np.zeros(0, dtype=bool)


def _clusters(pos: NDArray[np.intp], link: NDArray[np.bool_],
              ) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The entries of ``pos`` in maximal runs of ``link`` (``link[j]`` joins ``pos[j]`` and
    ``pos[j + 1]``) and a label per run."""
    j = np.flatnonzero(link)
    if j.size == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    covered = np.zeros(link.size + 1, dtype=bool)
    covered[j] = True
    covered[j + 1] = True
    slots = np.flatnonzero(covered)
    starts = np.ones(slots.size, dtype=bool)
    starts[1:] = ~link[slots[1:] - 1]
    return pos[slots], np.cumsum(starts)


def _sort_clusters(order: NDArray[np.intp], pos: NDArray[np.intp], cid: NDArray[np.intp],
                   compare: Compare, brk: NDArray[np.bool_]) -> None:
    """Order each run exactly by a comparison sort (rare: many distinct values within a
    rounding error of each other)."""

    def cmp(a: int, b: int) -> int:
        return -int(compare(np.array([a]), np.array([b]))[0])

    starts = np.flatnonzero(np.concatenate(([True], cid[1:] != cid[:-1])))
    for s0, s1 in zip(starts.tolist(), np.append(starts[1:], cid.size).tolist(), strict=True):
        slots = pos[s0:s1]
        items = sorted(order[slots].tolist(), key=functools.cmp_to_key(cmp))
        order[slots] = items
        for j in range(len(items) - 1):
            brk[slots[j]] = cmp(items[j], items[j + 1]) != 0


# ------------------------------------------------------------------ unit vectors
# Cody-Waite reduction by pi/2: _P1 has 33 significant bits, so k * _P1 is exact for k <= 4.
_P1 = 1.5707963267341256
_P2 = 6.077100506303966e-11
_P3 = 2.0222662487959506e-21
_SIN = [1.0 / math.factorial(k) * (-1) ** ((k - 1) // 2) for k in range(3, 22, 2)]
_COS = [1.0 / math.factorial(k) * (-1) ** (k // 2) for k in range(2, 22, 2)]


def cos_sin(angles: F64) -> tuple[F64, F64]:
    """``cos`` and ``sin`` of ``angles`` in ``[-pi, 2 pi]`` to about one unit in the last
    place, from basic operations only: the same bits on every CPU (NumPy's vectorised
    ``cos``/``sin`` differ between CPUs)."""
    a = np.asarray(angles, dtype=np.float64)
    k = np.rint(a / (0.5 * math.pi))
    x = ((a - k * _P1) - k * _P2) - k * _P3
    x2 = x * x
    ps = np.full(x.shape, _SIN[-1])
    for c in _SIN[-2::-1]:
        ps = ps * x2 + c
    s = x + x * x2 * ps
    pc = np.full(x.shape, _COS[-1])
    for c in _COS[-2::-1]:
        pc = pc * x2 + c
    c = 1.0 + x2 * pc
    q = np.mod(k, 4).astype(np.int64)
    cos = np.choose(q, [c, -s, -c, s])
    sin = np.choose(q, [s, c, -s, -c])
    return cos, sin
