"""One-column OOD metric kernels: from a sample's tie groups (one row per distinct score,
ascending) or, where every score is distinct, from the rows' marks in score order (the
same floats, with no per-group arrays)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .._ood_search import search as core
from .._ood_search.sample import Sample
from .._ood_search.search import F64


def one_column(sample: Sample) -> F64:
    """The one score column of a sample (its tie groups' values, ascending); a ValueError
    naming the metrics of a pair where it holds two."""
    if sample.s.shape[1] != 1:
        raise ValueError(f"scores must be one column for this metric; got {sample.s.shape[1]} "
                         "(a PairTable holds two; the metrics of a pair are auroc, oscr, "
                         "ood_roc_curve, ood_pr_curve, fpr_at_tpr, tnr_at_tpr, "
                         "detection_rate_at_false_alarm and the selective risks).")
    return sample.s[:, 0]


def column_auroc(sample: Sample) -> float:
    """The trapezoid area under a one-column ROC curve, as one sum over the tie groups:
    ``sum_g o_g (I_g + i_g / 2) / (n_ID n_OOD)`` with ``i_g``, ``o_g`` a group's ID and OOD
    mass and ``I_g`` the ID mass below it. With counts (no sample weights) every term and
    partial sum is a whole or half number below 2**53 up to about 9e7 rows, so the area is
    the exact fraction, rounded once."""
    one_column(sample)  # its rows are the tie groups, ascending
    run = core.running_sums(sample.w_id)
    twice = run[:-1] + run[1:]  # 2 I_g + i_g
    twice *= sample.w_ood
    return float(np.sum(twice)) / 2.0 / (sample.n_id * sample.n_ood)


def column_running_sums(sample: Sample) -> tuple[F64, F64]:
    """The running ID and OOD masses (leading 0 included) of a one-column sample, whose rows
    are its tie groups already (ascending)."""
    one_column(sample)
    return core.running_sums(sample.w_id), core.running_sums(sample.w_ood)


def average_precision(pos: F64, neg: F64) -> float:
    """Step-wise average precision of tie groups accepted in the order given; ``pos`` and
    ``neg`` are the positive and negative mass of each group. The sum runs over the groups
    with positive mass alone, in order (the terms :func:`marks_average_precision` sums)."""
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    total = float(tp[-1])
    fp += tp  # accepted mass
    some = np.flatnonzero(pos)
    terms = np.take(pos, some)
    terms *= np.take(tp, some)
    terms /= np.take(fp, some)  # each group's positive mass times its precision
    return float(np.sum(terms)) / total


def marks_auroc(ood: NDArray[np.bool_]) -> float:
    """:func:`column_auroc` where every group is one row (``ood``: the marks in ascending
    order of score): each OOD row has its position less the OOD rows before it of ID rows
    below, so the sum is an integer and the area the same float."""
    pos = np.flatnonzero(ood)
    n_ood = pos.size
    u = int(np.sum(pos, dtype=np.int64)) - n_ood * (n_ood - 1) // 2
    return float(2 * u) / 2.0 / (float(ood.size - n_ood) * float(n_ood))


def marks_average_precision(positive: NDArray[np.bool_]) -> float:
    """:func:`average_precision` where every group is one row (``positive``: the marks in
    the order accepted): the ``k``-th positive row at position ``p`` adds ``k / (p + 1)``,
    the same terms in the same order, so the same float."""
    where = np.flatnonzero(positive)
    terms = where.view(np.float64)
    np.add(where, 1.0, out=terms)  # in the buffer of the positions
    np.divide(np.arange(1.0, where.size + 1.0), terms, out=terms)
    return float(np.sum(terms)) / float(where.size)


def marks_least_fpr(ood: NDArray[np.bool_], tpr: float) -> float:
    """``core.least_fpr`` where every group is one row (``ood``: the marks in ascending
    order of score). The first knot at the target follows the ``m``-th ID row, ``m`` the
    least count with ``m / n_ID`` not below the target as ``least_fpr`` compares it; no
    OOD row lies between that knot and the one before, so the FPR is the OOD rows below
    the ``m``-th ID row over ``n_OOD``, at the knot and inside the segment alike."""
    n_ood = int(np.count_nonzero(ood))
    n_id = float(ood.size - n_ood)
    t = tpr * (1 - 1e-12)
    m = min(max(math.ceil(t * n_id), 1), int(n_id))
    while m > 1 and not (m - 1) / n_id < t:
        m -= 1
    while m / n_id < t:
        m += 1
    row = int(np.flatnonzero(~ood)[m - 1])  # the m-th ID row
    return float(row + 1 - m) / float(n_ood)
