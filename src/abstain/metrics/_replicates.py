"""The metrics of one score column on many bootstrap resamples at once.

A resample is a count per row; the score table of ``m`` resamples is one ``(m, G)`` array
per total over the rows' ``G`` distinct scores (:meth:`abstain.tables.TableResampler.totals`,
one ``bincount``), a group no row of a resample drew holding zeros. Every metric below is the
formula its function applies to a table, written on those arrays along their last axis: a
pass per total for all the resamples, not a table and a call per resample. A group of no
rows adds nothing (a knot equal to the one before it), so each value is that of the
resample's own table: equal wherever the formula is a count (AUROC, FPR at TPR, the risk at
TPR/FPR with 0/1 losses), else to the rounding of a sum taken over more terms (a relative
1e-15 or so; the tests allow 1e-12).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._core.arrays import unmasked
from .._core.base import quiet
from .._core.exact import sum_round_off
from .._core.groups import coverage_count
from .._core.prefix import harmonic_difference, tie_excess
from .._core.validation import check_int
from .._ood_search.best import Constraint
from .._ood_search.search import GridOrders, grid_best
from ..exceptions import InfeasibleTargetWarning
from ..tables import ResampleTotals, TableResampler
from ._ood import aupr_in, aupr_out, auroc, fpr_at_tpr, oscr, selective_risk_at_tpr_fpr
from ._registry import check_options
from ._selective import augrc, aurc, e_aurc, selective_risk_at_coverage

if TYPE_CHECKING:
    from ._registry import MetricSpec

F64 = NDArray[np.float64]

__all__ = ["metric_replicates", "resample_counts"]


def _running(w: F64) -> F64:
    """Running sums along the last axis after a leading 0: shape (m, G + 1)."""
    out = np.zeros((w.shape[0], w.shape[1] + 1))
    np.cumsum(w, axis=1, out=out[:, 1:])
    return out


def _prefix_areas(counts: F64, sums: F64) -> tuple[F64, F64]:
    """:func:`~abstain._core.prefix.expected_prefix_areas` of each row: ``(sum_i E[L(i)] /
    i, sum_i E[L(i)])`` under the ``"mean"`` tie rule, a group of no rows adding 0 (and
    no harmonic difference evaluated for it, nor for a group of one row)."""
    through = np.cumsum(sums, axis=1)
    before = _running(counts)[:, :-1]
    prior = np.zeros_like(through)
    prior[:, 1:] = through[:, :-1]
    plain = counts * prior + sums * ((counts + 1.0) / 2.0)
    inverse = through / (before + 1.0)
    inverse[counts == 0.0] = 0.0
    many = np.flatnonzero((counts > 1.0).reshape(-1))
    if many.size:
        b, m = before.reshape(-1)[many], counts.reshape(-1)[many]
        dh = harmonic_difference(b, m)
        inverse.reshape(-1)[many] = (prior.reshape(-1)[many] * dh
                                     + (sums.reshape(-1)[many] / m) * tie_excess(b, m, dh))
    return inverse.sum(axis=1), plain.sum(axis=1)


class _Block:
    """The totals of a block of resamples, with what several metrics share computed once."""

    def __init__(self, totals: ResampleTotals) -> None:
        self.t = totals
        self.n_id = totals.id_rows.sum(axis=1)
        self.n_ood = totals.ood_rows.sum(axis=1)
        self._areas: tuple[F64, F64] | None = None
        self._runs: dict[str, F64] = {}

    @property
    def areas(self) -> tuple[F64, F64]:
        if self._areas is None:
            self._areas = _prefix_areas(self.t.id_rows, self.t.loss_sums)
        return self._areas

    def run(self, name: str) -> F64:
        """The running sums of the totals ``name`` (``"id_rows"``, ...)."""
        if name not in self._runs:
            self._runs[name] = _running(getattr(self.t, name))
        return self._runs[name]


def _aurc(b: _Block) -> F64:
    return b.areas[0] / b.n_id


def _augrc(b: _Block) -> F64:
    return b.areas[1] / b.n_id / b.n_id


def _e_aurc(b: _Block) -> F64:
    t = b.t
    oracle, _ = _prefix_areas(t.loss_counts, t.loss_values * t.loss_counts)
    area = b.areas[0] / b.n_id
    excess = area - oracle / b.n_id
    # within the round-off of the two sums: none, as e_aurc takes it
    return np.where(excess > sum_round_off(b.n_id) * area, excess, 0.0)


def _risk_at_coverage(b: _Block, coverage: float) -> F64:
    """The risk of the rule accepting ``coverage`` of the ID rows, per resample, as
    ``TieGroups.risk_of`` gives it: the group reached first (groups of no rows repeat the
    knot before them, which ``searchsorted`` passes), its share ``nu``, and the loss and
    count accepted each from ``nu`` (part of the first group: its mean)."""
    x, y = b.run("id_rows"), b.run("loss_sums")
    counts, sums = b.t.id_rows, b.t.loss_sums
    out = np.empty(x.shape[0])
    for r in range(x.shape[0]):
        at = coverage_count(coverage, float(x[r, -1]))
        j = int(np.searchsorted(x[r, 1:], at, side="left"))  # the group of knot j + 1
        c, before = float(counts[r, j]), float(x[r, j])
        nu = min(max((at - before) / c, 0.0), 1.0)
        if nu >= 1.0 or before == 0.0:
            out[r] = float(y[r, j + 1] / x[r, j + 1])
        else:
            out[r] = float((y[r, j] + nu * sums[r, j]) / (before + c * nu))
    return out


def _auroc(b: _Block) -> F64:
    run = b.run("id_rows")
    twice = run[:, :-1] + run[:, 1:]
    twice *= b.t.ood_rows
    return twice.sum(axis=1) / 2.0 / (b.n_id * b.n_ood)


def _average_precision(pos: F64, neg: F64) -> F64:
    tp, fp = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)
    total = tp[:, -1].copy()
    fp += tp
    term = np.divide(pos * tp, fp, out=np.zeros_like(tp), where=pos > 0)
    return term.sum(axis=1) / total


def _aupr_in(b: _Block) -> F64:
    return _average_precision(b.t.id_rows, b.t.ood_rows)


def _aupr_out(b: _Block) -> F64:
    return _average_precision(b.t.ood_rows[:, ::-1], b.t.id_rows[:, ::-1])


def _fpr_at_tpr(b: _Block, tpr: float) -> F64:
    """:func:`~abstain._ood_search.search.least_fpr_rows` on each resample's knots."""
    i, o = b.run("id_rows"), b.run("ood_rows")
    n_id, n_ood = i[:, -1:], o[:, -1:]
    x = i / n_id
    below = np.count_nonzero(x < tpr * (1 - 1e-12), axis=1)
    j = np.minimum(below, x.shape[1] - 1)[:, None]
    prev = np.maximum(j - 1, 0)
    take = lambda a: np.take_along_axis(a, j, axis=1)[:, 0]  # noqa: E731
    before = lambda a: np.take_along_axis(a, prev, axis=1)[:, 0]  # noqa: E731
    y0, y1 = before(o) / n_ood[:, 0], take(o) / n_ood[:, 0]
    xj, xp = take(x), before(x)
    at_knot = (xj <= tpr) | (j[:, 0] == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = y0 + (tpr - xp) / (xj - xp) * (y1 - y0)
    return np.where(at_knot, y1, inside)


def _oscr(b: _Block) -> F64:
    t = b.t
    x = b.run("ood_rows") / b.n_ood[:, None]
    y = _running(t.id_rows - t.loss_sums) / b.n_id[:, None]
    return (np.diff(x, axis=1) * (y[:, 1:] + y[:, :-1]) / 2).sum(axis=1)


def _risk_at_tpr_fpr(b: _Block, tpr: float, fpr: float) -> F64:
    """The least risk under TPR >= ``tpr``, FPR <= ``fpr`` of each resample: the grid search
    of one direction, each resample a row of it (the resamples share their ID and OOD
    totals, so one constraint serves all); NaN where infeasible."""
    t = b.t
    m, g = t.id_rows.shape
    n_id, n_ood = b.n_id, b.n_ood
    out = np.full(m, np.nan)
    if not (np.all(n_id == n_id[0]) and np.all(n_ood == n_ood[0])):
        for r in range(m):
            one = _Block(ResampleTotals(t.values, t.id_rows[r : r + 1], t.ood_rows[r : r + 1],
                                        t.loss_sums[r : r + 1], t.loss_values,
                                        t.loss_counts[r : r + 1]))
            out[r] = _risk_at_tpr_fpr(one, tpr, fpr)[0]
        return out
    a, o = float(n_id[0]), float(n_ood[0])
    orders = GridOrders(np.broadcast_to(np.arange(g), (m, g)),
                        np.broadcast_to(t.values, (m, g)), np.ones((m, max(g - 1, 0)), dtype=bool))
    cum = [b.run("id_rows"), b.run("ood_rows"), b.run("loss_sums")]
    for r, found in enumerate(grid_best(orders, cum, Constraint(tpr * a, fpr * o, 0.0), None,
                                        a, o)):
        if found is not None:
            best = found[0]
            out[r] = best.L / best.I if best.I > 0 else math.nan
    return out


#: The metrics computed on many resamples at once, by function, each taking the block and
#: the metric's options.
BATCHED: Mapping[Callable[..., Any], Callable[..., F64]] = {
    aurc: lambda b, ties="mean": _aurc(b),
    e_aurc: lambda b, ties="mean": _e_aurc(b),
    augrc: lambda b, ties="mean": _augrc(b),
    selective_risk_at_coverage: lambda b, coverage: _risk_at_coverage(b, coverage),
    auroc: lambda b, **_: _auroc(b),
    aupr_in: lambda b, **_: _aupr_in(b),
    aupr_out: lambda b, **_: _aupr_out(b),
    fpr_at_tpr: lambda b, tpr, **_: _fpr_at_tpr(b, tpr),
    oscr: lambda b, **_: _oscr(b),
    selective_risk_at_tpr_fpr: lambda b, tpr, fpr, **_: _risk_at_tpr_fpr(b, tpr, fpr),
}


#: The batched metrics whose value is in the units of the loss: computed on totals in units
#: of the resampler's ``scale``, then multiplied by it (a power of two: exact).
_IN_LOSS_UNITS = (aurc, e_aurc, augrc, selective_risk_at_coverage, selective_risk_at_tpr_fpr)


def resample_counts(rows: NDArray[np.integer], n: int) -> NDArray[np.int64]:
    """How often each of ``n`` rows is drawn by each resample of ``rows``, shape (m, k) of
    row indices (a block of :func:`bootstrap_indices`): shape (m, n).

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import resample_counts
    >>> resample_counts(np.array([[0, 0, 2], [1, 2, 2]]), 3)
    array([[2, 0, 1],
           [0, 1, 2]])
    """
    idx = np.asarray(unmasked(rows, "rows"))
    size = check_int("n", n, 0)
    if idx.ndim != 2 or idx.dtype.kind not in "iu" or (idx.size and (
            idx.min() < 0 or idx.max() >= size)):
        raise ValueError(f"rows must be a 2-D array of row indices in [0, {size}); got shape "
                         f"{idx.shape}, dtype {idx.dtype}.")
    m = idx.shape[0]
    # in intp: int64 with uint64 indices would promote to float64
    flat = (np.arange(m)[:, None] * size + idx.astype(np.intp)).reshape(-1)
    return np.bincount(flat, minlength=m * size).reshape(m, size)


def metric_replicates(resampler: TableResampler, counts: NDArray[np.integer],
                      metrics: Sequence[tuple[MetricSpec, Mapping[str, Any]]]) -> F64:
    """Each metric of one score column on ``m`` resamples at once.

    ``counts`` (shape (m, n)) says how often each resample draws each row of
    ``resampler`` (:func:`resample_counts`); ``metrics`` lists registry entries
    (:data:`METRICS`) with their options (``{"coverage": 0.8}``, ``{"tpr": 0.95}``...). A
    selective metric takes each resample's ID rows, an OOD metric its marked rows (the
    resampler built with ``is_ood``). The library's metrics (AuRC, E-AuRC, AUGRC, the risk
    at a coverage, AUROC, AUPR-In, AUPR-Out, FPR at TPR, OSCR, the risk at TPR/FPR) are
    computed on the resamples' totals (:meth:`~abstain.tables.TableResampler.totals`) with
    their table formulas along the resamples: the values of
    ``metric(resampler.table(counts[r]))``, equal for counts and whole-number totals
    (AUROC, FPR at TPR, the risks at a coverage and at TPR/FPR with 0/1 losses) and to a
    relative 1e-12 otherwise (sums over more terms, in another order); E-AuRC, a
    difference of two areas, to 1e-12 of the AuRC (1e-17 where the table's is 0). Any other metric
    is called on each resample's table. An infeasible target gives NaN, without a warning
    of the library's (a registered metric's own warnings are its own).

    Returns
    -------
    ndarray of shape (m, len(metrics))

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import METRICS, aurc, metric_replicates, resample_counts
    >>> from abstain.tables import TableResampler
    >>> rng = np.random.default_rng(0)
    >>> u, losses = rng.random(50), (rng.random(50) < 0.3) * 1.0
    >>> r = TableResampler(u, losses)
    >>> counts = resample_counts(rng.integers(0, 50, (4, 50)), 50)
    >>> got = metric_replicates(r, counts, [(METRICS["aurc"], {})])
    >>> got.shape, bool(np.isclose(got[2, 0], aurc(r.table(counts[2])), rtol=1e-12))
    ((4, 1), True)
    """
    c = np.asarray(unmasked(counts, "counts"))
    curve = next((spec.name for spec, _ in metrics if spec.higher_is_better is None), None)
    if curve is not None:
        raise ValueError(f"metrics must each give one number to resample; {curve!r} gives a "
                         "curve.")
    if not resampler.marked and any(spec.kind == "ood" for spec, _ in metrics):
        raise ValueError("the OOD metrics take a TableResampler built with is_ood; this one "
                         "has no OOD marks.")
    totals = resampler.totals(c)
    block = _Block(totals)
    ood_metric = any(spec.kind == "ood" for spec, _ in metrics)
    empty = np.flatnonzero((block.n_id == 0) | ((block.n_ood == 0) & ood_metric))
    if empty.size:
        what = "both ID and OOD rows" if ood_metric else "an ID row"
        raise ValueError(f"every resample must draw {what} for these metrics; resample "
                         f"{int(empty[0])} (row {int(empty[0])} of counts) does not.")
    if any(spec.function is oscr for spec, _ in metrics) and np.any(
            (totals.loss_values > 1.0) & (totals.loss_counts > 0).any(axis=0)):
        raise ValueError("losses must be in [0, 1] on ID rows for the correct classification "
                         "rate; got a larger value.")
    out = np.empty((c.shape[0], len(metrics)))
    for j, (spec, options) in enumerate(metrics):
        fast = BATCHED.get(spec.function)
        if fast is not None:
            # the options checked as the metric checks them (ties, a coverage outside its
            # range...), as StreamingMetric checks them
            check_options(spec.name, spec.function, spec.kind == "ood", options)
            # a NumPy float32 option as the metric takes it (a float), not float32 counts
            plain = {k: float(v) if isinstance(v, np.floating) or (
                isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind == "f") else v
                for k, v in options.items()}
            with np.errstate(divide="ignore", invalid="ignore"):
                out[:, j] = fast(block, **plain)
            if spec.function in _IN_LOSS_UNITS and resampler.scale != 1.0:
                with np.errstate(over="ignore"):  # a value beyond float64 is inf
                    out[:, j] *= resampler.scale
            continue
        marked = spec.kind == "ood"
        with quiet(InfeasibleTargetWarning):
            for r in range(c.shape[0]):
                out[r, j] = spec.function(resampler.table(c[r], marked=marked), **options)
    return out
