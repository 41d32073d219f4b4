"""Brute-force references for ``abstain._core.exact``: every float is read as the rational it
is (``fractions.Fraction``), so each sign and each order is the true one, by definition."""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def _sign(v: Fraction) -> int:
    return (v > 0) - (v < 0)


def orient(a, b, c) -> int:
    """Sign of ``(b - a) x (c - a)`` for three points given as float pairs."""
    ax, ay, bx, by, cx, cy = (Fraction(float(v)) for v in (*a, *b, *c))
    return _sign((bx - ax) * (cy - ay) - (by - ay) * (cx - ax))


def dot(p, q, w) -> int:
    """Sign of ``(p - q) . w``."""
    px, py, qx, qy, wx, wy = (Fraction(float(v)) for v in (*p, *q, *w))
    return _sign((px - qx) * wx + (py - qy) * wy)


def swap_slope(e, p):
    """The key of the swap of ``p`` with anchor ``e``: ``dg / dr`` (the swap angle increases
    with it); None where the first scores are equal (no swap inside (0, pi))."""
    dr = Fraction(float(p[0])) - Fraction(float(e[0]))
    dg = Fraction(float(p[1])) - Fraction(float(e[1]))
    return None if dr == 0 else dg / dr


def sorted_events(row, er, eg, pr, pg):
    """Keys ``(row, slope)`` in sorted order and the group starts, as
    ``abstain._core.exact.sorted_events`` defines them (no-swap entries last, each alone)."""
    keys = []
    for i in range(len(row)):
        sl = swap_slope((er[i], eg[i]), (pr[i], pg[i]))
        keys.append((int(row[i]), sl is None, sl if sl is not None else i))
    order = sorted(range(len(row)), key=lambda i: keys[i])
    ks = [keys[i] for i in order]
    new = [True] + [ks[j][:2] != ks[j - 1][:2] or ks[j][1] or ks[j][2] != ks[j - 1][2]
                    for j in range(1, len(ks))]
    return [ks[j][:2] + ((ks[j][2],) if not ks[j][1] else ()) for j in range(len(ks))], new


def projection_groups(pr, pg, w):
    """Exact projections on ``w``, sorted, and the group starts."""
    wx, wy = Fraction(float(w[0])), Fraction(float(w[1]))
    vals = sorted(Fraction(float(r)) * wx + Fraction(float(g)) * wy
                  for r, g in zip(pr, pg, strict=True))
    return vals, [True] + [vals[j] != vals[j - 1] for j in range(1, len(vals))]


def as_array(values) -> np.ndarray:
    return np.array(values, dtype=object)
