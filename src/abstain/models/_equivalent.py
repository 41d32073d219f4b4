"""The parameters under which the three reject models of Franc et al. (2023) share one rule.

:class:`EquivalentModels` is the ``equivalent_`` field of every fitted selective rule of
:mod:`~abstain.models._selective`; :func:`equivalent_models` computes it from the tie groups
of the calibration sample and the rule (section 2.4 of the paper).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._core.exact import sum_round_off
from .._core.groups import TieGroups

__all__ = ["EquivalentModels"]


class EquivalentModels(NamedTuple):
    """The parameters under which the other reject models have the same rule as optimum.

    Section 2.4 of Franc et al. (2023): the three models share one optimal strategy. For a
    fitted rule with coverage ``phi`` and selective risk ``rho`` on a calibration sample:

    Attributes
    ----------
    target_coverage : float
        ``BoundedAbstention(target_coverage=phi)`` returns it (0.0 for the rule that
        rejects everything, which no bounded-abstention model returns).
    target_risk : tuple of float or None
        ``BoundedImprovement(target_risk=r)`` returns it for every ``r`` in ``[low, high]``:
        the single point ``[rho, rho]``, or ``[rho, inf]`` for the rule that accepts
        everything (a ``rho`` of 0 is no valid target: the model takes ``r > 0``). ``None``
        when no target gives this rule: a larger coverage has a selective risk as low, or
        the rule rejects everything (the model's infeasible answer). ``rho`` is a float:
        where it lies above the exact risk (``0.4`` is 2.2e-17 above 2 losses in 5 rows),
        the model meets the target exactly and so also accepts the next tie group, with a
        probability of that order (1.4e-16 there): the same rule but for that acceptance.
    reject_cost : tuple of float or None
        The closed interval ``[low, high]`` of reject costs ``e`` for which this rule
        minimises the empirical cost of ``CostBased(reject_cost=e)``; at an end (within the
        round-off of the costs) it ties with a neighbouring rule and ``CostBased`` returns the
        one of larger coverage, so it returns this rule inside the interval and at its low
        end, but not where the interval is one point (the larger neighbour ties there) nor
        for a rule that randomises a group (a minimiser at its group's mean loss, where
        ``CostBased`` returns a whole group). ``None`` when no reject cost makes it optimal.
    """

    target_coverage: float
    target_risk: tuple[float, float] | None
    reject_cost: tuple[float, float] | None


def knot_cost_interval(groups: TieGroups, i: int) -> tuple[float, float]:
    """Closed interval of reject costs ``e`` for which accepting exactly the first ``i``
    groups (knot ``i`` of ``0..G``) minimises the empirical cost ``C_i - e * N_i``.

    Low end: the steepest chord from an earlier knot; high end: the flattest chord
    to a later one (empty when low > high: the knot is off the lower convex hull).
    """
    x = groups.knots_x
    y = groups.unit_knots_y  # in units of groups.scale: chords of losses near 1e308 are finite
    low = max(float(np.max((y[i] - y[:i]) / (x[i] - x[:i]))), 0.0) if i > 0 else 0.0
    high = float(np.min((y[i + 1 :] - y[i]) / (x[i + 1 :] - x[i]))) if i + 1 < x.size else math.inf
    return low * groups.scale, high * groups.scale


def equivalent_models(groups: TieGroups, g: int, nu: float) -> EquivalentModels:
    """Equivalent parameters of the rule accepting groups ``< g`` and ``nu`` of group ``g``
    (``g = -1`` for the rule that rejects everything)."""
    n = groups.n
    full = g >= 0 and nu >= 1.0
    target_risk: tuple[float, float] | None = None
    x = groups.accepted_at(g, nu)
    if g >= 0:
        rho = groups.risk_of(g, nu)
        if x >= n:
            target_risk = (rho, math.inf)
        elif abs(groups.max_accepted_at_risk(rho) - x) <= 1e-12 * x:
            # the bounded-improvement optimum at target rho is this rule: every larger
            # coverage has a larger risk, by more than the slack that model allows (a later
            # rule of the same risk up to round-off, 7/18 summed two ways, is its optimum)
            target_risk = (rho, rho)
    # Reject cost: optimal knots from the convex-hull test; a partial group is
    # optimal only when both of its ends are, at the cost equal to its mean loss.
    # Chords that are equal in exact arithmetic (collinear knots; a group's mean and its
    # chord) differ in floats by the round-off of the sums: within it they are equal.
    tol = sum_round_off(n)
    reject_cost: tuple[float, float] | None
    if g < 0 or full:
        low, high_c = knot_cost_interval(groups, g + 1)
        reject_cost = ((min(low, high_c), max(low, high_c))
                       if low <= high_c + tol * abs(high_c) else None)
    else:
        mean = float(groups.unit_sums[g] / groups.counts[g]) * groups.scale
        ends = [knot_cost_interval(groups, i) for i in (g, g + 1)]
        reject_cost = ((mean, mean) if all(lo <= mean + tol * mean and mean <= hi + tol * hi
                                           for lo, hi in ends) else None)
    return EquivalentModels(x / n, target_risk, reject_cost)
