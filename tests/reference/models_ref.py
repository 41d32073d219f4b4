"""Brute-force references for the reject models (Franc, Prusa & Voracek, JMLR 2023, section 2).

Two independent kinds of reference:

1. ``*_ref``: exhaustive search, in exact rational arithmetic, over the randomised threshold
   rules ``(theta, nu)`` (``c_i = 1 if u_i < theta, nu if u_i == theta, 0 if u_i > theta``):
   every threshold (each distinct score, plus ``-inf`` = reject everything), each with a grid
   of acceptance probabilities ``nu`` plus the exact analytic candidates (the ``nu`` that hits a
   coverage exactly, or that makes the selective risk equal the target). Every candidate is
   evaluated straight from the definitions (``rule_acceptance`` and
   ``selection_coverage_risk``); the best one is kept.

2. ``lp_*``: ``scipy.optimize.linprog`` over one acceptance probability per tie group,
   optionally constrained to be non-increasing in the score (``c_1 >= c_2 >= ... >= c_G``).

   Caveat (why the LP is not the primary reference): with the extra coverage or risk
   constraint, the monotone LP is only a *relaxation* of the threshold rules. Example:
   losses ``[1, 0]``, uncertainty ``[0, 1]``, target coverage 0.5: the only threshold rule
   accepts row 0 (risk 1), while the monotone vector ``c = (0.5, 0.5)`` has risk 0.5.
   The LP optimum is a threshold rule when the score is *proper on the sample* (tie-group
   mean losses non-decreasing in the score; Theorems 3 and 6). For the cost-based model
   the monotone LP is exact for every score: the vertices of
   ``{1 >= c_1 >= ... >= c_G >= 0}`` are exactly the deterministic threshold rules.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from scipy.optimize import linprog

from .metrics_ref import as_list, rule_acceptance, selection_coverage_risk

NU_GRID = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1))


class RuleRef(NamedTuple):
    """A fitted randomised threshold rule and its exact statistics on the fit data."""

    threshold: float
    accept_prob: Fraction
    coverage: Fraction
    risk: Fraction | float  # nan when coverage is 0
    feasible: bool
    acceptance: list  # c_i on the fit rows (Fractions)
    objective: Fraction | None = None


def _groups(uncertainty, losses):
    """Distinct scores ascending with (#below, #tied, loss below, loss tied), exact, by loops."""
    u = as_list(uncertainty)
    loss = as_list(losses, exact=True)
    out = []
    for t in sorted(set(u)):
        below = [j for j in range(len(u)) if u[j] < t]
        tied = [j for j in range(len(u)) if u[j] == t]
        out.append(
            (
                t,
                len(below),
                len(tied),
                sum((loss[j] for j in below), Fraction(0)),
                sum((loss[j] for j in tied), Fraction(0)),
            )
        )
    return out


def _evaluate(uncertainty, losses, threshold, nu):
    c = rule_acceptance(uncertainty, threshold, nu)
    coverage, risk = selection_coverage_risk(losses, c)
    return c, coverage, risk


def _reject_all(uncertainty, losses, feasible, objective=None):
    c, coverage, risk = _evaluate(uncertainty, losses, -math.inf, Fraction(1))
    return RuleRef(-math.inf, Fraction(1), coverage, risk, feasible, c, objective)


def bounded_abstention_ref(uncertainty, losses, target_coverage) -> RuleRef:
    """Minimal selective risk over threshold rules with expected coverage exactly omega."""
    u = as_list(uncertainty)
    n = len(u)
    omega = Fraction(float(target_coverage))
    assert 0 < omega <= 1
    best = None
    for t, n_below, n_tied, _, _ in _groups(u, losses):
        nus = set(NU_GRID)
        exact_nu = (omega * n - n_below) / n_tied
        if 0 < exact_nu <= 1:
            nus.add(exact_nu)
        for nu in nus:
            c, coverage, risk = _evaluate(u, losses, t, nu)
            if coverage == omega and (best is None or risk < best.risk):
                best = RuleRef(t, nu, coverage, risk, True, c)
    assert best is not None, "some rule always has coverage exactly omega"
    return best


def bounded_improvement_ref(uncertainty, losses, target_risk) -> RuleRef:
    """Maximal expected coverage over threshold rules with selective risk <= lambda.

    Infeasible (no rule with positive coverage meets the target): ``feasible=False``,
    coverage 0, risk nan, threshold -inf.
    """
    u = as_list(uncertainty)
    lam = Fraction(float(target_risk))
    assert lam > 0
    best = None
    for t, n_below, n_tied, loss_below, loss_tied in _groups(u, losses):
        nus = set(NU_GRID)
        # risk(nu) <= lam  <=>  nu * (loss_tied - lam n_tied) <= lam n_below - loss_below
        slope = loss_tied - lam * n_tied
        if slope > 0:
            exact_nu = (lam * n_below - loss_below) / slope
            if 0 < exact_nu <= 1:
                nus.add(exact_nu)
        for nu in nus:
            c, coverage, risk = _evaluate(u, losses, t, nu)
            if coverage > 0 and risk <= lam and (best is None or coverage > best.coverage):
                best = RuleRef(t, nu, coverage, risk, True, c)
    if best is None:
        return _reject_all(u, losses, feasible=False)
    return best


def empirical_cost(losses, acceptance, reject_cost) -> Fraction:
    """``mean(c_i loss_i + (1 - c_i) eps)``, eq. (1) on the sample, exact."""
    loss = as_list(losses, exact=True)
    eps = Fraction(float(reject_cost))
    c = [Fraction(x) for x in acceptance]
    total = sum((ci * li + (1 - ci) * eps for ci, li in zip(c, loss, strict=True)), Fraction(0))
    return total / len(loss)


def cost_based_ref(uncertainty, losses, reject_cost) -> RuleRef:
    """Minimal empirical cost over threshold rules; ties -> the LARGEST coverage."""
    u = as_list(uncertainty)
    candidates = [(-math.inf, Fraction(1))]
    for t, *_ in _groups(u, losses):
        candidates += [(t, nu) for nu in NU_GRID]
    best = None
    for t, nu in candidates:
        c, coverage, risk = _evaluate(u, losses, t, nu)
        cost = empirical_cost(losses, c, reject_cost)
        key = (cost, -coverage)
        if best is None or key < (best.objective, -best.coverage):
            best = RuleRef(t, nu, coverage, risk, True, c, cost)
    if best.coverage == 0:
        return RuleRef(-math.inf, Fraction(1), best.coverage, math.nan, True, best.acceptance,
                       best.objective)
    return best


# --------------------------------------------------------------------------- linear programs
def _group_arrays(uncertainty, losses):
    groups = _groups(uncertainty, losses)
    m = np.array([g[2] for g in groups], dtype=float)
    loss_sum = np.array([float(g[4]) for g in groups], dtype=float)
    return m, loss_sum


def _monotone(n_groups: int):
    """Rows of ``c_{g+1} - c_g <= 0``."""
    a = np.zeros((max(n_groups - 1, 0), n_groups))
    for g in range(n_groups - 1):
        a[g, g], a[g, g + 1] = -1.0, 1.0
    return a


_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _solve(c, a_ub, b_ub, a_eq=None, b_eq=None):
    res = linprog(
        c,
        A_ub=a_ub if a_ub is not None and len(a_ub) else None,
        b_ub=b_ub if a_ub is not None and len(a_ub) else None,
        A_eq=a_eq,
        b_eq=b_eq,
        bounds=[(0.0, 1.0)] * len(c),
        method="highs-ds",
        options=_LP_OPTIONS,
    )
    assert res.status == 0, res.message
    return res


def lp_cost_based(uncertainty, losses, reject_cost, *, monotone=True) -> float:
    """Minimal empirical cost over per-group acceptance probabilities."""
    m, loss_sum = _group_arrays(uncertainty, losses)
    n = m.sum()
    a_ub = _monotone(len(m)) if monotone else None
    b_ub = np.zeros(len(a_ub)) if monotone else None
    res = _solve((loss_sum - reject_cost * m) / n, a_ub, b_ub)
    return float(res.fun + reject_cost)


def lp_bounded_abstention(uncertainty, losses, target_coverage, *, monotone=True) -> float:
    """Minimal selective risk with expected coverage exactly omega."""
    m, loss_sum = _group_arrays(uncertainty, losses)
    n = m.sum()
    a_ub = _monotone(len(m)) if monotone else None
    b_ub = np.zeros(len(a_ub)) if monotone else None
    res = _solve(loss_sum, a_ub, b_ub, a_eq=m[None, :], b_eq=[n * target_coverage])
    return float(res.fun / (n * target_coverage))


def lp_bounded_improvement(uncertainty, losses, target_risk, *, monotone=True) -> float:
    """Maximal expected coverage with expected loss <= target_risk * expected count."""
    m, loss_sum = _group_arrays(uncertainty, losses)
    n = m.sum()
    rows = [loss_sum - target_risk * m]
    if monotone:
        rows += list(_monotone(len(m)))
    a_ub = np.array(rows)
    res = _solve(-m, a_ub, np.zeros(len(a_ub)))
    return float(-res.fun / n)
