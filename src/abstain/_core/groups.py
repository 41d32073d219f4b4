"""Tie groups of a calibration sample: the one sort every metric and reject model shares.

The sample is sorted by uncertainty (ascending: the lowest uncertainty is accepted
first) and cut into groups of equal uncertainty. Every randomised threshold rule
``(theta, nu)`` accepts a prefix of whole groups plus a fraction ``nu`` of the
next one, so its expected accepted count ``x`` and expected accepted loss ``C(x)``
lie on the piecewise-linear curve through the knots ``(N_g, C_g)``: ``N_g`` is the
number of samples in groups ``0..g`` and ``C_g`` their summed loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .counting import binned_totals, half_totals
from .validation import as_losses_and_scores

_EPS = float(np.finfo(np.float64).eps)


@dataclass
class TieGroups:
    """Sorted distinct uncertainty values with the count and loss sum of each group.

    Loss sums are kept in units of ``scale``, a power of two: 1 for every sample whose
    losses stay far from the float64 maximum (``n * max(loss) < 2**1016``, see
    :func:`loss_scale`), larger otherwise, so that running sums of losses near ``1e308``
    do not overflow. Dividing by a power of two is exact, so the scaled sums are the
    unscaled ones to the last bit wherever those are finite (and the losses are not
    below ``2**-1022 * scale``).

    Attributes
    ----------
    values : ndarray of shape (G,)
        Distinct uncertainty values, ascending.
    cum_counts : ndarray of shape (G,)
        ``N_g``: running count up to and including group ``g`` (float64, exact up to 2**53).
    unit_cum_sums : ndarray of shape (G,)
        ``C_g / scale``: running loss sum up to and including group ``g``, in units of
        ``scale``.
    scale : float
        The power of two the loss sums are divided by.
    cum_sums, sums, counts, unit_sums : ndarray of shape (G,)
        ``C_g`` in the units of the loss (``inf`` where it exceeds the float64 range: the
        risk bounds read these), the per-group loss sums, counts, and loss sums in units of
        ``scale`` (on first use).
    """

    values: NDArray[np.float64]
    cum_counts: NDArray[np.float64]
    unit_cum_sums: NDArray[np.float64]
    scale: float = 1.0
    #: The loss sum of each group as summed, in units of ``scale`` (None: the differences
    #: of the running sums, which can be off in their last bits: 0.4 - 0.1 is
    #: 0.30000000000000004, and a group of one loss 0.3 then looked dearer than a reject
    #: cost of 0.3).
    group_unit_sums: NDArray[np.float64] | None = None

    @cached_property
    def counts(self) -> NDArray[np.float64]:
        return np.diff(self.cum_counts, prepend=0.0)

    @cached_property
    def unit_sums(self) -> NDArray[np.float64]:
        if self.group_unit_sums is not None:
            return self.group_unit_sums
        # Adding a non-negative number never lowers a float, so group sums are >= 0.
        return np.diff(self.unit_cum_sums, prepend=0.0)

    @cached_property
    def cum_sums(self) -> NDArray[np.float64]:
        return _unscaled(self.unit_cum_sums, self.scale)

    @cached_property
    def sums(self) -> NDArray[np.float64]:
        return _unscaled(self.unit_sums, self.scale)

    @property
    def n(self) -> float:
        return float(self.cum_counts[-1])

    def risk_of(self, g: int, nu: float) -> float:
        """Selective risk of the rule ``(values[g], nu)`` (``g >= 0``): its expected accepted
        loss over its expected accepted count, each from ``nu`` itself (through ``x`` a
        tiny ``nu`` keeps only about 1e-16 of ``x``). Part of the first group is that group's
        mean loss, whatever ``nu`` (a subnormal share of its loss would underflow)."""
        if nu >= 1.0 or self.cum_counts[g] == self.counts[g]:
            return float(self.unit_cum_sums[g] / self.cum_counts[g]) * self.scale
        loss = self.unit_knots_y[g] + nu * self.unit_sums[g]
        return float(loss / self.accepted_at(g, nu)) * self.scale

    @cached_property
    def knots_x(self) -> NDArray[np.float64]:
        return np.concatenate(([0.0], self.cum_counts))

    @cached_property
    def unit_knots_y(self) -> NDArray[np.float64]:
        return np.concatenate(([0.0], self.unit_cum_sums))

    def rescaled(self, top: float) -> TieGroups:
        """These groups with a scale large enough for a quantity ``top`` (a reject cost, a
        target risk) compared with the losses: the same groups when it already is."""
        scale = max(self.scale, loss_scale(top, self.n))
        if scale == self.scale:
            return self
        factor = scale / self.scale  # a power of two: the division is exact
        return TieGroups(self.values, self.cum_counts, self.unit_cum_sums / factor, scale,
                         self.unit_sums / factor)

    def rule_at(self, x: float) -> tuple[int, float]:
        """The canonical rule accepting ``x`` samples in expectation, ``0 < x <= n``.

        Returns the group index ``g`` whose value is the threshold and the acceptance
        probability ``nu`` in (0, 1] of that group.
        """
        g = int(np.searchsorted(self.cum_counts, x, side="left"))
        g = min(g, len(self.counts) - 1)
        before = self.cum_counts[g] - self.counts[g]
        nu = (x - before) / self.counts[g]
        return g, float(min(max(nu, 0.0), 1.0))

    def accepted_at(self, g: int, nu: float) -> float:
        """Expected accepted count of the rule ``(values[g], nu)``; 0 for ``g = -1``.

        The inverse of :meth:`rule_at`.
        """
        if g < 0:
            return 0.0
        if nu >= 1.0:
            return float(self.cum_counts[g])
        # the part of the group added to the groups before it: a tiny nu stays above 0
        return float(self.cum_counts[g] - self.counts[g] + self.counts[g] * nu)

    def max_accepted_at_risk(self, target_risk: float) -> float:
        """Largest expected accepted count ``x`` with ``C(x) <= target_risk * x``; 0 if none:
        the count of :meth:`max_rule_at_risk`."""
        return self.accepted_at(*self.max_rule_at_risk(target_risk))

    def max_rule_at_risk(self, target_risk: float) -> tuple[int, float]:
        """The rule ``(g, nu)`` of the largest expected accepted count ``x`` with
        ``C(x) <= target_risk * x``; ``(-1, 1.0)`` (accept nothing) if none.

        ``C(x) - target_risk * x`` is linear between knots and zero at ``x = 0``, so the
        answer is the last knot whose risk meets the target, extended into the next
        group up to the point where the risk of the partial acceptance hits the target.
        The acceptance ``nu`` of that group is computed as such, not recovered from ``x``
        (``(x - before) / count`` keeps only about 1e-16 of ``x`` in ``nu``: with a target of
        1e-9 the risk came out 8e-8 relative above it). A knot's risk within a relative
        1e-12 above the target meets it (so a target equal to an attainable risk, such as
        1/6 for 1 error in 6 rows, is met); where the slack ``target_risk * N_g - C_g`` of
        the last such knot, or the excess of the next group, is within the round-off of
        the running sums, it is taken from the exact group sums (correctly rounded), so a
        slack of a few ulps still opens the next group as far as it allows, and a knot that
        meets the target only through the 1e-12 opens none. Computed in units of ``scale``
        (enlarged for a target near the float64 maximum, reduced for one below ``2**-900``:
        subnormal risks keep too few bits for the comparison).
        """
        groups = self.rescaled(target_risk)
        lam = target_risk / groups.scale
        if 0.0 < lam < 2.0**-900:  # exact: a sum that overflows is of an infeasible knot
            k = -math.frexp(lam)[1]
            with np.errstate(over="ignore"):
                groups = TieGroups(groups.values, groups.cum_counts,
                                   np.ldexp(groups.unit_cum_sums, k), math.ldexp(groups.scale, -k),
                                   np.ldexp(groups.unit_sums, k))
            lam = math.ldexp(lam, k)
        # A relative 1e-12 absorbs round-off in the running sums, so a target equal to
        # an attainable risk is met.
        risk = groups.unit_cum_sums / groups.cum_counts
        ok = np.flatnonzero(risk <= lam * (1.0 + 1e-12))
        if ok.size == 0:
            return -1, 1.0
        g = int(ok[-1])
        if g + 1 < groups.counts.size:
            excess = _exact_difference(groups.unit_sums[g + 1 : g + 2], lam,
                                       float(groups.counts[g + 1]))
            if excess <= 0:
                return g, 1.0
            allowed = lam * float(groups.cum_counts[g])
            spent = float(groups.unit_cum_sums[g])
            slack = allowed - spent
            # the running sum of g + 1 terms is off by at most (g + 1) eps of itself: within
            # a margin of that, the slack is the exact one of the group sums (math.fsum)
            if abs(slack) <= 64 * _EPS * (allowed + (g + 2) * spent):
                slack = -_exact_difference(groups.unit_sums[: g + 1], lam,
                                           float(groups.cum_counts[g]))
            nu = min(slack / excess, 1.0) if slack > 0 else 0.0
            if nu > 0:  # a share that underflows (or an excess beyond float64) opens none
                return g + 1, nu
        return g, 1.0


def _exact_difference(sums: NDArray[np.float64], lam: float, count: float) -> float:
    """``sum(sums) - lam * count`` of the exact values, correctly rounded (``count`` a whole
    number below 2**53): the product is split into two floats whose sum it is exactly, and
    :func:`math.fsum` adds the terms without intermediate rounding."""
    product = lam * count
    rest = float(Fraction(lam) * int(count) - Fraction(product))  # exact: a product's error
    return math.fsum([*sums.tolist(), -product, -rest])


def coverage_count(coverage: float, n: float) -> float:
    """The expected accepted count of a coverage of ``n`` rows: ``coverage * n``, taken as
    the whole number it is within a relative 1e-12 of (``0.07 * 100`` is
    ``7.000000000000001`` in floats, and would accept 1e-15 of the eighth row)."""
    x = coverage * n
    return float(round(x)) if abs(x - round(x)) <= 1e-12 * x else x


def _unscaled(unit: Any, scale: float) -> Any:
    """``unit * scale`` (``inf`` beyond the float64 range, without a warning)."""
    if scale == 1.0:
        return unit
    with np.errstate(over="ignore"):
        return unit * scale


# Losses are summed unscaled while n * max(loss) stays below 2**_SAFE_EXPONENT: their running
# sums, a difference of two of them, a cost times a count, stay below the float64 maximum.
_SAFE_EXPONENT = 1016


def loss_scale(top: float, n: float) -> float:
    """The power of two that loss sums of ``n`` rows with losses at most ``top`` are kept in.

    1.0 while ``n * top < 2**1016`` (every realistic sample: the sums are then the plain
    float64 sums, bit for bit); otherwise the least power of two that brings
    ``n * top / scale`` below ``2**1016``, which keeps losses and targets as small as
    ``2**-1022 * scale`` (``2.2e-308 * scale``) at full precision.
    """
    if not top > 0.0 or not math.isfinite(top):
        return 1.0
    e = math.frexp(top)[1] + math.frexp(max(float(n), 1.0))[1]  # > log2(n * top)
    return 1.0 if e <= _SAFE_EXPONENT else math.ldexp(1.0, e - _SAFE_EXPONENT)


def sorted_by_uncertainty(
    losses: NDArray[np.float64], uncertainty: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp] | None]:
    """Sort ascending by uncertainty; return sorted scores, sorted losses, group ends.

    The group ends are the indices of the last sample of each tie group in the
    sorted order, or ``None`` when all scores are distinct (every sample is its own
    group; no index array is built). Tied samples keep their row order (the paper's
    index rule; :func:`stable_order`).
    """
    order, starts = stable_order(uncertainty)
    u = np.take(uncertainty, order)
    if starts is None:
        return u, np.take(losses, order), None
    ends = np.append(starts[1:] - 1, u.size - 1)
    return u, np.take(losses, order), ends


# Below this many rows an argsort is as fast as the packed-key sort (fixed costs).
_KEYED_MIN_ROWS = 1 << 12


def stable_order(
    uncertainty: NDArray[np.float64],
) -> tuple[NDArray[np.intp], NDArray[np.intp] | None]:
    """The stable ascending order of finite float64 scores, and the starts of its tie groups.

    Tied rows keep their row order, so the order is unique (-0.0 and +0.0 are equal) and
    does not depend on how a CPU's sort kernel orders equal values. ``starts`` holds the
    sorted position of the first row of each group, or is None when every value is
    distinct. From ``_KEYED_MIN_ROWS`` rows on the order comes from one sort of packed
    integer keys (:func:`_keyed_order`), else from an argsort whose tie groups are put in
    row order (:func:`_rows_in_order`): the same order either way.
    """
    n = uncertainty.size
    if n >= _KEYED_MIN_ROWS and n < 1 << 40 and uncertainty.dtype == np.float64:
        keyed = _keyed_order(uncertainty)
        if keyed is not None:
            return keyed
    order = np.argsort(uncertainty)
    u = np.take(uncertainty, order)
    boundary = u[1:] != u[:-1]
    if np.all(boundary):  # every row is its own group (also 0 or 1 rows)
        return order, None
    starts = np.concatenate(([0], np.flatnonzero(boundary) + 1))
    return _rows_in_order(order, starts[1:]), starts


#: From this many columns on :func:`stable_orders` sorts packed keys row by row.
_KEYED_MIN_ROWS_2D = 512


#: From rows this long on :func:`take_rows` gathers row by row.
_TAKE_ROW = 1024


def take_rows(a: NDArray[Any], order: NDArray[np.intp]) -> NDArray[Any]:
    """``np.take_along_axis(a, order, axis=1)`` of 2-D arrays: rows of ``_TAKE_ROW``
    entries or more row by row with ``np.take`` (about twice as fast, no index arrays
    built), shorter ones in one call (a call per row would cost more than the gather)."""
    if order.shape[1] < _TAKE_ROW:
        return np.take_along_axis(a, order, axis=1)
    out = np.empty(order.shape, dtype=a.dtype)
    for k in range(order.shape[0]):
        np.take(a[k], order[k], out=out[k])
    return out


def stable_orders(rows: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """:func:`stable_order` of each row of a 2-D array of finite float64 scores: the orders
    (the shape of ``rows``) and ``change`` (one column fewer), True where a sorted row's
    next value starts a new tie group. Row by row from packed integer keys
    (:func:`_keyed_order`, about twice as fast as a stable float sort from a few hundred
    columns on), else one stable argsort of the rows; the same order either way."""
    d, n = rows.shape
    if n < _KEYED_MIN_ROWS_2D or n >= 1 << 40:
        order = np.argsort(rows, axis=1, kind="stable")
        s = take_rows(rows, order)
        return order, s[:, 1:] != s[:, :-1]
    order = np.empty((d, n), dtype=np.intp)
    change = np.ones((d, max(n - 1, 0)), dtype=bool)
    for k in range(d):
        keyed = _keyed_order(rows[k])
        if keyed is None:
            order[k] = np.argsort(rows[k], kind="stable")
            s = rows[k][order[k]]
            change[k] = s[1:] != s[:-1]
            continue
        order[k], starts = keyed
        if starts is not None:  # else every value is its own group
            change[k] = False
            change[k, starts[1:] - 1] = True
    return order, change


def _rows_in_order(order: NDArray[np.intp], starts: NDArray[np.intp]) -> NDArray[np.intp]:
    """``order`` (an argsort) with the rows of each tie group (starting at the sorted
    positions ``starts``, the first excluded) in row order: (group, row) pairs packed in one
    int64 key and sorted, faster than a stable float sort."""
    n = order.size
    group = np.zeros(n, dtype=np.int64)
    group[starts] = n
    np.cumsum(group, out=group)  # n * (tie group of each sorted position)
    key = np.empty(n, dtype=np.int64)
    key[order] = group
    key += np.arange(n, dtype=np.int64)  # + row index
    key.sort()
    return key % n


def _keyed_order(
    u: NDArray[np.float64],
) -> tuple[NDArray[np.intp], NDArray[np.intp] | None] | None:
    """:func:`stable_order` by one sort of integers, or None where it would not pay.

    Each row becomes one uint64 key: its score's order-preserving key (:func:`_order_keys`)
    less the smallest, shifted right until it leaves ``b = bits(n - 1)`` low bits free,
    which hold the row index. One ``np.sort`` of these keys (a SIMD sort of integers, about
    a third of an argsort of the floats) orders the rows by score and, among equal keys,
    by row. Where the shift dropped bits, rows with equal keys may still differ in value:
    their values are read back, and only runs that mix values are sorted again by
    ``(value, row)`` (few rows with continuous scores; none with ties only). None where
    such runs hold more than an eighth of the rows: the argsort path is then cheaper.
    """
    n = u.size
    v = u + 0.0  # -0.0 becomes +0.0; a buffer of our own
    lo, hi = float(v.min()), float(v.max())
    kmin, kmax = (int(x) for x in _order_keys(np.array([lo, hi]), lo, hi))
    b = max(1, (n - 1).bit_length())
    shift = max(0, (kmax - kmin).bit_length() - (64 - b))
    key = _order_keys(v, lo, hi, inplace=True)
    if kmin:
        key -= np.uint64(kmin)
    if shift:
        key >>= np.uint64(shift)
    key <<= np.uint64(b)
    key |= np.arange(n, dtype=np.uint64)
    key.sort()
    order = (key & np.uint64((1 << b) - 1)).view(np.intp)
    key >>= np.uint64(b)
    same = key[1:] == key[:-1]
    del key, v
    if not same.any():
        return order, None
    if shift and not _keys_tell_values_apart(u, lo, hi, kmin, shift, same):
        # equal keys: equal values, or distinct values that the shift merged
        in_run = np.zeros(n, dtype=bool)
        in_run[:-1] = same
        in_run[1:] |= same
        pos = np.flatnonzero(in_run)
        first = np.empty(pos.size, dtype=bool)  # the first position of each run of equal keys
        first[0] = True
        np.logical_not(same[pos[:-1]], out=first[1:])
        fv = np.take(u, order[pos])
        fv += 0.0
        differ = fv[1:] != fv[:-1]
        differ &= ~first[1:]
        if differ.any():  # runs that mix values: sort their rows by (value, row)
            run = np.cumsum(first)
            mixed = np.zeros(int(run[-1]) + 1, dtype=bool)
            mixed[run[1:][differ]] = True
            sel = np.flatnonzero(mixed[run])
            if sel.size > n // 8:
                return None
            by = sel[np.lexsort((fv[sel], run[sel]))]  # stable: rows stay in row order
            order[pos[sel]] = order[pos[by]]
            fv[sel] = fv[by]
            differ = fv[1:] != fv[:-1]
            differ &= ~first[1:]
        same[pos[:-1][differ]] = False
        if not same.any():
            return order, None
    return order, np.concatenate(([0], np.flatnonzero(~same) + 1))


def _keys_tell_values_apart(u: NDArray[np.float64], lo: float, hi: float, kmin: int, shift: int,
                            same: NDArray[np.bool_]) -> bool:
    """Whether distinct values of ``u`` never share a shifted key (then equal keys mean
    equal values), checked on the distinct values from ``np.sort`` where more than a
    sixteenth of the rows share a key (ties): cheaper there than reading every tied row's
    value back."""
    if np.count_nonzero(same) <= u.size // 16:
        return False
    s = np.sort(u)
    s += 0.0
    distinct = s[np.concatenate(([True], s[1:] != s[:-1]))]
    keys = _order_keys(distinct, lo, hi)
    keys -= np.uint64(kmin)
    keys >>= np.uint64(shift)
    return bool(np.all(keys[1:] != keys[:-1]))


def group_totals(
    uncertainty: NDArray[np.float64], *weights: NDArray[Any], values: bool = True
) -> tuple[NDArray[np.float64], NDArray[np.int64], list[NDArray[Any]]]:
    """Distinct values of ``uncertainty`` (ascending), the rows of each, and each weight's sum.

    The one grouping of rows that the metrics, the reject models and
    :class:`~abstain.ScoreTable` share: the same rows give the same totals, bit for bit,
    whichever of them asks. Every group total is the sum of the group's weights in row
    order, so it does not depend on how a CPU's sort kernel orders tied values (SIMD sorts
    differ between CPUs); for scores that are all float16 numbers (fp16 softmax outputs, at
    most 65,536 distinct values) and at least ``counting._HALF_MIN_ROWS`` rows the groups
    come from counting bit patterns (``counting.half_totals``, O(n) instead of a sort), and
    for heavily tied scores from counting equal bins of the span
    (``counting.binned_totals``); these add a group's float weights in two parts (a coarse
    grid whose sums are exact, then the rest), ``reduceat`` below in blocks, so each path
    keeps a continuous total to about its last digit, and its last bits depend on the path,
    which the data alone choose. Integer weights give integer totals (exact below 2**53).
    -0.0 and +0.0 are one group, whose value is +0.0. Where every weight is 0 or 1 (0/1
    losses, ID and OOD marks) the rows fall into a few classes and the totals are counts:
    one sort of packed integer keys gives them (:func:`_class_totals`), no argsort of the
    rows. Otherwise the rows are put in :func:`stable_order` and each group's weights summed
    with ``np.add.reduceat``. ``values=False`` may return an empty array in place of the
    values, for callers that need the totals only (it saves a gather).
    """
    if _ascending(uncertainty):  # already one row per value, in order (a table's values)
        return uncertainty + 0.0, np.ones(uncertainty.size, dtype=np.int64), [
            w.copy() for w in weights]
    half = half_totals(uncertainty, weights)
    if half is not None:
        return half
    classed = _class_totals(uncertainty, weights)
    if classed is not None:
        return classed
    return _uncounted_totals(uncertainty, weights, values)


def _uncounted_totals(
    uncertainty: NDArray[np.float64], weights: tuple[NDArray[Any], ...], values: bool
) -> tuple[NDArray[np.float64], NDArray[np.int64], list[NDArray[Any]]]:
    """:func:`group_totals` of scores that are neither ascending nor all float16, with
    weights that are not all 0 or 1: heavily tied scores by counting bins, else the stable
    sort."""
    binned = binned_totals(uncertainty, weights)
    if binned is not None:
        return binned
    order, starts = stable_order(uncertainty)  # ties in row order, whatever the sort kernel
    if starts is None:  # every row is its own group (also 0 or 1 rows)
        u = np.take(uncertainty, order) + 0.0 if values else _NO_VALUES  # -0.0 is +0.0
        return u, np.ones(order.size, dtype=np.int64), [np.take(w, order) for w in weights]
    counts = np.diff(np.append(starts, order.size)).astype(np.int64)
    u = np.take(uncertainty, order[starts]) + 0.0 if values else _NO_VALUES
    return u, counts, [np.add.reduceat(np.take(w, order), starts) for w in weights]


_NO_VALUES: NDArray[np.float64] = np.empty(0)


def loss_totals(
    uncertainty: NDArray[np.float64], losses: NDArray[Any]
) -> tuple[NDArray[np.int64] | None, NDArray[Any]]:
    """``(counts, sums)`` of ``group_totals(uncertainty, losses, values=False)``; for 0/1
    losses on distinct scores (every group one row, from :func:`min_rows_of_code_groups`
    rows) ``(None, marks)``: the losses as uint8 in ascending order of score, with no
    counts or float totals built (``prefix.expected_prefix_areas`` takes them as they
    are)."""
    if _ascending(uncertainty):
        return np.ones(uncertainty.size, dtype=np.int64), losses.copy()
    half = half_totals(uncertainty, (losses,))
    if half is not None:
        return half[1], half[2][0]
    grouped = class_groups(uncertainty, (losses,))
    if grouped is not None:
        marks = grouped.singleton_codes()
        if marks is not None:
            return None, marks
        return grouped.counts, class_totals(grouped, (losses,))[0]
    # the paths above do not apply: not twice over (group_totals would try them again)
    _, counts, (sums,) = _uncounted_totals(uncertainty, (losses,), values=False)
    return counts, sums


def _ascending(u: NDArray[Any]) -> bool:
    """Whether ``u`` is strictly increasing (checked on its head first: one comparison pass
    at most, against the sort it saves)."""
    if u.ndim != 1 or u.dtype != np.float64:
        return False
    head = u[:64]
    return bool(np.all(head[1:] > head[:-1])) and bool(np.all(u[1:] > u[:-1]))


# Below this many rows the argsort path is as fast (its fixed costs are smaller).
_CLASS_MIN_ROWS = 1 << 12
_SIGN = np.uint64(1 << 63)


def _class_totals(
    uncertainty: NDArray[Any], weights: tuple[NDArray[Any], ...]
) -> tuple[NDArray[np.float64], NDArray[np.int64], list[NDArray[Any]]] | None:
    """:func:`group_totals` where every weight is 0 or 1, or None where it does not apply.

    Each row's weights make a class code (bit ``k`` is weight ``k``), grouped by
    :func:`code_groups` (:func:`class_groups`); weight ``k``'s total of a group is its
    count of rows whose code has bit ``k``: exact integers, those of the row-order sums.
    """
    grouped = class_groups(uncertainty, weights)
    if grouped is None:
        return None
    return grouped.values, grouped.counts, class_totals(grouped, weights)


def class_groups(uncertainty: NDArray[Any], weights: tuple[NDArray[Any], ...]) -> CodeGroups | None:
    """The :func:`code_groups` of rows whose weights are all 0 or 1 (bit ``k`` of a row's
    code is weight ``k``), or None where they are not, or the rows too few (below
    :func:`min_rows_of_code_groups`) or not float64 scores with float64 or int64 weights."""
    n = uncertainty.size
    if (n < _CLASS_MIN_ROWS or uncertainty.dtype != np.float64 or uncertainty.ndim != 1
            or len(weights) > 7
            or any(w.dtype not in (np.float64, np.int64) or w.shape != (n,) for w in weights)):
        return None
    code = None
    for k, w in enumerate(weights):
        head = w[:1024]
        if not np.all((head == 0) | (head == 1)):
            return None
        nonzero = np.count_nonzero(w)
        if nonzero == 0:  # bit k unset on every row
            continue
        one = w == 1
        if nonzero != np.count_nonzero(one):  # a weight other than 0 and 1
            return None
        if code is None:
            code = one.view(np.uint8) if k == 0 else one.view(np.uint8) << np.uint8(k)
        else:
            code |= one.view(np.uint8) << np.uint8(k)
    if code is None:  # every weight 0 on every row: one class
        code = np.zeros(n, dtype=np.uint8)
    return code_groups(uncertainty, code, 1 << len(weights))


def class_totals(grouped: CodeGroups, weights: tuple[NDArray[Any], ...]) -> list[NDArray[Any]]:
    """Each weight's total per group of :func:`class_groups` (in the weight's dtype)."""
    return [grouped.count_of(np.flatnonzero((np.arange(1 << len(weights)) >> k) & 1), w.dtype)
            for k, w in enumerate(weights)]


def min_rows_of_code_groups() -> int:
    """The fewest rows :func:`code_groups` is used for (below, the argsort path is as fast)."""
    return _CLASS_MIN_ROWS


class CodeGroups:
    """Tie groups of rows that each carry a small class code (see :func:`code_groups`).

    Attributes
    ----------
    values : ndarray of shape (G,)
        The distinct scores, ascending (+0.0 for zeros of either sign).
    counts : ndarray of shape (G,)
        Rows per group (int64).
    """

    def __init__(self, values: NDArray[np.float64], codes: NDArray[np.uint8] | None,
                 ends: NDArray[np.intp] | None, present: NDArray[np.intp]) -> None:
        self.values = values
        self._codes = codes  # the codes numbered 0..C-1, in sorted order; None: one class
        self._ends = ends  # last sorted position of each group; None: one row per group
        self._present = present  # the code of each number
        self._runs: dict[int, NDArray[np.int64]] = {}

    @cached_property
    def counts(self) -> NDArray[np.int64]:
        if self._ends is None:
            return np.ones(self.values.size, dtype=np.int64)
        return np.diff(self._ends, prepend=-1).astype(np.int64, copy=False)

    def singleton_codes(self) -> NDArray[np.uint8] | None:
        """Each row's code in ascending order of score where every group is one row (every
        score distinct), else None; a buffer of the groups' own, not to be written."""
        if self._ends is not None:
            return None
        if self._codes is None:  # one class
            return np.full(self.values.size, self._present[0], dtype=np.uint8)
        if np.array_equal(self._present, np.arange(self._present.size)):
            return self._codes
        return self._present.astype(np.uint8)[self._codes]

    def count_of(self, codes: Any, dtype: Any = np.int64) -> NDArray[Any]:
        """Rows per group whose code is one of ``codes``, as ``dtype``."""
        numbers = np.flatnonzero(np.isin(self._present, codes))
        g = self.values.size
        if numbers.size == 0:
            return np.zeros(g, dtype=dtype)
        if numbers.size == self._present.size:
            return self.counts.astype(dtype, copy=False)
        assert self._codes is not None  # two classes at least
        if self._ends is None:
            if self._present.size == 2:  # numbers 0 and 1: the one asked for, or its complement
                return (self._codes if numbers[0] == 1 else self._codes ^ np.uint8(1)).astype(dtype)
            mask = self._codes == numbers[0]
            for j in numbers[1:]:
                mask |= self._codes == j
            return mask.astype(dtype)
        total = self._per_number(int(numbers[0])).copy()
        for j in numbers[1:]:
            total += self._per_number(int(j))
        return total.astype(dtype, copy=False)

    def _per_number(self, j: int) -> NDArray[np.int64]:
        if j not in self._runs:
            assert self._codes is not None and self._ends is not None
            starts = np.concatenate(([0], self._ends[:-1] + 1))
            self._runs[j] = np.add.reduceat((self._codes == j).view(np.uint8), starts,
                                            dtype=np.int64)
        return self._runs[j]


def code_groups(uncertainty: NDArray[np.float64], code: NDArray[np.uint8],
                n_codes: int) -> CodeGroups:
    """Group rows by score, each with a class code in ``0..n_codes-1`` (uint8), by one sort.

    The C codes present are numbered ``0..C-1``. The scores become order-preserving unsigned
    integer keys (the IEEE-754 sign trick, after ``+ 0.0`` so that -0.0 is +0.0), shifted
    left by ``ceil(log2 C)`` bits with the number in the low bits, and sorted once: a SIMD
    sort of integers, about as fast as ``np.sort`` of the scores and several times faster
    than their ``argsort``. Counts per group and code are then read off the sorted keys:
    exact integers that do not depend on how a sort kernel orders equal keys. Where the
    keys' span leaves no room for the code bits (scores of both signs far from zero with
    three codes, say), each code's scores are sorted apart and the runs merged
    (:func:`_merged_classes`). ``uncertainty`` must be finite float64, with at least one row.
    """
    n = uncertainty.size
    if n_codes <= 2:
        ones = int(np.count_nonzero(code)) if n_codes == 2 else 0
        present = np.array([c for c, m in ((0, ones < n), (1, ones > 0)) if m], dtype=np.intp)
    else:
        present = np.flatnonzero(np.bincount(code, minlength=n_codes))
    n_classes = present.size
    if present[-1] != n_classes - 1:  # number the codes present 0..C-1
        lut = np.zeros(max(n_codes, 1), dtype=np.uint8)
        lut[present] = np.arange(n_classes, dtype=np.uint8)
        code = lut[code]
    bits = (n_classes - 1).bit_length()
    lo, hi = float(uncertainty.min()) + 0.0, float(uncertainty.max()) + 0.0
    kmin, kmax = (int(x) for x in _order_keys(np.array([lo, hi]), lo, hi))
    codes: NDArray[np.uint8] | None = None
    if bits and lo >= 0.0 and kmax >> (64 - bits) == 0:
        # the bit patterns shifted left as they are (the sign bit of -0.0 falls out: +0.0)
        key = np.left_shift(uncertainty.view(np.uint64), np.uint64(bits))
        shift = 0
    else:
        v = uncertainty + 0.0  # -0.0 becomes +0.0: one group; a buffer of our own
        if bits and (kmax - kmin) >> (64 - bits):
            values, merged_codes, ends = _merged_classes(v, code, n_classes)
            return CodeGroups(values, merged_codes, ends, present)
        key = _order_keys(v, lo, hi, inplace=True)
        shift = 0 if kmax >> (64 - bits) == 0 else kmin
        if bits:
            if shift:
                key -= np.uint64(shift)
            key <<= np.uint64(bits)
    if bits:
        key |= code
        key.sort()
        codes = key.astype(np.uint8)  # the low byte
        codes &= np.uint8((1 << bits) - 1)
        key >>= np.uint64(bits)
        if shift:
            key += np.uint64(shift)
    else:
        key.sort()
    boundary = key[1:] != key[:-1]
    if np.all(boundary):  # every row is its own group
        return CodeGroups(_float_of_keys(key, lo, hi), codes, None, present)
    ends = np.flatnonzero(boundary)
    ends = np.append(ends, n - 1)
    return CodeGroups(_float_of_keys(np.take(key, ends), lo, hi), codes, ends, present)


def _order_keys(v: NDArray[np.float64], lo: float, hi: float, *,
                inplace: bool = False) -> NDArray[np.uint64]:
    """Unsigned integers in the order of the float64 values ``v`` (no -0.0, no NaN), between
    ``lo`` and ``hi``: the bit patterns themselves where no value is negative, else the sign
    bit set on non-negative values and every bit flipped on negative ones (in the buffer of
    ``v`` with ``inplace=True``)."""
    bits = v.view(np.uint64)
    if lo >= 0.0:
        return bits if inplace else bits.copy()
    if hi < 0.0:
        return np.invert(bits, out=bits) if inplace else ~bits
    # all bits set on negative values (the sign copied by the arithmetic shift), the sign
    # bit on the others: one xor flips a negative value's bits and sets a positive one's sign
    flip = (v.view(np.int64) >> 63).view(np.uint64)
    flip |= _SIGN
    if inplace:
        bits ^= flip
        return bits
    return bits ^ flip


def _float_of_keys(keys: NDArray[np.uint64], lo: float, hi: float) -> NDArray[np.float64]:
    """The float64 values of keys made by :func:`_order_keys` (the inverse; in the buffer of
    ``keys`` where no value is negative: callers pass keys of their own)."""
    if lo >= 0.0:
        return keys.view(np.float64)
    if hi < 0.0:
        return (~keys).view(np.float64)
    return np.where(keys >= _SIGN, keys ^ _SIGN, ~keys).view(np.float64)


def _merged_classes(
    v: NDArray[np.float64], code: NDArray[np.uint8], n_classes: int
) -> tuple[NDArray[np.float64], NDArray[np.uint8], NDArray[np.intp] | None]:
    """Distinct values, the sorted rows' class numbers and the group ends (None: one row per
    group), by sorting each class apart and merging the sorted runs (a stable sort of their
    concatenation merges runs in linear time); for keys whose span leaves no room for the
    class bits."""
    runs = [np.sort(v[code == j]) for j in range(n_classes)]
    merged = np.concatenate(runs)
    order = np.argsort(merged, kind="stable")
    u = np.take(merged, order)
    edges = np.cumsum([r.size for r in runs])
    cls = np.searchsorted(edges, order, side="right").astype(np.uint8)
    boundary = u[1:] != u[:-1]
    if np.all(boundary):
        return u, cls, None
    ends = np.append(np.flatnonzero(boundary), u.size - 1)
    return u[ends], cls, ends


def groups_from_totals(
    values: NDArray[np.float64], counts: NDArray[np.integer], sums: NDArray[np.float64],
    top: float | None = None,
) -> TieGroups:
    """:class:`TieGroups` from per-group totals (running sums in float64, in group order).

    ``top`` bounds a single loss (default: the largest group sum); the sums are divided by
    :func:`loss_scale` of it before they are accumulated.
    """
    cum_counts = np.cumsum(counts, dtype=np.float64)
    n = float(cum_counts[-1]) if cum_counts.size else 0.0
    if top is None:
        top = float(np.max(sums)) if sums.size else 0.0
    scale = loss_scale(top, n)
    unit = np.asarray(sums if scale == 1.0 else sums / scale, dtype=np.float64)
    return TieGroups(values, cum_counts, np.cumsum(unit), scale, unit)


def tie_groups(losses: NDArray[np.float64], uncertainty: NDArray[np.float64]) -> TieGroups:
    """Group validated arrays by distinct uncertainty value.

    Losses whose sums could overflow are divided by :func:`loss_scale` first (a power of
    two, exact), so every group sum is a float64 number.
    """
    scale = loss_scale(float(losses.max()) if losses.size else 0.0, losses.size)
    if scale != 1.0:
        losses = losses / scale
    values, counts, (sums,) = group_totals(uncertainty, losses)
    return TieGroups(values, np.cumsum(counts, dtype=np.float64), np.cumsum(sums), scale, sums)


def validated_groups(losses: ArrayLike, uncertainty: ArrayLike) -> TieGroups:
    """Validate ``losses`` and ``uncertainty`` and group them."""
    return tie_groups(*as_losses_and_scores(losses, uncertainty))
