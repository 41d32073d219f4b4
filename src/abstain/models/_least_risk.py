"""What the rules can attain on a sample, re-exported by :mod:`abstain.models`: the least
target risk at which a certified or conformal bounded-improvement rule exists on a
calibration sample (``least_risk_bound``), the least FPR at a TPR (``least_fpr_at_tpr``) and
the most recall at a precision (``most_recall_at_precision``) of the OOD threshold rules."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._certify.certify import (
    BOUNDS,
    check_crc_losses,
    crc_sums_exact,
    fit_groups,
    least_target,
    refuse_delta_with_guarantee,
    refuse_expected,
)
from .._certify.risk_bounds import crc_least
from .._core.validation import (
    Interval,
    check_choice,
    check_open_unit,
    check_params,
    check_positive,
    validate_params,
)
from .._ood_search import search as core
from .._ood_search.sample import N_DIRECTIONS, NO_LOSSES, Sample, check_search
from ..metrics import fpr_at_tpr
from ..tables._pair import PairTable
from ..tables._score import ScoreTable, check_whole_table
from ._selective import BoundedImprovement

__all__ = ["least_fpr_at_tpr", "least_risk_bound", "most_recall_at_precision"]


@validate_params({"above": [Interval(float, 0, None, closed="left")]})
def least_risk_bound(uncertainty: Any, losses: Any = None, delta: Any = None, *,
                     loss_bound: float = 1.0, bound: str = "auto",
                     guarantee: str | None = None, above: float = 0.0) -> float:
    """The least ``target_risk`` (at or above ``above``) at which
    ``BoundedImprovement(target_risk, delta=delta, bound=bound, loss_bound=loss_bound)``
    finds a rule on these data, or with ``guarantee="expected_joint"`` (and no ``delta``)
    conformal risk control.

    The value returned is feasible and the float below it is not (unless it is ``above``).
    ``"sgr"`` binary-searches the ``G`` tie groups with ``K = ceil(log2(G + 1))`` tests at
    level ``delta / K``. It fails only when every test fails, and then it has tested the
    fixed chain of prefixes ``g_1 = (G - 1) // 2``, ``g_{i+1} = (g_i - 1) // 2``, ..., ``0``;
    a larger target only turns tests into passes. So the fit is feasible exactly when the
    target is at least the smallest upper confidence bound on that chain, which is returned.

    The Learn-then-Test procedures (``"binomial"``, ``"hb"``, ``"wsr"``) are feasible when
    the first test of their sequence passes, and the learning rows choose where the
    sequence starts *from the target*: a larger target may start it at a lower threshold,
    on fewer rows, whose test fails. Their feasibility is then **not monotone** in the
    target: every target from the value returned up to some larger one is feasible, but
    a larger target may not be (``above`` asks for the least feasible target at or above
    a given one). The value is computed from that exact criterion: the targets are cut into
    the pieces on which the start is one grid point, whose test passes from a least target
    on (:func:`abstain._certify.ltt.ltt_least`).

    Conformal risk control (``guarantee="expected_joint"``) accepts anything only when
    ``(S + loss_bound) / (n + 1) <= target_risk`` for the accepted losses ``S >= 0``, so its
    least target is ``loss_bound / (n + 1)``: met there when the lowest tie group has no
    loss; otherwise only a larger target accepts a share of that group, and the least
    float at which the fit accepts anything is returned.

    Parameters
    ----------
    uncertainty : array-like of shape (n,), or ScoreTable
        Scores, or a :class:`~abstain.ScoreTable` of the rows (then ``losses`` is omitted).
    losses : array-like of shape (n,), in ``[0, loss_bound]``
    delta : float in (0, 1), or None with ``guarantee``
    loss_bound : float > 0, default 1.0
    bound : {"auto", "sgr", "binomial", "hb", "wsr"}, default "auto"
    guarantee : {None, "expected_joint"}, default None
    above : float >= 0, default 0.0
        The least feasible target at or above this one is returned.

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain import BoundedImprovement
    >>> from abstain.models import least_risk_bound
    >>> u, loss = list(range(40)), [0] * 30 + [1] * 10
    >>> least = least_risk_bound(u, loss, delta=0.1, bound="sgr")
    >>> round(least, 4)
    0.1851
    >>> BoundedImprovement(least, delta=0.1, bound="sgr").fit(u, loss).feasible_
    True
    >>> least_risk_bound(u, loss, guarantee="expected_joint") == 1 / 41
    True
    """
    above = float(above)
    if guarantee is not None:
        refuse_expected(guarantee)
        known = BoundedImprovement._parameter_constraints
        check_params({"delta": delta, "bound": bound, "guarantee": guarantee,
                      "loss_bound": loss_bound},
                     {name: known[name] for name in ("delta", "bound", "guarantee", "loss_bound")})
        refuse_delta_with_guarantee(guarantee, delta)
        groups, top, _, _ = fit_groups(uncertainty, losses)
        check_crc_losses(top, loss_bound)
        return crc_least(groups, loss_bound, above, crc_sums_exact(uncertainty, losses))
    check_open_unit("delta", delta)
    check_choice("bound", bound, BOUNDS)
    check_positive("loss_bound", loss_bound)
    groups, top, binary, squares = fit_groups(uncertainty, losses)
    return least_target(uncertainty, losses, groups, top, binary, squares, delta, loss_bound,
                        bound, above)


def _grid_knots(sample: Sample, n_directions: int) -> Iterator[Any]:
    """The ROC knots of the combined score of each grid direction (of the one column of a
    single score)."""
    s = sample.s
    columns = ([s[:, 0]] if s.shape[1] == 1 else
               (core.project(s, w) for w in core.grid_weights(n_directions)))
    for c in columns:
        yield core.knots(c, sample.w_id, sample.w_ood, sample.w_loss)


@validate_params({"tpr": [Interval(float, 0, 1, closed="right")]})
def least_fpr_at_tpr(scores: ArrayLike | ScoreTable | PairTable, is_ood: ArrayLike | None = None,
                     tpr: float | None = None, *,
                     n_directions: int = N_DIRECTIONS) -> float:
    """The lowest FPR of a threshold rule with TPR >= ``tpr``: what :class:`BoundedTPRFPR`
    can attain at that TPR.

    One score column: :func:`abstain.metrics.fpr_at_tpr`. Two columns (or a
    :class:`~abstain.tables.PairTable`): the least over the grid of ``n_directions``
    directions that ``search="grid"`` tries, on the rounded combined scores that such a rule
    thresholds (:func:`abstain.metrics.fpr_at_tpr` with ``search="grid"`` ties the exact
    projections instead, and can differ where rounding ties points). Tie rule as in
    :class:`BoundedTPRFPR` (the tie group at the threshold is accepted with one probability).

    Examples
    --------
    >>> from abstain.models import least_fpr_at_tpr
    >>> least_fpr_at_tpr([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], tpr=1.0)
    0.5
    """
    t = float(tpr)  # type: ignore[arg-type]
    _, d = check_search("grid", n_directions)
    if isinstance(scores, ScoreTable):
        check_whole_table(scores, {"is_ood": is_ood})
        return float(fpr_at_tpr(scores, tpr=t))
    if not isinstance(scores, PairTable) and np.ndim(scores) != 2:
        return float(fpr_at_tpr(is_ood, scores, t))  # type: ignore[arg-type]
    sample = _roc_sample(scores, is_ood)
    return min([math.inf, *(core.least_fpr(kn.I, kn.O, sample.n_id, sample.n_ood, t)
                            for kn in _grid_knots(sample, d))])


def _roc_sample(scores: Any, is_ood: Any) -> Sample:
    """The sample behind the ROC curves of arrays or of a table (no losses needed)."""
    if isinstance(scores, (ScoreTable, PairTable)):
        return Sample.of(scores, is_ood, None)
    return Sample.of(scores, is_ood, NO_LOSSES)


@validate_params({"precision": [Interval(float, 0, 1, closed="right")]})
def most_recall_at_precision(scores: ArrayLike | ScoreTable | PairTable,
                             is_ood: ArrayLike | None = None, precision: float | None = None, *,
                             ood_prior: float | None = None,
                             n_directions: int = N_DIRECTIONS) -> float:
    """The highest recall (TPR) of a threshold rule with precision >= ``precision``: what
    :class:`BoundedPrecisionRecall` can attain at that precision.

    The precision is ``(1 - pi) TPR / ((1 - pi) TPR + pi FPR)`` with ``pi = ood_prior``, or
    the sample's OOD fraction when None. Precision >= p is ``p pi FPR <= (1 - p)(1 - pi)
    TPR``, linear along each ROC segment, so the answer is at the last ROC knot meeting it
    or where the next segment crosses it; two columns (or a
    :class:`~abstain.tables.PairTable`) take the best grid direction.

    Examples
    --------
    >>> from abstain.models import most_recall_at_precision
    >>> most_recall_at_precision([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], precision=1.0)
    0.5
    """
    p = float(precision)  # type: ignore[arg-type]
    _, d = check_search("grid", n_directions)
    sample = _roc_sample(scores, is_ood)
    ood_share = sample.n_ood / (sample.n_id + sample.n_ood)
    pi = ood_share if ood_prior is None else check_open_unit("ood_prior", ood_prior)
    return max([0.0, *(core.most_recall(kn.I, kn.O, sample.n_id, sample.n_ood, p, pi)
                       for kn in _grid_knots(sample, d))])
