"""Brute-force references for ``abstain.metrics``.

Definitions (Franc, Prusa & Voracek, JMLR 2023, section 3):

* eq. (27): ``AuRC = (1/n) sum_{i=1..n} (1/i) sum_{j<=i} loss[pi(j)]`` where ``pi`` sorts the
  uncertainty ascending (accept the lowest scores first).
  ``ties="index"``: the paper's footnote 7, among equal scores the lower row index comes first.
  ``ties="mean"``: the expectation of eq. (27) over a uniformly random order inside every
  group of tied scores, computed here by averaging over *all* sorting permutations.
* generalized risk (AuGRC): the same with ``1/i`` replaced by ``1/n``.
* eq. (29): ``sele = (1/n^2) sum_i sum_j loss_i [u_i <= u_j]``.
* randomised threshold rules ``(theta, nu)``: ``c_i = 1 if u_i < theta, nu if u_i == theta,
  0 otherwise``; selective risk ``sum c_i loss_i / sum c_i``; coverage ``mean(c_i)``.

All functions accept ``exact=True`` to compute in ``fractions.Fraction`` (floats are exact
rationals, so the result is the exact value of the definition for the given float inputs);
by default the result is returned as a Python float.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

TIES = ("mean", "index")


# --------------------------------------------------------------------------- helpers
def as_list(x, exact: bool = False) -> list:
    """1-D array-like -> list of Python floats (or exact Fractions)."""
    values = [float(v) for v in np.asarray(x, dtype=np.float64).ravel()]
    return [Fraction(v) for v in values] if exact else values


def _out(value, exact: bool):
    return value if exact else float(value)


def _check_pair(losses, uncertainty):
    losses = np.asarray(losses, dtype=np.float64)
    uncertainty = np.asarray(uncertainty, dtype=np.float64)
    assert losses.ndim == 1 and uncertainty.shape == losses.shape and losses.size >= 1
    assert np.all(np.isfinite(losses)) and np.all(losses >= 0)
    assert np.all(np.isfinite(uncertainty))
    return losses, uncertainty


def counts_before_and_tied(uncertainty) -> tuple[list[int], list[int]]:
    """For every row j: (#rows with a strictly lower score, #rows with an equal score)."""
    u = as_list(uncertainty)
    before = [sum(1 for v in u if v < uj) for uj in u]
    tied = [sum(1 for v in u if v == uj) for uj in u]
    return before, tied


def index_rank(uncertainty) -> list[int]:
    """0-based position of every row in the stable ascending sort (sort-free double loop)."""
    u = as_list(uncertainty)
    n = len(u)
    return [
        sum(1 for k in range(n) if u[k] < u[j]) + sum(1 for k in range(j) if u[k] == u[j])
        for j in range(n)
    ]


def sorting_permutations(uncertainty):
    """Yield every permutation ``pi`` (tuple of row indices) with ``u[pi]`` non-decreasing."""
    u = as_list(uncertainty)
    groups = [[j for j in range(len(u)) if u[j] == t] for t in sorted(set(u))]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield tuple(itertools.chain.from_iterable(parts))


def n_sorting_permutations(uncertainty) -> int:
    u = as_list(uncertainty)
    return math.prod(math.factorial(u.count(t)) for t in set(u))


def _area_for_order(loss: list, pi, generalized: bool, zero):
    """Eq. (27) (or its generalized-risk version) for one fixed order, as a double loop."""
    n = len(loss)
    total = zero
    for i in range(1, n + 1):
        partial = zero
        for j in range(i):
            partial += loss[pi[j]]
        total += partial / (n if generalized else i)
    return total / n


def _area(losses, uncertainty, ties, generalized, exact, max_permutations):
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    _check_pair(losses, uncertainty)
    loss = as_list(losses, exact)
    zero = Fraction(0) if exact else 0.0
    if ties == "index":
        # Sort-free: row j is among the first i accepted iff its stable rank is < i.
        rank = index_rank(uncertainty)
        n = len(loss)
        total = zero
        for i in range(1, n + 1):
            partial = zero
            for j in range(n):
                if rank[j] < i:
                    partial += loss[j]
            total += partial / (n if generalized else i)
        return _out(total / n, exact)
    count = n_sorting_permutations(uncertainty)
    if count > max_permutations:
        raise ValueError(f"{count} sorting permutations, more than max_permutations")
    if exact:
        acc = sum(
            (
                _area_for_order(loss, pi, generalized, zero)
                for pi in sorting_permutations(uncertainty)
            ),
            Fraction(0),
        )
    else:
        acc = math.fsum(
            _area_for_order(loss, pi, generalized, zero) for pi in sorting_permutations(uncertainty)
        )
    return _out(acc / count, exact)


# --------------------------------------------------------------------------- area metrics
def aurc_ref(losses, uncertainty, *, ties="mean", exact=False, max_permutations=40320):
    """Eq. (27); ``ties="mean"`` averages over ALL sorting permutations (brute force)."""
    return _area(losses, uncertainty, ties, False, exact, max_permutations)


def augrc_ref(losses, uncertainty, *, ties="mean", exact=False, max_permutations=40320):
    """Area under the generalized RC curve, ``(1/n) sum_i (1/n) sum_{j<=i} loss[pi(j)]``."""
    return _area(losses, uncertainty, ties, True, exact, max_permutations)


def e_aurc_ref(losses, uncertainty, *, ties="mean", exact=False, max_permutations=40320):
    """``aurc(losses, uncertainty) - aurc(losses, losses)`` (the oracle ranks by the loss)."""
    oracle = aurc_ref(losses, losses, ties="index", exact=exact)
    return aurc_ref(
        losses, uncertainty, ties=ties, exact=exact, max_permutations=max_permutations
    ) - oracle


def _area_by_linearity(losses, uncertainty, generalized, exact):
    """Second, independent reference for ``ties="mean"`` (any n).

    By linearity of expectation, ``E[sum_{j<=i} loss[pi(j)]] = sum_j loss_j P(j among first i)``
    and under a uniformly random order inside the tie group of j (``b`` rows strictly before it,
    ``m`` rows tied with it) ``P = clip((i - b) / m, 0, 1)``.
    """
    _check_pair(losses, uncertainty)
    loss = as_list(losses, exact)
    before, tied = counts_before_and_tied(uncertainty)
    n = len(loss)
    zero = Fraction(0) if exact else 0.0
    total = zero
    for i in range(1, n + 1):
        partial = zero
        for j in range(n):
            p = Fraction(i - before[j], tied[j]) if exact else (i - before[j]) / tied[j]
            p = min(max(p, 0), 1)
            partial += loss[j] * p
        total += partial / (n if generalized else i)
    return _out(total / n, exact)


def aurc_linearity_ref(losses, uncertainty, *, exact=False):
    """Expected eq. (27) under random tie order, by linearity of expectation (any n)."""
    return _area_by_linearity(losses, uncertainty, False, exact)


def augrc_linearity_ref(losses, uncertainty, *, exact=False):
    """Expected AuGRC under random tie order, by linearity of expectation (any n)."""
    return _area_by_linearity(losses, uncertainty, True, exact)


def sele_ref(losses, uncertainty, *, exact=False):
    """Eq. (29): ``(1/n^2) sum_i sum_j loss_i [u_i <= u_j]`` as a double loop."""
    _check_pair(losses, uncertainty)
    loss = as_list(losses, exact)
    u = as_list(uncertainty)
    n = len(loss)
    total = Fraction(0) if exact else 0.0
    for i in range(n):
        for j in range(n):
            if u[i] <= u[j]:
                total += loss[i]
    return _out(total / (n * n), exact)


# --------------------------------------------------------------------------- RC curve
class RiskCoverageCurveRef(NamedTuple):
    coverage: np.ndarray
    risk: np.ndarray
    thresholds: np.ndarray


def risk_coverage_curve_ref(losses, uncertainty) -> RiskCoverageCurveRef:
    """One point per distinct score t (ascending): coverage #(u<=t)/n, risk mean loss of u<=t."""
    _check_pair(losses, uncertainty)
    loss = as_list(losses, exact=True)
    u = as_list(uncertainty)
    n = len(u)
    thresholds, coverage, risk = [], [], []
    for t in sorted(set(u)):
        count = sum(1 for v in u if v <= t)
        total = sum((loss[j] for j in range(n) if u[j] <= t), Fraction(0))
        thresholds.append(t)
        coverage.append(float(Fraction(count, n)))
        risk.append(float(total / count))
    return RiskCoverageCurveRef(np.array(coverage), np.array(risk), np.array(thresholds))


# --------------------------------------------------------------------------- threshold rules
def rule_acceptance(uncertainty, threshold, accept_prob) -> list:
    """``c_i`` of the randomised threshold rule (theta, nu) on every row."""
    u = as_list(uncertainty)
    return [
        (Fraction(1) if v < threshold else (accept_prob if v == threshold else Fraction(0)))
        for v in u
    ]


def selection_coverage_risk(losses, acceptance) -> tuple[Fraction, Fraction | float]:
    """Exact (coverage, selective risk) of an acceptance vector; risk is nan at coverage 0."""
    loss = as_list(losses, exact=True)
    c = [Fraction(x) for x in acceptance]
    accepted = sum(c, Fraction(0))
    coverage = accepted / len(loss)
    if accepted == 0:
        return coverage, math.nan
    return coverage, sum((ci * li for ci, li in zip(c, loss, strict=True)), Fraction(0)) / accepted


def selective_risk_at_coverage_ref(losses, uncertainty, coverage, *, exact=False):
    """Risk of the (unique canonical) randomised threshold rule with expected coverage = coverage.

    Accept all rows below the boundary tie group and a fraction ``nu`` of the boundary group,
    ``nu = (n*coverage - #below) / #group``; risk = expected loss / expected count.
    """
    _check_pair(losses, uncertainty)
    u = as_list(uncertainty)
    n = len(u)
    coverage = coverage if isinstance(coverage, Fraction) else Fraction(float(coverage))
    target = coverage * n
    assert 0 < target <= n
    for t in set(u):
        below = sum(1 for v in u if v < t)
        tied = sum(1 for v in u if v == t)
        if below < target <= below + tied:
            nu = (target - below) / tied
            cov, risk = selection_coverage_risk(losses, rule_acceptance(u, t, nu))
            assert cov * n == target
            return _out(risk, exact)
    raise AssertionError("unreachable: some tie group holds the boundary")


def sorted_group_totals(u, *weights):
    """``group_totals`` by a stable argsort, whatever the number of rows: the distinct values
    (+0.0 for zeros), the rows of each (int64) and each weight's group sums in row order."""
    u = np.asarray(u, dtype=np.float64)
    order = np.argsort(u, kind="stable")
    s = u[order]
    starts = np.concatenate(([0], np.flatnonzero(s[1:] != s[:-1]) + 1))
    counts = np.diff(np.append(starts, s.size)).astype(np.int64)
    return s[starts] + 0.0, counts, [np.add.reduceat(np.asarray(w)[order], starts)
                                     for w in weights]


def expected_prefix_losses_ref(losses, uncertainty) -> np.ndarray:
    """``E[L(i)]`` for ``i = 1..n`` under the ``"mean"`` tie rule, vectorised from the
    definition: inside a group of ``m`` rows with loss ``S`` after ``B`` rows of loss ``P``,
    ``E[L(B + k)] = P + k S / m``. AuRC is ``mean(E[L(i)] / i)``, AUGRC ``mean(E[L(i)]) / n``."""
    values, inverse = np.unique(np.asarray(uncertainty, dtype=np.float64), return_inverse=True)
    m = np.bincount(inverse)
    s = np.bincount(inverse, weights=np.asarray(losses, dtype=np.float64))
    before_n = np.concatenate(([0], np.cumsum(m)[:-1]))
    before_s = np.concatenate(([0.0], np.cumsum(s)[:-1]))
    i = np.arange(1, inverse.size + 1)
    g = np.repeat(np.arange(values.size), m)
    return before_s[g] + (i - before_n[g]) * s[g] / m[g]
