"""Group totals by counting instead of sorting, where the scores allow it: float16 numbers
(a count of the 65,536 bit patterns) and heavily tied scores (equal bins of their span).
Each path returns :func:`~abstain._core.groups.group_totals`' tuple, or None where it
does not apply; each group's float weights are added in two parts (:func:`_bin_sums`), so
that a group of millions of rows keeps its sum to about one unit in the last place (one
by one, 4,000,000 losses of 0.1 summed to 1.3e-11 relative off)."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
from numpy.typing import NDArray

# Below this many rows a sort is as fast as the 65,536 bins of the float16 path.
_HALF_MIN_ROWS = 1 << 17
_HALF_BITS = np.arange(1 << 16, dtype=np.uint16)
_HALF_VALUES = _HALF_BITS.view(np.float16).astype(np.float64)
# Bit patterns of the finite float16 numbers in ascending order of value; -0.0 (0x8000)
# is counted with +0.0, as the sort path counts equal values as one.
_HALF_ORDER = np.argsort(np.where(np.isfinite(_HALF_VALUES) & (_HALF_BITS != 0x8000),
                                  _HALF_VALUES, np.inf), kind="stable")[:-2049]


def half_totals(
    uncertainty: NDArray[Any], weights: tuple[NDArray[Any], ...]
) -> tuple[NDArray[np.float64], NDArray[np.int64], list[NDArray[Any]]] | None:
    """:func:`group_totals` by counting float16 bit patterns, or None where it does not apply.

    Applies to finite float64 scores that are all float16 numbers (checked on the first
    rows, then on all), with float64 or int64 weights and at least ``_HALF_MIN_ROWS``
    rows: a ``bincount`` over the 65,536 patterns replaces the sort (each group's float
    weights summed as :func:`_bin_sums` sums them).
    """
    n = uncertainty.size
    if (n < _HALF_MIN_ROWS or uncertainty.dtype != np.float64 or uncertainty.ndim != 1
            or any(w.dtype not in (np.float64, np.int64) for w in weights)):
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float16: inf, so refused
        if not np.array_equal(uncertainty[:1024].astype(np.float16), uncertainty[:1024]):
            return None
        half = uncertainty.astype(np.float16)
        if not np.array_equal(half, uncertainty):
            return None
    idx = half.view(np.uint16).astype(np.intp)
    del half
    idx[idx == 0x8000] = 0  # -0.0 is the group of 0.0: its rows summed in row order with it
    size = 1 << 16
    counts = np.bincount(idx, minlength=size)
    sums = [_bin_sums(idx, w, size) for w in weights]
    keep = _HALF_ORDER[counts[_HALF_ORDER] > 0]
    totals = [s[keep] if w.dtype == np.float64 else s[keep].astype(np.int64)
              for s, w in zip(sums, weights, strict=True)]
    return _HALF_VALUES[keep], counts[keep].astype(np.int64), totals


def _bin_sums(idx: NDArray[np.intp], w: NDArray[Any], size: int) -> NDArray[Any]:
    """``np.bincount(idx, weights=w, minlength=size)``, each bin's float sum nearly
    correctly rounded: ``w`` is split into a part on a grid of ``u`` (a power of two so
    coarse that ``n`` of them sum exactly, in any order) and the rest (below ``u / 2``
    each, whose sum's round-off is about ``n^2 eps^2`` of the largest weight)."""
    top = float(np.max(np.abs(w))) if w.dtype == np.float64 and w.size else 0.0
    # n multiples of u, each at most top + u / 2 in magnitude, sum below 2**52 units; no
    # grid for integer, zero or non-finite weights, nor near the subnormals (u underflows)
    u = (math.ldexp(1.0, math.frexp(top)[1] + math.frexp(float(w.size))[1] + 1 - 52)
         if 0.0 < top < math.inf else 0.0)
    if u < sys.float_info.min:
        return np.bincount(idx, weights=w, minlength=size)
    head = np.round(w / u) * u
    rest = w - head  # exact: w rounded to a coarser grid differs from it by its own ulps
    return (np.bincount(idx, weights=head, minlength=size)
            + np.bincount(idx, weights=rest, minlength=size))


# Below this many rows a sort is as fast as the bins of :func:`binned_totals`.
_BINNED_MIN_ROWS = 1 << 14
# Most bins of :func:`binned_totals` (tables of 8 bytes per bin).
_BINNED_MAX = 1 << 22


def binned_totals(
    uncertainty: NDArray[Any], weights: tuple[NDArray[Any], ...]
) -> tuple[NDArray[np.float64], NDArray[np.int64], list[NDArray[Any]]] | None:
    """:func:`group_totals` of heavily tied scores by counting, or None where it does not apply.

    Applies to finite float64 scores of at least ``_BINNED_MIN_ROWS`` rows of which 1,024
    spread over the input hold at most 3/4 distinct values (many ties: scores rounded to a
    grid, quantised, whole numbers), with float64 or int64 weights. The span of the scores
    is cut into equal bins, four per smallest gap between those rows' distinct values
    (at most ``_BINNED_MAX`` and ``4 n``); a row's bin is
    ``floor((s - min) * (bins - 1) / span)``, which never decreases as the score grows.
    Where every bin holds one value (checked on every row: a value read back per bin
    equals each row's), the bins in use are the tie groups in ascending order, and
    ``bincount`` gives the counts and each group's weights (:func:`_bin_sums`), as
    :func:`half_totals` does: O(n), no sort. Where two distinct values share a bin (a
    gap smaller than those rows show), None: the sort path then.
    """
    n = uncertainty.size
    if (n < _BINNED_MIN_ROWS or uncertainty.dtype != np.float64 or uncertainty.ndim != 1
            or any(w.dtype not in (np.float64, np.int64) or w.shape != (n,) for w in weights)):
        return None
    head = np.sort(uncertainty[::n // 1024][:1024])  # rows spread over the input
    step = head[1:] != head[:-1]
    if 4 * np.count_nonzero(step) >= 3 * head.size:
        return None  # few ties among these rows: the sort path
    lo, hi = float(uncertainty.min()), float(uncertainty.max())
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        distinct = head[np.concatenate(([True], step))]
        gap = float(np.min(np.diff(distinct))) if distinct.size > 1 else hi - lo
        bins = 4.0 * (hi - lo) / gap + 2.0 if gap > 0 else 1.0
        if not bins <= min(_BINNED_MAX, 4 * n):
            return None  # the span beyond float64, or too many bins for the gap
        size = int(bins)
        scale = (size - 1) / (hi - lo) if hi > lo else 0.0
    if not math.isfinite(scale):
        return None  # a span below the resolution of float64
    x = uncertainty - lo
    x *= scale  # in [0, size - 1] up to rounding; size + 1 bins leave room for it
    idx = x.astype(np.intp)
    del x
    value = np.zeros(size + 1)
    value[idx] = uncertainty  # one row's value per bin (which row does not matter)
    if not np.array_equal(value[idx], uncertainty):  # -0.0 equals +0.0 here
        return None  # two values in one bin
    counts = np.bincount(idx, minlength=size + 1)
    keep = np.flatnonzero(counts)
    totals = [_bin_sums(idx, w, size + 1)[keep] for w in weights]
    totals = [t if w.dtype == np.float64 else t.astype(np.int64)
              for t, w in zip(totals, weights, strict=True)]
    return value[keep] + 0.0, counts[keep].astype(np.int64), totals
