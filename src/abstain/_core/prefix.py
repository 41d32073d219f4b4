"""Expected prefix losses under the ``"mean"`` tie rule: the areas of AuRC and AUGRC from
per-group totals, and the harmonic differences they need (exact to the last digits for a
group of one row after 10**8 rows)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

# Below this argument the harmonic differences are summed term by term; above it the
# asymptotic series of the digamma function has a truncation error below 1e-23.
_HARMONIC_DIRECT = 64
_INVERSES = 1.0 / np.arange(1.0, _HARMONIC_DIRECT + 1.0)
# _INVERSE_SUMS[b, t] = fsum(1 / j for j = b + 1..t), correctly rounded (0 where t <= b)
_INVERSE_SUMS = np.array([[math.fsum(_INVERSES[b:t]) for t in range(_HARMONIC_DIRECT + 1)]
                          for b in range(_HARMONIC_DIRECT + 1)])


def _digamma_difference(x1: NDArray[np.float64], x2: NDArray[np.float64]) -> NDArray[np.float64]:
    """``psi(x2) - psi(x1)`` for ``x2 >= x1 >= 64`` without cancellation.

    Each term of the asymptotic series ``psi(x) = ln x - 1/(2x) - 1/(12x^2) + 1/(120x^4)
    - 1/(252x^6) + 1/(240x^8) - 1/(132x^10) + ...`` is differenced in a form that keeps its
    relative precision: ``log1p((x2 - x1) / x1)``, ``d / (2 x1 x2)``, ...; the later terms
    are below 5e-10 and are subtracted directly.
    """
    d = x2 - x1
    out = np.log1p(d / x1)
    out += d / (2.0 * x1 * x2)
    out += d * (x1 + x2) / (12.0 * (x1 * x2) ** 2)
    for power, coef in ((4, -1 / 120), (6, 1 / 252), (8, -1 / 240), (10, 1 / 132)):
        out += coef * (x1 ** -float(power) - x2 ** -float(power))
    return out


def harmonic_difference(before: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """``H(before + m) - H(before) = sum_{j = before + 1}^{before + m} 1 / j`` per group.

    ``before`` (>= 0) and ``m`` (>= 1) are whole numbers in float64. Terms ``j <= 64``
    are summed one by one (``math.fsum``); the rest is a digamma difference evaluated
    without cancellation, so a group of one row after 10**8 rows still gets its
    ``1 / (10**8 + 1)`` to the last digits.
    """
    x1 = np.maximum(before + 1.0, _HARMONIC_DIRECT + 1.0)
    x2 = np.maximum(before + m + 1.0, x1)
    out = _digamma_difference(x1, x2)
    low = np.flatnonzero(before < _HARMONIC_DIRECT)  # at most 64 groups
    if low.size:
        b = before[low].astype(np.intp)
        top = np.minimum(b + m[low].astype(np.intp), _HARMONIC_DIRECT)
        out[low] += _INVERSE_SUMS[b, top]
    return out


#: Groups of up to this many rows sum their ``k / (B + k)`` term by term.
_EXCESS_DIRECT = 64
#: Above it, ``m - B dH`` is taken as it is while ``B / m`` stays below this (a relative
#: round-off of about ``2 (B / m) eps``, 5e-13); beyond, the series in ``m / B``.
_EXCESS_RATIO = 1024.0


def tie_excess(before: NDArray[np.float64], m: NDArray[np.float64],
               dh: NDArray[np.float64]) -> NDArray[np.float64]:
    """``m - B dH = sum_{k=1}^{m} k / (B + k)`` per group of ``m`` rows after ``B`` rows,
    ``dH`` the group's :func:`harmonic_difference`, without the cancellation of the
    difference (``B dH`` is within ``m (m + 1) / (2 B)`` of ``m``: the difference of the
    floats kept only about ``m / (2 B eps)`` of it, 1e-10 relative for 2 rows after 10**6).

    Groups of at most 64 rows add their ``m`` terms (O(rows) in all); larger ones after
    more than 1024 times their rows take the alternating series
    ``sum_p (-1)^(p + 1) S_p(m) / B^p`` of the power sums ``S_p(m) = sum_k k^p`` to
    ``p = 6`` (the next term is below 1e-18 of the sum); the others the difference.
    """
    out = m - before * dh
    small = np.flatnonzero((m <= _EXCESS_DIRECT) & (before > 0))
    if small.size:
        order = small[np.argsort(-m[small], kind="stable")]  # the largest groups first
        sizes, b = m[order], before[order]
        total = np.zeros(order.size)
        for k in range(1, int(sizes[0]) + 1):
            live = int(np.searchsorted(-sizes, -k, side="right"))  # groups of >= k rows
            total[:live] += k / (b[:live] + k)
        out[order] = total
    far = np.flatnonzero((m > _EXCESS_DIRECT) & (before > _EXCESS_RATIO * m))
    if far.size:
        x, b = m[far], before[far]
        x1, x2 = x + 1.0, 2.0 * x + 1.0
        powers = (x * x1 / 2.0, x * x1 * x2 / 6.0, (x * x1 / 2.0) ** 2,
                  x * x1 * x2 * (3.0 * x * x + 3.0 * x - 1.0) / 30.0,
                  (x * x1) ** 2 * (2.0 * x * x + 2.0 * x - 1.0) / 12.0,
                  x * x1 * x2 * (3.0 * x**4 + 6.0 * x**3 - 3.0 * x + 1.0) / 42.0)
        total = np.zeros(far.size)
        for p in range(len(powers) - 1, -1, -1):  # the smallest terms first
            total += (-1.0) ** p * powers[p] / b ** (p + 1)
        out[far] = total
    return out


def expected_prefix_areas(
    counts: NDArray[np.integer] | None, sums: NDArray[Any], n_rows: int | None = None
) -> tuple[float, float]:
    """``(sum_i E[L(i)] / i, sum_i E[L(i)])`` over ``i = 1..n`` under the ``"mean"`` tie rule.

    ``L(i)`` is the loss of the ``i`` first accepted rows; inside a group of ``m`` rows
    with loss ``S`` after ``B`` rows of loss ``P``, ``E[L(B + k)] = P + k S / m``. Summed
    over the group: ``P dH + (S / m)(m - B dH)`` with ``dH = H(B + m) - H(B)`` and
    ``m P + S (m + 1) / 2``: O(G) for G groups, whatever the number of rows. A group of one
    row adds the plain prefix area ``(P + S) / (B + 1)``: no harmonic difference is
    evaluated for it (with continuous scores, for none). ``n_rows``: the sum of the
    counts, where the caller knows it (a pass saved). ``counts=None``: every group is one
    row, and ``sums`` may be the rows' 0/1 losses as uint8 (summed as float64: the same
    exact running counts).
    """
    through = np.cumsum(sums, dtype=np.float64)  # P + S of each group, in prefix order
    if counts is None or n_rows is None:
        n_rows = sums.size if counts is None else int(np.sum(counts))
    if counts is None or n_rows == counts.size:  # every group one row: fewer passes
        rank = np.arange(1.0, through.size + 1.0)
        return float(np.sum(np.divide(through, rank, out=rank))), float(np.sum(through))
    m = counts.astype(np.float64)
    before = np.concatenate(([0.0], np.cumsum(m)[:-1]))  # exact integers up to 2**53
    prior = np.concatenate(([0.0], through[:-1]))
    plain = m * prior + sums * ((m + 1.0) / 2.0)
    many = np.flatnonzero(counts != 1)
    inverse = through / (before + 1.0)
    b, mm = before[many], m[many]
    dh = harmonic_difference(b, mm)
    inverse[many] = prior[many] * dh + (sums[many] / mm) * tie_excess(b, mm, dh)
    return float(np.sum(inverse)), float(np.sum(plain))
