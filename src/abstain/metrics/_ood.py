"""Metrics for selective classifiers that also reject OOD inputs.

Re-exported by :mod:`abstain.metrics`.

Conventions: ``is_ood`` marks OOD rows (True / 1); ``losses`` are the classifier's
losses on ID rows (entries of OOD rows are ignored and may be NaN, as the file format
writes them; NaN on an ID row and inf anywhere are refused); a higher score is more
uncertain / more OOD and is rejected first. A selector accepts the lowest scores.
ID rows are the positive class of TPR, FPR, precision and recall (TPR = fraction
of ID accepted, FPR = fraction of OOD accepted), as in Franc, Prusa and Paplham
(2023); where a metric names OOD as positive (AUPR-Out, detection rate) it says so.

Tie rule (one for every function): rows are sorted by score and cut into groups
of equal score; a rule accepts every group below its threshold and the group at
the threshold with one probability, so curves are piecewise linear between the
per-group points (a tie counts one half in AUROC, the trapezoid), and a value
"at" a target rate is the expectation of the randomised rule that meets the rate
exactly. Every metric of one score column takes a :class:`~abstain.ScoreTable` built with
``is_ood`` in place of its arrays (as ``is_ood`` where the OOD marks come first, as
``losses`` where the losses do, the other arrays omitted) and returns what it returns on
the rows. The proposed metrics, ``auroc``, ``oscr`` and the FPR / TNR / detection rate at
a target take one score column or two (a double-score method; every direction with
``search="exact"``, the paper's grid with ``search="grid"``, and by default
``search="auto"``: exact up to ``AUTO_EXACT_ROWS`` (2,000) rows, above them the grid of
the columns divided by their standard deviations, so that the default does not change when
a column is multiplied by a positive constant). On two columns, AUROC, OSCR,
the ROC curve and the rates at a target are those of the *envelope*: at each FPR (or TPR)
the best direction for it, an oracle over directions rather than one fitted rule; every
direction's curve follows the tie rule above, a group of pairs tied at a direction
included.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import warn
from .._core.validation import (
    Interval,
    as_real_array,
    check_choice,
    check_fraction,
    plain,
    validate_params,
)
from .._ood_search import envelope as env
from .._ood_search import search as core
from .._ood_search.grid import (
    direction_knots,
    envelopes_fpr_and_rule,
    envelopes_on_grid,
    least_fpr_on_grid,
    least_risk_at_fpr_on_grid,
)
from .._ood_search.sample import (
    N_DIRECTIONS,
    NO_LOSSES,
    PAIR_SEARCH,
    Found,
    Sample,
    as_score_matrix,
    check_directions,
    ood_fraction,
    precision_recall_constraint,
    resolve_search,
    row_groups,
    tpr_fpr_constraint,
)
from ..exceptions import InfeasibleTargetWarning
from ..tables._pair import PairTable
from ..tables._score import ScoreTable, refuse_binned, table_or_none
from ._columns import (
    average_precision,
    column_auroc,
    column_running_sums,
    marks_auroc,
    marks_average_precision,
    marks_least_fpr,
    one_column,
)

__all__ = [
    "ROCCurve",
    "PRCurve",
    "RiskTPRCurve",
    "selective_risk_at_tpr_fpr",
    "selective_risk_at_precision_recall",
    "risk_coverage_curve_at_fpr",
    "ood_roc_curve",
    "ood_pr_curve",
    "auroc",
    "aupr_in",
    "aupr_out",
    "fpr_at_tpr",
    "tnr_at_tpr",
    "oscr",
    "ccr_at_fpr",
    "detection_rate_at_false_alarm",
]

F64 = NDArray[np.float64]


class ROCCurve(NamedTuple):
    """ROC points. At bounds (``ood_roc_curve(..., fpr=)``, and for two scores)
    ``tpr[j]`` is the largest TPR at FPR ``<= fpr[j]``; for one score without bounds, the
    knots of its threshold rules in order from (0, 0) to (1, 1), joined linearly (two
    knots may share an FPR: the first of them is not the largest TPR there)."""

    fpr: F64
    tpr: F64


class PRCurve(NamedTuple):
    """PR points: ``precision[j]`` is the largest precision at recall ``>= recall[j]``."""

    recall: F64
    precision: F64


class RiskTPRCurve(NamedTuple):
    """Risk-coverage curve at an FPR bound: ``risk[j]`` is the least selective risk at
    TPR ``>= tpr[j]`` and FPR ``<= fpr`` (NaN where no rule meets both)."""

    tpr: F64
    risk: F64


def _sample(is_ood: Any, scores: Any, losses: Any = NO_LOSSES) -> Sample:
    """The sample of the arrays, or of a ScoreTable or PairTable given as ``is_ood`` (the
    metrics that take the OOD marks first) or as ``losses`` (those that take the losses
    first)."""
    no_losses = losses is NO_LOSSES  # the metrics of the OOD marks alone (auroc, ...)
    refuse_binned(is_ood, losses)
    if isinstance(losses, (ScoreTable, PairTable)):
        first, rest = losses, {"is_ood": is_ood, "scores": scores}
    elif isinstance(is_ood, (ScoreTable, PairTable)):
        first, rest = is_ood, {"scores": scores, "losses": None if no_losses else losses}
    else:
        first = None
    if isinstance(first, PairTable):
        return Sample.from_pairs(first, rest)
    if first is not None:
        return Sample.from_table(table_or_none(first, rest))  # type: ignore[arg-type]
    return Sample.of_rows(scores, is_ood, losses, None)  # a None among them is refused


def _sample_or_marks(is_ood: Any, scores: Any) -> Sample | NDArray[np.bool_]:
    """``_sample(is_ood, scores)``; or, for one score column of at least
    ``min_rows_of_code_groups()`` rows whose scores are all distinct (every tie group one
    row), the rows' OOD marks in ascending order of score: the one-column metrics then
    read positions in the marks (exact integers) instead of running masses per group."""
    if scores is None or isinstance(is_ood, (ScoreTable, PairTable)):
        return _sample(is_ood, scores)
    g = row_groups(scores, is_ood, NO_LOSSES)
    if g is None:  # what Sample.of_rows does next: its own grouping was just tried
        return Sample.of_validated(scores, is_ood, NO_LOSSES, None)
    codes = g.singleton_codes()
    return Sample.of_groups(g) if codes is None else codes.view(np.bool_)


def _pair_search(held: Any, search: Any, n_directions: Any) -> tuple[Any, str, int]:
    """Check ``search`` (one of :data:`PAIR_SEARCH`) and ``n_directions`` of a metric of one
    or two score columns; ``held`` is the argument holding the scores (the scores, or a table
    given in their place). Return ``(held, search, n_directions)`` with ``"auto"`` resolved
    by :func:`~abstain._ood_search.sample.resolve_search`: ``"exact"`` up to
    :data:`AUTO_EXACT_ROWS` rows, above them ``"grid"`` on the columns divided by their
    standard deviations over the rows."""
    search = check_choice("search", search, PAIR_SEARCH)
    n_directions = check_directions(n_directions)
    if search != "auto":
        return held, search, n_directions
    if held is not None and not isinstance(held, (ScoreTable, PairTable)):
        held = as_real_array(held, "scores")  # a ragged or non-finite pair fails here, as
        if held.ndim == 2:  # the metric's own check says, before its spread is computed
            held = as_score_matrix(held)
    how, columns, keyword = resolve_search(held, "auto")
    if how is None:  # one score column: no direction to search
        return held, "grid", n_directions
    return columns, keyword, n_directions  # type: ignore[return-value]


def _pair_args(is_ood: Any, scores: Any, search: Any,
               n_directions: Any) -> tuple[Any, Any, str, int]:
    """:func:`_pair_search` for the metrics that take the OOD marks first (a table given
    as ``is_ood``): ``(is_ood, scores, search, n_directions)``."""
    if isinstance(is_ood, PairTable):
        is_ood, search, n_directions = _pair_search(is_ood, search, n_directions)
    else:
        scores, search, n_directions = _pair_search(scores, search, n_directions)
    return is_ood, scores, search, n_directions


def _losses_pair_args(losses: Any, scores: Any, search: Any,
                      n_directions: Any) -> tuple[Any, Any, str, int]:
    """:func:`_pair_search` for the metrics that take the losses first (a table given as
    ``losses``): ``(losses, scores, search, n_directions)``."""
    if isinstance(losses, PairTable):
        losses, search, n_directions = _pair_search(losses, search, n_directions)
    else:
        scores, search, n_directions = _pair_search(scores, search, n_directions)
    return losses, scores, search, n_directions


def _risk_of(found: Found | None) -> float:
    """Selective risk ``L / I`` of the rule ``found`` (of ``Sample.run``: the best under a
    constraint); NaN with a warning if None."""
    if found is None:
        warn("the target is infeasible (the paper's 'unable'); returning NaN.",
             InfeasibleTargetWarning, stacklevel=None)
        return math.nan
    best = found[0]
    return best.L / best.I if best.I > 0 else math.nan


@validate_params({"tpr": [Interval(float, 0, 1, closed="right")],
                  "fpr": [Interval(float, 0, 1, closed="both")]})
def selective_risk_at_tpr_fpr(
    losses: ArrayLike | ScoreTable | PairTable, is_ood: ArrayLike | None = None,
    scores: ArrayLike | None = None, tpr: float | None = None, fpr: float | None = None, *,
    search: str = "auto", n_directions: int = N_DIRECTIONS,
) -> float:
    """Least selective risk at TPR >= ``tpr`` and FPR <= ``fpr``: the metric of problem (13).

    The risk of :class:`abstain.models.BoundedTPRFPR` fitted on the same data with the
    same search (see its tie rule; the model's own default is the paper's grid, this
    metric's the unit-free ``"auto"``). An infeasible target returns NaN with an
    :class:`~abstain.InfeasibleTargetWarning` (the paper's "unable").

    Parameters
    ----------
    losses : array-like of shape (n,)
    is_ood : array-like of shape (n,)
    scores : array-like of shape (n,) or (n, 2)
    tpr : float in (0, 1]
    fpr : float in [0, 1]
    search : {"auto", "exact", "grid"}, default "auto"
        Direction search for two score columns (ignored for one): ``"auto"`` is
        ``"exact"`` up to ``AUTO_EXACT_ROWS`` (2,000) rows and, above, ``"grid"`` on the
        columns divided by their standard deviations over the rows, so that a positive
        rescaling of a column leaves the value unchanged, as for :func:`auroc`.
    n_directions : int, default 360
        The grid's number of directions.

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain.metrics import selective_risk_at_tpr_fpr
    >>> round(selective_risk_at_tpr_fpr([0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 1, 1],
    ...                                 [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], tpr=0.6, fpr=0.0), 4)
    0.4444
    """
    t, f = float(tpr), float(fpr)  # type: ignore[arg-type]
    losses, scores, search, d = _losses_pair_args(losses, scores, search, n_directions)
    sample = _sample(is_ood, scores, losses)
    return _risk_of(sample.run(search, d, tpr_fpr_constraint(sample, t, f), None))


@validate_params({"precision": [Interval(float, 0, 1, closed="right")],
                  "recall": [Interval(float, 0, 1, closed="right")],
                  "ood_prior": [Interval(float, 0, 1, closed="neither"), None]})
def selective_risk_at_precision_recall(
    losses: ArrayLike | ScoreTable | PairTable, is_ood: ArrayLike | None = None,
    scores: ArrayLike | None = None, precision: float | None = None,
    recall: float | None = None, *, ood_prior: float | None = None, search: str = "auto",
    n_directions: int = N_DIRECTIONS,
) -> float:
    """Least selective risk at recall >= ``recall`` and precision >= ``precision`` (problem 14).

    The risk of :class:`abstain.models.BoundedPrecisionRecall` on the same data with the
    same search; precision uses ``ood_prior`` (default: the sample's OOD fraction). NaN
    with an :class:`~abstain.InfeasibleTargetWarning` when infeasible. ``search`` and
    ``n_directions`` as for :func:`selective_risk_at_tpr_fpr` (default ``"auto"``,
    unit-free).

    Examples
    --------
    >>> from abstain.metrics import selective_risk_at_precision_recall
    >>> round(selective_risk_at_precision_recall([0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 1, 1],
    ...       [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], precision=0.75, recall=1.0), 4)
    0.3333
    """
    kappa, r = float(precision), float(recall)  # type: ignore[arg-type]
    losses, scores, search, d = _losses_pair_args(losses, scores, search, n_directions)
    sample = _sample(is_ood, scores, losses)
    pi = ood_fraction(sample) if ood_prior is None else float(ood_prior)
    return _risk_of(sample.run(search, d, precision_recall_constraint(sample, kappa, r, pi), None))


@validate_params({"fpr": [Interval(float, 0, 1, closed="both")]})
def risk_coverage_curve_at_fpr(
    losses: ArrayLike | ScoreTable | PairTable, is_ood: ArrayLike | None = None,
    scores: ArrayLike | None = None, fpr: float | None = None, *,
    tpr: ArrayLike | None = None, search: str = "auto", n_directions: int = N_DIRECTIONS,
) -> RiskTPRCurve:
    """Risk-coverage curve at an FPR bound (Figure 1a of the paper's appendix).

    For each TPR (coverage) target, the least selective risk of a rule with TPR at
    least the target and FPR at most ``fpr``: at each target, what
    :func:`selective_risk_at_tpr_fpr` returns with the same ``search``. Tie rule as in the
    module docstring.

    Two score columns: the best rule over the directions ``cos(a) s_r + sin(a) s_g``, each
    target with its own direction (an oracle over directions, as the envelope of
    :func:`auroc`):

    - ``search="grid"``: the ``n_directions`` grid ``k pi / n_directions``.
    - ``search="auto"`` (default): ``"exact"`` up to ``AUTO_EXACT_ROWS`` (2,000) rows,
      above it ``"grid"`` on the columns divided by their standard deviations over the
      rows (unit-free, as for :func:`auroc`).
    - ``search="exact"``: every direction, ``a`` in ``[0, pi]`` as in the exact fits
      (the angle ``pi`` included, unlike the envelope metrics' half-circle). Every rule of
      every direction lies on one segment of an anchor state of the exact search, and the
      risk is monotone along it, so each target's optimum is at a segment's start, its last
      point within the FPR bound, or its point at the target TPR: all of them are
      examined, in O(m^2 log m) for m distinct score pairs. Invariant to a positive
      rescaling of either column that rounds no score (a power of two, say).

    Parameters
    ----------
    losses : array-like of shape (n,), or a ScoreTable or PairTable
        A table (built with ``is_ood``) in place of the three arrays.
    is_ood : array-like of shape (n,)
    scores : array-like of shape (n,) or (n, 2)
    fpr : float in [0, 1]
    tpr : array-like, optional
        TPR targets in (0, 1]; default ``0.01, 0.02, ..., 1``.
    search : {"auto", "exact", "grid"}, default "auto"
    n_directions : int, default 360

    Returns
    -------
    RiskTPRCurve
        ``(tpr, risk)``; risk is NaN where the target is infeasible.

    Examples
    --------
    >>> from abstain.metrics import risk_coverage_curve_at_fpr
    >>> curve = risk_coverage_curve_at_fpr([0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 1, 1],
    ...     [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], fpr=0.0, tpr=[0.3, 0.5, 0.7])
    >>> curve.risk.tolist()
    [0.0, 0.333..., nan]
    """
    losses, scores, search, n_directions = _losses_pair_args(losses, scores, search,
                                                             n_directions)
    b = float(fpr)  # type: ignore[arg-type]
    sample = _sample(is_ood, scores, losses)
    targets = np.linspace(0.01, 1.0, 100) if tpr is None else as_real_array(tpr, "tpr")
    if targets.ndim != 1 or targets.size == 0:
        raise ValueError(f"tpr must be a non-empty 1-D array; got an array of shape "
                         f"{targets.shape}.")
    for t in targets:
        check_fraction("tpr", float(t))
    if search == "exact" and sample.s.shape[1] == 2:
        best = env.least_risk_at_fpr(sample.s, sample.w_id, sample.w_ood, sample.w_loss,
                                     b * sample.n_ood, targets * sample.n_id)
        best[~np.isfinite(best)] = np.nan
        return RiskTPRCurve(targets, best)
    return RiskTPRCurve(targets, least_risk_at_fpr_on_grid(sample, b, targets, n_directions))


def ood_roc_curve(is_ood: ArrayLike | ScoreTable | PairTable, scores: ArrayLike | None = None, *,
                  fpr: ArrayLike | None = None, search: str = "auto",
                  n_directions: int = N_DIRECTIONS) -> ROCCurve:
    """ROC curve of a single- or double-score method: largest TPR at each FPR bound.

    One score: the points of all thresholds (one per tie group, from (0, 0) to
    (1, 1)), joined linearly by the randomised rules. Two scores: for each bound in
    ``fpr`` (default 201 points on [0, 1]) the largest TPR over the directions
    (section 3.2 of the paper): with ``search="exact"`` every direction of the half-circle
    (the envelope of :func:`auroc`), with ``search="grid"`` the ``n_directions`` grid, and
    with ``search="auto"`` (default) exact up to ``AUTO_EXACT_ROWS`` (2,000) rows and the
    grid of the columns divided by their standard deviations above them, as :func:`auroc`.

    Examples
    --------
    >>> from abstain.metrics import ood_roc_curve
    >>> ood_roc_curve([0, 1, 0, 1], [0.1, 0.2, 0.2, 0.4])
    ROCCurve(fpr=array([0. , 0. , 0.5, 1. ]), tpr=array([0. , 0.5, 1. , 1. ]))
    """
    is_ood, scores, search, n_directions = _pair_args(is_ood, scores, search, n_directions)
    sample = _sample(is_ood, scores)
    if sample.s.shape[1] == 1 and fpr is None:
        return _roc_knots(sample)
    grid = np.linspace(0.0, 1.0, 201) if fpr is None else _bounds(fpr, "fpr")
    if search == "exact" and sample.s.shape[1] == 2:
        lines = env.envelope_lines(sample.s, sample.w_ood, sample.w_id)
        return ROCCurve(grid, env.value_at(lines, grid * sample.n_ood) / sample.n_id)
    return ROCCurve(grid, envelopes_on_grid(sample, ("id",), grid, n_directions)[0])


@validate_params({"ood_prior": [Interval(float, 0, 1, closed="neither"), None]})
def ood_pr_curve(is_ood: ArrayLike | ScoreTable | PairTable, scores: ArrayLike | None = None, *,
                 recall: ArrayLike | None = None, ood_prior: float | None = None,
                 search: str = "auto", n_directions: int = N_DIRECTIONS) -> PRCurve:
    """PR curve (ID positive): the largest precision at recall (TPR) >= each bound.

    Precision is ``(1 - pi) TPR / ((1 - pi) TPR + pi FPR)`` with ``pi = ood_prior``
    (default the sample's OOD fraction). Along a segment of a randomised rule the
    precision is monotone, so its maximum at recall >= r is at the point with recall
    r or at a later tie-group point. Bounds default to 100 points on (0, 1]. Two
    scores: the largest over the directions, the ``n_directions`` grid (``search="grid"``)
    or, with ``search="exact"``, every direction of the half-circle (read off the ROC
    envelope of :func:`ood_roc_curve`: at each FPR its TPR is the largest, so its points
    hold the best precision); ``search="auto"`` (default) is exact up to
    ``AUTO_EXACT_ROWS`` (2,000) rows and the grid of the columns divided by their
    standard deviations above (unit-free, as for :func:`auroc`).

    Examples
    --------
    >>> from abstain.metrics import ood_pr_curve
    >>> ood_pr_curve([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], recall=[0.5, 1.0]).precision.tolist()
    [1.0, 0.666...]
    """
    is_ood, scores, search, n_directions = _pair_args(is_ood, scores, search, n_directions)
    sample = _sample(is_ood, scores)
    pi = ood_fraction(sample) if ood_prior is None else float(ood_prior)
    grid = (np.linspace(0.01, 1.0, 100) if recall is None
            else _bounds(recall, "recall", open_low=True))
    best = np.zeros(grid.size)
    if search == "exact" and sample.s.shape[1] == 2:
        lines = env.envelope_lines(sample.s, sample.w_ood, sample.w_id)
        for j, r in enumerate(grid.tolist()):
            o, i = env.points_reaching(lines, r * sample.n_id)
            tp, fp = (1 - pi) * i / sample.n_id, pi * o / sample.n_ood
            with np.errstate(divide="ignore", invalid="ignore"):
                best[j] = float(np.max(np.where(tp + fp > 0, tp / (tp + fp), 0.0)))
        return PRCurve(grid, best)
    for ki, ko in direction_knots(sample, n_directions):  # exact tie groups, as the ROC's
        tp, fp = ki[1:] / sample.n_id, ko[1:] / sample.n_ood
        prec = (1 - pi) * tp / ((1 - pi) * tp + pi * fp)
        suffix = np.maximum.accumulate(prec[::-1])[::-1]
        t = grid * sample.n_id
        p = np.searchsorted(ki[1:], t * (1 - 1e-12), side="left")
        ok = p < tp.size
        q = p[ok]
        di = ki[q + 1] - ki[q]
        f = np.where(di > 0, (t[ok] - ki[q]) / np.where(di > 0, di, 1.0), 1.0)
        ti = (ki[q] + f * di) / sample.n_id
        fo = (ko[q] + f * (ko[q + 1] - ko[q])) / sample.n_ood
        at = (1 - pi) * ti / ((1 - pi) * ti + pi * fo)
        vals = np.zeros(grid.size)
        vals[ok] = np.maximum(at, suffix[q])
        best = np.maximum(best, vals)
    return PRCurve(grid, best)


def _bounds(values: ArrayLike, name: str, *, open_low: bool = False) -> NDArray[np.float64]:
    """The bounds of a curve: in ``[0, 1]``, or ``(0, 1]`` with ``open_low`` (a precision
    at recall 0 is undefined)."""
    arr = as_real_array(values, name)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got an array of shape "
                         f"{arr.shape}.")
    bad = ~(((arr > 0.0) if open_low else (arr >= 0.0)) & (arr <= 1.0))  # NaN is bad too
    if bad.any():
        raise ValueError(f"{name} must be in {'(' if open_low else '['}0, 1]; got "
                         f"{plain(arr[bad].flat[0])}.")
    return arr


#: FPR values at which :func:`auroc` and :func:`oscr` integrate a pair's grid envelope.
N_POINTS = 2001


def _lines_area(sample: Sample, lines: env.Lines) -> float:
    """The area under an exact envelope against FPR, in (FPR) x (gain / #ID) units."""
    return env.area(lines) / (sample.n_ood * sample.n_id)


def _lines_fpr(sample: Sample, lines: env.Lines, t: float) -> float:
    """The least FPR at which the exact ROC envelope ``lines`` reaches TPR ``t``."""
    return env.first_reach(lines, t * sample.n_id) / sample.n_ood


def _envelope_areas(sample: Sample, gains: tuple[str, ...], search: str, n_directions: int,
                    n_points: int) -> list[float]:
    """Area under the envelope against FPR of each gain (``"id"``: the ROC, ``"ccr"``: the
    CCR curve): exact over every direction (``search="exact"``), or by trapezoids on
    ``n_points`` FPR values of the grid's envelopes (computed together,
    :func:`~abstain._ood_search.grid.envelopes_on_grid`)."""
    if search == "exact":
        columns = {"id": sample.w_id, "ccr": sample.w_id - sample.w_loss}
        return [_lines_area(sample, env.envelope_lines(sample.s, sample.w_ood, columns[g]))
                for g in gains]
    grid = np.linspace(0.0, 1.0, int(n_points))
    return [_trapezoids(grid, best) for best in envelopes_on_grid(sample, gains, grid,
                                                                   n_directions)]


def _trapezoids(grid: F64, best: F64) -> float:
    """The area under ``best`` at the FPR values ``grid``, by trapezoids."""
    return float(np.sum(np.diff(grid) * (best[1:] + best[:-1]) / 2))


@validate_params({"n_points": [Interval(int, 2, None, closed="left")]})
def auroc(is_ood: ArrayLike | ScoreTable | PairTable, scores: ArrayLike | None = None, *,
          search: str = "auto", n_directions: int = N_DIRECTIONS,
          n_points: int = N_POINTS) -> float:
    """Area under the ROC curve; OOD is the positive class of a higher score.

    One score: ``P(s_ID < s_OOD) + P(s_ID == s_OOD) / 2``, the exact trapezoid under
    the ROC curve of :func:`ood_roc_curve`, so a tie counts one half. Equal to the
    AUROC with ID positive and a lower score predicting ID.

    Two scores ``(s_r, s_g)``: the area under the ROC *envelope* of the double-score
    method (section 3.2 of Franc, Prusa and Paplham, 2023): at each FPR the largest TPR
    over the directions ``cos(a) s_r + sin(a) s_g``, ``a`` in ``[0, pi)``, an oracle
    that may take a different direction at every FPR (not the ROC of one fitted rule).

    - ``search="exact"``: every direction of the half-circle. The order of the projected
      rows changes only where two score pairs swap, so the envelope is the maximum of
      finitely many curves; its area is computed exactly (O(m^2 log m) for m distinct
      pairs). Invariant to a positive rescaling of either column that rounds no score (a
      power of two, say); at least each column alone's value; a grid's may exceed it by
      up to ``1 / (2 (n_points - 1))`` (its trapezoids cut the corners of the envelope's
      jumps); up to the round-off of the final sums (a few units in the last place).
    - ``search="grid"``: the ``n_directions`` grid ``k pi / n_directions``, evaluated at
      ``n_points`` equally spaced FPR values and integrated by trapezoids (every
      direction's curve is piecewise linear, so the error is below ``1 / (n_points - 1)``).
      Depends on the units of the columns.
    - ``search="auto"`` (default): ``"exact"`` up to ``AUTO_EXACT_ROWS`` (2,000) rows; above,
      ``"grid"`` on the columns divided by their standard deviations over the rows (1 for
      a constant column), as :func:`~abstain.metrics.evaluate_ood` does. Either way
      multiplying a column by a positive constant leaves the value unchanged: exactly for a
      power of two, else up to round-off in the deviations (pairs that tie on a grid
      direction in exact arithmetic, as on a lattice of whole numbers, may then tie or
      not), and as long as the rounded
      products keep the pairs' geometry (pairs exactly on a line in decimal, such as
      rounded probabilities, can leave it when multiplied by 100 in floating point, and the
      exact envelope with them).

    Parameters
    ----------
    is_ood : array-like of shape (n,), or a ScoreTable or PairTable
        A table (built with ``is_ood``) in place of both arrays.
    scores : array-like of shape (n,) or (n, 2)
    search : {"auto", "exact", "grid"}, default "auto"
        Direction search for two score columns (ignored for one).
    n_directions : int, default 360
        The grid's number of directions.
    n_points : int, default 2001
        FPR values of the grid's trapezoids.

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain.metrics import auroc
    >>> auroc([0, 1, 0, 1], [0.1, 0.2, 0.2, 0.4])
    0.875
    """
    is_ood, scores, search, n_directions = _pair_args(is_ood, scores, search, n_directions)
    n_points = int(n_points)
    sample = _sample_or_marks(is_ood, scores)
    if isinstance(sample, np.ndarray):
        return marks_auroc(sample)
    if sample.s.shape[1] == 2:
        return _envelope_areas(sample, ("id",), search, n_directions, n_points)[0]
    return column_auroc(sample)


def _roc_knots(sample: Sample) -> ROCCurve:
    """The ROC knots of one score column, from (0, 0) to (1, 1)."""
    i, o = column_running_sums(sample)
    return ROCCurve(np.divide(o, sample.n_ood, out=o), np.divide(i, sample.n_id, out=i))


def aupr_in(is_ood: ArrayLike | ScoreTable, scores: ArrayLike | None = None) -> float:
    """Area under the PR curve with ID positive, lowest scores accepted first (AUPR-In).

    Average precision: ``sum_t (R_t - R_{t-1}) P_t`` over distinct scores, with
    precision the sample's ID fraction of accepted rows; tied rows enter together.

    Examples
    --------
    >>> from abstain.metrics import aupr_in
    >>> aupr_in([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4])
    0.833...
    """
    sample = _sample_or_marks(is_ood, scores)
    if isinstance(sample, np.ndarray):
        return marks_average_precision(~sample)
    one_column(sample)  # its rows are the tie groups, ascending
    return average_precision(sample.w_id, sample.w_ood)


def aupr_out(is_ood: ArrayLike | ScoreTable, scores: ArrayLike | None = None) -> float:
    """Area under the PR curve with OOD positive, highest scores flagged first (AUPR-Out).

    Examples
    --------
    >>> from abstain.metrics import aupr_out
    >>> aupr_out([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4])
    0.833...
    """
    sample = _sample_or_marks(is_ood, scores)
    if isinstance(sample, np.ndarray):
        return marks_average_precision(sample[::-1])
    one_column(sample)  # its rows are the tie groups: highest first is the reverse order
    return average_precision(sample.w_ood[::-1], sample.w_id[::-1])


@validate_params({"tpr": [Interval(float, 0, 1, closed="right")]})
def fpr_at_tpr(is_ood: ArrayLike | ScoreTable | PairTable, scores: ArrayLike | None = None,
               tpr: float = 0.95, *, search: str = "auto",
               n_directions: int = N_DIRECTIONS) -> float:
    """FPR (fraction of OOD accepted) of the rule accepting exactly ``tpr`` of ID (FPR@95).

    The rule accepts the lowest scores and randomises on the tie group at the
    boundary; the value is its expected FPR (linear along the ROC segment).

    Two scores ``(s_r, s_g)``: the least such FPR over the directions
    ``cos(a) s_r + sin(a) s_g``, ``a`` in ``[0, pi)`` (the best direction for this TPR, an
    oracle like the envelope of :func:`auroc`): every direction with ``search="exact"``
    (invariant to a positive rescaling of either column that rounds no score), the
    ``n_directions`` grid with ``search="grid"``, and with ``search="auto"`` (default)
    exact up to ``AUTO_EXACT_ROWS`` (2,000) rows and the grid of the columns divided by
    their standard deviations above them (unchanged by a positive rescaling of a column),
    as :func:`auroc`.

    Examples
    --------
    >>> from abstain.metrics import fpr_at_tpr
    >>> fpr_at_tpr([0, 1, 0, 1], [0.1, 0.2, 0.2, 0.4], tpr=0.75)
    0.25
    >>> fpr_at_tpr([0, 1, 0, 1], [[1, 0], [0, 1], [0, 0], [1, 1]], tpr=1.0, search="exact")
    0.0
    """
    t = float(tpr)
    is_ood, scores, search, n_directions = _pair_args(is_ood, scores, search, n_directions)
    sample = _sample_or_marks(is_ood, scores)
    if isinstance(sample, np.ndarray):
        return marks_least_fpr(sample, t)
    if sample.s.shape[1] == 1:
        return core.least_fpr(*column_running_sums(sample), sample.n_id, sample.n_ood, t)
    if search == "exact":
        return _lines_fpr(sample, env.envelope_lines(sample.s, sample.w_ood, sample.w_id), t)
    return least_fpr_on_grid(sample, t, n_directions)


@validate_params({"tpr": [Interval(float, 0, 1, closed="right")]})
def tnr_at_tpr(is_ood: ArrayLike | ScoreTable | PairTable, scores: ArrayLike | None = None,
               tpr: float = 0.95, *, search: str = "auto",
               n_directions: int = N_DIRECTIONS) -> float:
    """``1 - fpr_at_tpr``: the fraction of OOD rejected when ``tpr`` of ID is accepted.

    Two score columns take the best direction as :func:`fpr_at_tpr` does, with the same
    ``search`` (default ``"auto"``: exact up to 2,000 rows, the grid of the standardised
    columns above).

    Examples
    --------
    >>> from abstain.metrics import tnr_at_tpr
    >>> tnr_at_tpr([0, 1, 0, 1], [0.1, 0.2, 0.2, 0.4], tpr=0.75)
    0.75
    """
    return 1.0 - fpr_at_tpr(is_ood, scores, tpr, search=search, n_directions=n_directions)


@validate_params({"false_alarm": [Interval(float, 0, 1, closed="left")]})
def detection_rate_at_false_alarm(is_ood: ArrayLike | ScoreTable | PairTable,
                                  scores: ArrayLike | None = None,
                                  false_alarm: float = 0.05, *, search: str = "auto",
                                  n_directions: int = N_DIRECTIONS) -> float:
    """OOD positive: the fraction of OOD flagged when ``false_alarm`` of ID is flagged.

    Equals ``tnr_at_tpr(is_ood, scores, 1 - false_alarm)``; two score columns take the
    best direction as :func:`fpr_at_tpr` does, with the same ``search`` (default
    ``"auto"``: exact up to 2,000 rows, the grid of the standardised columns above).

    Examples
    --------
    >>> from abstain.metrics import detection_rate_at_false_alarm
    >>> detection_rate_at_false_alarm([0, 1, 0, 1], [0.1, 0.2, 0.2, 0.4], 0.25)
    0.75
    """
    fa = float(false_alarm)
    return tnr_at_tpr(is_ood, scores, 1.0 - fa, search=search, n_directions=n_directions)


def _check_ccr_losses(sample: Sample) -> None:
    if sample.loss_above_one:
        raise ValueError("losses must be in [0, 1] on ID rows for the correct classification "
                         "rate; got a larger value.")


def _ccr_curve(losses: Any, is_ood: Any, scores: Any) -> tuple[F64, F64]:
    sample = _sample(is_ood, scores, losses)
    _check_ccr_losses(sample)
    kn = core.knots(one_column(sample), sample.w_id, sample.w_ood, sample.w_id - sample.w_loss)
    return kn.O / sample.n_ood, kn.L / sample.n_id


@validate_params({"n_points": [Interval(int, 2, None, closed="left")]})
def oscr(losses: ArrayLike | ScoreTable | PairTable, is_ood: ArrayLike | None = None,
         scores: ArrayLike | None = None, *, search: str = "auto",
         n_directions: int = N_DIRECTIONS, n_points: int = N_POINTS) -> float:
    """Open-set classification rate: the area under CCR against FPR (Dhamija et al. 2018).

    ``CCR = sum over accepted ID rows of (1 - loss) / #ID`` (the correctly classified
    and accepted ID fraction, for 0/1 losses); the curve joins the per-group points
    linearly (randomised ties), from (0, 0) to (1, ID accuracy).

    Two scores ``(s_r, s_g)``: the area under the envelope of CCR against FPR over the
    directions, exact with ``search="exact"``, on the grid with ``search="grid"``, and with
    ``search="auto"`` (default) exact up to ``AUTO_EXACT_ROWS`` (2,000) rows and on the grid
    of the standardised columns above, as :func:`auroc` does for two scores.

    Examples
    --------
    >>> from abstain.metrics import oscr
    >>> oscr([0, 0, 1, 0], [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4])
    0.5
    """
    losses, scores, search, n_directions = _losses_pair_args(losses, scores, search,
                                                             n_directions)
    n_points = int(n_points)
    sample = _sample(is_ood, scores, losses)
    if sample.s.shape[1] == 2:
        _check_ccr_losses(sample)
        return _envelope_areas(sample, ("ccr",), search, n_directions, n_points)[0]
    x, y = _ccr_curve(losses, is_ood, scores)
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))


def exact_envelope_metrics(losses: Any, is_ood: Any, scores: Any, tpr: float,
                           with_oscr: bool) -> dict[str, float]:
    """A score pair's exact envelope AUROC, FPR at ``tpr`` and (``with_oscr``) OSCR from one
    sweep of the directions: each equals what :func:`auroc`, :func:`fpr_at_tpr` and
    :func:`oscr` return with ``search="exact"``, for the cost of about one of them."""
    sample = _sample(is_ood, scores, losses)
    gains = [sample.w_id]
    if with_oscr:
        _check_ccr_losses(sample)
        gains.append(sample.w_id - sample.w_loss)
    lines = env.envelopes(sample.s, sample.w_ood, np.stack(gains, axis=1))
    out = {"auroc": _lines_area(sample, lines[0]), "fpr_at_tpr": _lines_fpr(sample, lines[0], tpr)}
    if with_oscr:
        out["oscr"] = _lines_area(sample, lines[1])
    return out


def pair_sample(losses: Any, is_ood: Any, scores: Any) -> Sample:
    """The validated sample of a score pair's rows (or of a table given as ``losses``), as
    the pair metrics build it: what :func:`grid_pair_metrics` and
    :meth:`~abstain._ood_search.sample.Sample.resampled` take."""
    return _sample(is_ood, scores, losses)


def grid_pair_metrics(sample: Sample, tpr: float, fpr: float, with_oscr: bool,
                      n_directions: int) -> dict[str, float]:
    """A score pair's AUROC, FPR at ``tpr``, (``with_oscr``) OSCR and risk at TPR >= ``tpr``,
    FPR <= ``fpr`` on the grid of ``n_directions``: each what :func:`auroc`,
    :func:`fpr_at_tpr`, :func:`oscr` and :func:`selective_risk_at_tpr_fpr` return with
    ``search="grid"`` on the sample's rows, from one sort of each direction and its running
    masses (:meth:`Sample.grid`, shared by the four; a resample's sample sorts nothing). An
    infeasible target gives a NaN risk with the warning of
    :func:`selective_risk_at_tpr_fpr`."""
    if with_oscr:
        _check_ccr_losses(sample)
    grid = np.linspace(0.0, 1.0, N_POINTS)
    bests, least, found = envelopes_fpr_and_rule(
        sample, ("id", "ccr") if with_oscr else ("id",), grid, n_directions, tpr,
        tpr_fpr_constraint(sample, tpr, fpr))
    areas = [_trapezoids(grid, best) for best in bests]  # as _envelope_areas
    out = {"auroc": areas[0], "fpr_at_tpr": least}
    if with_oscr:
        out["oscr"] = areas[1]
    out["risk_at_tpr_fpr"] = _risk_of(found)
    return out


@validate_params({"fpr": [Interval(float, 0, 1, closed="both")]})
def ccr_at_fpr(losses: ArrayLike | ScoreTable, is_ood: ArrayLike | None = None,
               scores: ArrayLike | None = None, fpr: float | None = None) -> float:
    """CCR of the rule accepting the largest ID share at FPR ``<= fpr`` (randomised ties).

    Examples
    --------
    >>> from abstain.metrics import ccr_at_fpr
    >>> ccr_at_fpr([0, 0, 1, 0], [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], 0.5)
    0.5
    """
    b = float(fpr)  # type: ignore[arg-type]
    x, y = _ccr_curve(losses, is_ood, scores)
    j = int(np.searchsorted(x, b * (1 + 1e-12), side="right")) - 1
    if j + 1 < x.size and x[j + 1] > x[j]:
        return float(y[j] + (b - x[j]) / (x[j + 1] - x[j]) * (y[j + 1] - y[j]))
    return float(y[j])
