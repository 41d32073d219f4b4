"""The least target risk at which a certified or conformal bounded-improvement rule exists
on a calibration sample (``least_risk_bound``, re-exported by :mod:`abstain.models`)."""

from __future__ import annotations

from typing import Any

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
from ._selective import BoundedImprovement

__all__ = ["least_risk_bound"]


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
