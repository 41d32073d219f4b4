"""Exact selective-classification metrics (re-exported by :mod:`abstain.metrics`).

Every function takes per-sample ``losses`` (any non-negative numbers: 0/1 errors,
absolute errors of an ordinal model, losses of a structured predictor) and an
``uncertainty`` score. **A higher uncertainty is rejected first**: a selective
classifier accepts the samples with the lowest uncertainty.

Tie rule (the same in every function): samples are sorted by uncertainty, the
curve has one point per distinct uncertainty value, sums are accumulated in
float64, in units of a power of two where losses near the float64 maximum would
overflow them (an exact scaling: the results are those of the plain sums wherever
these are finite). Where a metric depends on the order *inside* a group of tied scores
(AuRC, AUGRC), ``ties="mean"`` returns its exact expectation over a uniformly
random order of the tied samples, which does not depend on the row order, and
``ties="index"`` applies the rule of Franc et al. (2023), footnote 7: a stable
sort, the lower row index accepted first.

Every function takes a :class:`~abstain.ScoreTable` (built without ``is_ood``) as
``losses`` in place of the two arrays, with ``uncertainty`` omitted, and returns what it
returns on the rows the table summarises; ``ties="index"`` needs the row order and
refuses a table.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.exact import sum_round_off
from .._core.groups import (
    TieGroups,
    coverage_count,
    loss_totals,
    sorted_by_uncertainty,
    validated_groups,
)
from .._core.prefix import expected_prefix_areas
from .._core.validation import (
    Interval,
    Options,
    as_losses_and_scores,
    plain,
    validate_params,
)
from ..tables._score import ScoreTable, as_groups, selective_table, table_or_none

__all__ = [
    "RiskCoverageCurve",
    "risk_coverage_curve",
    "aurc",
    "e_aurc",
    "augrc",
    "selective_risk_at_coverage",
    "coverage_at_risk",
    "sele_loss",
]

_TIES = ("mean", "index")

def _groups(losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None) -> TieGroups:
    """Tie groups of the arrays or of a table given as ``losses``."""
    groups = as_groups(losses, uncertainty, "losses", "uncertainty")
    return validated_groups(losses, uncertainty) if groups is None else groups  # type: ignore[arg-type]


def _totals(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None
) -> tuple[NDArray[np.int64] | None, NDArray[Any], float, int]:
    """``(counts, loss sums / c, c, n)`` per distinct score, of the arrays or of a table
    of ``n`` rows; ``counts`` None where every group is one row and the sums are the rows'
    0/1 losses (uint8, in score order: :func:`~abstain._core.groups.loss_totals`).

    ``c`` is the power of two of :func:`_unit_scale`: dividing by it is exact, so the
    rows and their table give the same scaled sums.
    """
    table = table_or_none(losses, {"uncertainty": uncertainty})
    if table is None:
        ls, u = as_losses_and_scores(losses, uncertainty)  # type: ignore[arg-type]
        ls, c = _unit_scale(ls)  # before the group sums, which could overflow otherwise
        counts, sums = loss_totals(u, ls)  # counts None: one row per group, 0/1 marks
        return counts, sums, c, ls.size
    counts, sums, top = selective_table(table).counts, table.loss_sums, table.max_loss
    c = _scale_of(top)
    return counts, sums / c if c != 1.0 else sums, c, int(np.sum(counts))


def _oracle_totals(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None, c: float
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Counts and scaled loss sums of the oracle score (the loss itself), ascending."""
    if isinstance(losses, ScoreTable):
        if losses.loss_values is None or losses.loss_counts is None:
            raise ValueError("e_aurc needs the distinct losses of the rows for its oracle; this "
                             "ScoreTable was built with oracle=False.")
        values, counts = losses.loss_values, losses.loss_counts
    else:
        ls, _ = as_losses_and_scores(losses, uncertainty)  # type: ignore[arg-type]
        values, counts = np.unique(ls, return_counts=True)
    return counts, values / c * counts  # / c is exact: scaled before it can overflow



class RiskCoverageCurve(NamedTuple):
    """Risk-coverage curve, one point per distinct uncertainty value.

    Attributes
    ----------
    coverage : ndarray of shape (G,)
        Fraction of samples with ``uncertainty <= thresholds[g]``, increasing.
    risk : ndarray of shape (G,)
        Mean loss of those samples (the empirical selective risk).
    thresholds : ndarray of shape (G,)
        The distinct uncertainty values, ascending.
    """

    coverage: NDArray[np.float64]
    risk: NDArray[np.float64]
    thresholds: NDArray[np.float64]


def risk_coverage_curve(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None = None
) -> RiskCoverageCurve:
    """Empirical risk-coverage (RC) curve of a score (Franc et al. 2023, section 3.1).

    For each distinct value ``t`` of ``uncertainty`` the selective classifier that
    accepts ``uncertainty <= t`` has coverage ``#{u <= t} / n`` and selective risk
    ``sum(losses[u <= t]) / #{u <= t}``. Tied samples are accepted together, so the
    curve has one point per distinct value and does not depend on the row order.

    Parameters
    ----------
    losses : array-like of shape (n,), or ScoreTable
        Non-negative per-sample loss of the classifier, or a table of the rows (then
        ``uncertainty`` is omitted).
    uncertainty : array-like of shape (n,)
        Finite scores; higher is rejected first.

    Returns
    -------
    RiskCoverageCurve
        ``(coverage, risk, thresholds)``, each of shape (G,), G distinct values.

    Examples
    --------
    >>> from abstain.metrics import risk_coverage_curve
    >>> cov, risk, thr = risk_coverage_curve([0, 1, 0, 1], [0.1, 0.9, 0.1, 0.5])
    >>> cov.tolist(), risk.tolist(), thr.tolist()
    ([0.5, 0.75, 1.0], [0.0, 0.3333333333333333, 0.5], [0.1, 0.5, 0.9])
    """
    groups = _groups(losses, uncertainty)
    n = groups.n
    # in units of the power of two groups.scale: no overflow for losses near 1e308
    risk = groups.unit_cum_sums / groups.cum_counts
    return RiskCoverageCurve(groups.cum_counts / n, risk * groups.scale, groups.values)


def _expected_prefix_losses(
    losses: NDArray[np.float64], uncertainty: NDArray[np.float64], ties: str
) -> NDArray[np.float64]:
    """``L(i)``, the summed loss of the ``i`` first accepted samples, i = 1..n.

    With ``ties="mean"`` the expectation over a random order inside tie groups: a
    prefix that takes ``k`` of the ``m`` samples of a group holds in expectation
    ``k / m`` of the group's loss: ``E[L(i)]`` interpolates linearly between the
    running totals at group boundaries.
    """
    _, ls, ends = sorted_by_uncertainty(losses, uncertainty)  # ties in row order
    if ties == "index" or ends is None:
        return np.cumsum(ls, out=ls)
    counts = np.diff(ends, prepend=-1)
    starts = ends - counts + 1
    group_sums = np.add.reduceat(ls, starts)
    before = np.cumsum(group_sums) - group_sums  # exact for integer losses
    # E[L(i)] = (loss before the group) + (i - start) * (group mean): one rounding per
    # term, so no error accumulates along the sorted order.
    prefix = np.arange(1.0, ls.size + 1.0)
    prefix -= np.repeat(starts.astype(np.float64), counts)
    prefix *= np.repeat(group_sums / counts, counts)
    prefix += np.repeat(before, counts)
    return prefix


@validate_params({"ties": [Options(_TIES)]})
def aurc(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None = None, *, ties: str = "mean"
) -> float:
    """Area under the risk-coverage curve, eq. (27) of Franc et al. (2023).

    ``AuRC = (1/n) * sum_{i=1..n} (1/i) * L(i)``, where ``L(i)`` is the summed loss of
    the ``i`` samples with the lowest uncertainty: the mean selective risk over the
    coverages ``1/n, 2/n, ..., 1``.

    Parameters
    ----------
    losses : array-like of shape (n,), or ScoreTable
        Non-negative per-sample loss (0/1, absolute error, any structured loss), or a
        table of the rows (then ``uncertainty`` is omitted; ``ties="mean"`` only).
    uncertainty : array-like of shape (n,)
        Finite scores; higher is rejected first.
    ties : {"mean", "index"}, default "mean"
        ``"mean"``: the exact expected AuRC over a uniformly random order of tied
        samples; invariant to the row order. ``"index"``: the paper's rule, a stable
        sort that accepts the lower row index first among ties.

    Returns
    -------
    float
        The AuRC, in the units of the loss.

    Examples
    --------
    All scores tied and 30% errors: every coverage has expected risk 0.3.

    >>> from abstain.metrics import aurc
    >>> errors = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    >>> round(aurc(errors, [0.5] * 10), 12)
    0.3
    >>> round(aurc(errors, [0.5] * 10, ties="index"), 4)  # errors in the first rows
    0.6287
    """
    area, c = _unit_area(losses, uncertainty, ties, generalized=False)
    return area * c


def _area(counts: NDArray[np.int64] | None, sums: NDArray[Any], *, generalized: bool,
          n_rows: int | None = None) -> float:
    """AuRC (or AUGRC) under ``ties="mean"`` from per-group totals of ``n_rows`` rows (the
    sum of the counts where omitted), in O(G)."""
    if n_rows is None:
        n_rows = sums.size if counts is None else int(np.sum(counts))
    n = float(n_rows)
    if counts is None and generalized:  # one row per group: the plain prefix sum alone
        return float(np.sum(np.cumsum(sums, dtype=np.float64))) / n / n
    inverse, plain = expected_prefix_areas(counts, sums, n_rows)
    return plain / n / n if generalized else inverse / n


def _scale_of(top: float) -> float:
    """The power of two at or below ``top`` (1 if ``top <= 1``): see :func:`_unit_scale`."""
    if top <= 1.0:
        return 1.0
    return float(np.ldexp(1.0, int(np.frexp(top)[1]) - 1))


def _unit_scale(ls: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """``(ls / c, c)`` with ``c`` the power of two at or below the largest loss (1 if <= 1).

    The metrics below are linear in the losses: computed on ``ls / c`` and multiplied by
    ``c`` they cannot overflow for losses near the float64 maximum, and a power of two
    scales without rounding.
    """
    c = _scale_of(float(ls.max()))
    return (ls, c) if c == 1.0 else (ls / c, c)


def _aurc(ls: NDArray[np.float64], u: NDArray[np.float64], ties: str) -> float:
    """AuRC of validated arrays."""
    prefix = _expected_prefix_losses(ls, u, ties)
    prefix /= np.arange(1, ls.size + 1, dtype=np.float64)
    return float(np.sum(prefix) / ls.size)


def _unit_area(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None, ties: str, *,
    generalized: bool,
) -> tuple[float, float]:
    """``(area, c)``: the AuRC (or AUGRC) of the losses divided by ``c``, and ``c``.

    ``c`` is the power of two of :func:`_unit_scale`; ``area * c`` is the metric. Checks
    the input as :func:`aurc` documents (its decorator has checked ``ties``).
    """
    as_groups(losses, uncertainty, "losses", "uncertainty", ties)  # refuses what cannot be
    if ties == "index":
        ls, u = as_losses_and_scores(losses, uncertainty)  # type: ignore[arg-type]
        ls, c = _unit_scale(ls)
        if generalized:
            prefix = _expected_prefix_losses(ls, u, ties)
            return float(np.sum(prefix) / ls.size / ls.size), c
        return _aurc(ls, u, ties), c
    counts, sums, c, n = _totals(losses, uncertainty)
    return _area(counts, sums, generalized=generalized, n_rows=n), c


@validate_params({"ties": [Options(_TIES)]})
def e_aurc(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None = None, *, ties: str = "mean"
) -> float:
    """Excess AuRC: ``aurc(losses, uncertainty) - aurc(losses, losses)``.

    The oracle score ranks the samples by their own loss, which gives the smallest
    AuRC any score can reach on this sample (Geifman et al. 2019). The result is
    non-negative and zero for a score that orders the samples like the loss does (a
    difference of the two areas within the round-off of their sums, a relative
    ``4 (n + 2) eps``, is taken as none).

    Parameters
    ----------
    losses, uncertainty : array-like of shape (n,)
        As in :func:`aurc`.
    ties : {"mean", "index"}, default "mean"
        Tie rule for ``uncertainty``; the oracle order has no ties that matter.

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain.metrics import e_aurc
    >>> e_aurc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4])
    0.0
    >>> round(e_aurc([1, 0, 0, 0], [0.4, 0.1, 0.2, 0.3]), 4)
    0.0
    >>> round(e_aurc([0, 0, 0, 1], [0.4, 0.1, 0.2, 0.3]), 4)
    0.0833
    """
    score_area, c = _unit_area(losses, uncertainty, ties, generalized=False)
    oracle = _area(*_oracle_totals(losses, uncertainty, c), generalized=False)
    # the two areas are summed by different formulas (row by row, tie group by tie group):
    # a difference within their round-off is none, so an oracle order gives 0 exactly
    n = losses.n if isinstance(losses, ScoreTable) else len(np.asarray(losses))
    excess = score_area - oracle
    return excess * c if excess > sum_round_off(n) * score_area else 0.0


@validate_params({"ties": [Options(_TIES)]})
def augrc(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None = None, *, ties: str = "mean"
) -> float:
    """Area under the generalized risk-coverage curve.

    The generalized risk at coverage ``i/n`` is the joint probability of acceptance
    and loss, ``L(i) / n``; its area with the same coverage grid as eq. (27) is
    ``AUGRC = (1/n^2) * sum_{i=1..n} L(i)``. For 0/1 losses with error rate ``e``
    this equals ``(1 - AUROC) * e * (1 - e) + e^2 / 2 + e / (2 n)``, where AUROC
    counts ties as one half: the last term is the step of the grid and vanishes
    as ``n`` grows.

    Parameters
    ----------
    losses, uncertainty : array-like of shape (n,)
        As in :func:`aurc`.
    ties : {"mean", "index"}, default "mean"
        As in :func:`aurc`.

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain.metrics import augrc
    >>> augrc([0, 1], [0.1, 0.9])
    0.25
    """
    area, c = _unit_area(losses, uncertainty, ties, generalized=True)
    return area * c


def _named_target(func: str, name: str, value: Any, losses: Any, uncertainty: Any) -> float:
    """The target ``value``, or the message for one left out: a table's target given in
    the place of ``uncertainty`` is named as such."""
    if value is None:
        table = isinstance(losses, ScoreTable) and np.ndim(uncertainty) == 0
        raise ValueError(f"{name} must be given" + (
            f" by name with a ScoreTable (the second place is uncertainty's): {func}(table, "
            f"{name}={plain(uncertainty)})" if table and uncertainty is not None else "")
            + "; got None.")
    return float(value)


@validate_params({"coverage": [Interval(float, 0, 1, closed="right"), None]})
def selective_risk_at_coverage(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None = None,
    coverage: float | None = None,
) -> float:
    """Lowest selective risk at an exact coverage, as the bounded-abstention model.

    The rule accepts the samples with the lowest uncertainty until ``coverage * n``
    are accepted in expectation; the group of ties at the boundary (or a single
    sample when ``coverage * n`` is fractional) is accepted with the probability
    that makes the expected coverage exact (a ``coverage * n`` within a relative 1e-12 of
    a whole number is that number, as in the model). The result is the expected accepted
    loss over the expected accepted count, eq. (6), and equals ``risk_`` of
    ``BoundedAbstention(target_coverage=coverage)`` fitted on the same data.

    Parameters
    ----------
    losses, uncertainty : array-like of shape (n,)
        As in :func:`aurc`.
    coverage : float in (0, 1]
        Target coverage.

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain.metrics import selective_risk_at_coverage
    >>> selective_risk_at_coverage([0, 1, 0, 1], [0.1, 0.9, 0.1, 0.5], 0.75)
    0.3333333333333333
    >>> selective_risk_at_coverage([0, 1, 1, 0], [0.2, 0.2, 0.2, 0.2], 0.25)
    0.5
    """
    cov = _named_target("selective_risk_at_coverage", "coverage", coverage, losses, uncertainty)
    groups = _groups(losses, uncertainty)
    # the rule of that coverage and its risk, as BoundedAbstention fits and reports them
    return groups.risk_of(*groups.rule_at(coverage_count(cov, groups.n)))


@validate_params({"target_risk": [Interval(float, 0, None, closed="neither"), None]})
def coverage_at_risk(
    losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None = None,
    target_risk: float | None = None,
) -> float:
    """Highest coverage whose selective risk is at most ``target_risk``.

    The maximum expected coverage over all randomised threshold rules (accept
    ``u < theta``, accept ``u == theta`` with probability ``nu``) with selective risk
    ``<= target_risk``, the bounded-improvement model on this sample. It equals
    ``coverage_`` of ``BoundedImprovement(target_risk=target_risk)`` fitted on the
    same data, and is 0.0 when no rule with positive coverage meets the target
    (the target is below the lowest selective risk of any threshold rule).
    The comparison with the target allows a relative 1e-12 for float round-off,
    so a target equal to an attainable risk is met however the sums were rounded.

    Parameters
    ----------
    losses, uncertainty : array-like of shape (n,)
        As in :func:`aurc`.
    target_risk : float > 0
        Bound on the selective risk, in the units of the loss.

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> from abstain.metrics import coverage_at_risk
    >>> coverage_at_risk([0, 0, 1, 0], [0.1, 0.2, 0.3, 0.4], 0.25)
    1.0
    >>> coverage_at_risk([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], 0.25)
    0.6666666666666666
    """
    lam = _named_target("coverage_at_risk", "target_risk", target_risk, losses, uncertainty)
    groups = _groups(losses, uncertainty)
    return groups.max_accepted_at_risk(lam) / groups.n


def sele_loss(losses: ArrayLike | ScoreTable, uncertainty: ArrayLike | None = None) -> float:
    """SELE loss, eq. (29) of Franc et al. (2023).

    ``sele = (1/n^2) * sum_i sum_j loss_i * [u_i <= u_j]``, computed in O(n log n);
    tied pairs count. With distinct scores ``sele_loss <= aurc``, and
    ``aurc <= H_n * sele_loss`` always (``H_n`` the n-th harmonic number, attained
    when only the most confident sample has a loss).

    Theorem 8 of the paper states ``aurc < 2 * sele_loss`` for any score; its proof
    needs the losses to be non-decreasing along the accepted order (as for the
    oracle score), and the statement fails otherwise: losses ``[1, 0, 0, 0]`` with
    scores ``[0, 1, 2, 3]`` give ``aurc = 25/48 > 1/2 = 2 * sele_loss``.

    Parameters
    ----------
    losses, uncertainty : array-like of shape (n,)
        As in :func:`aurc`.

    Returns
    -------
    float

    Examples
    --------
    >>> from abstain.metrics import sele_loss
    >>> sele_loss([1, 0], [0.1, 0.9])
    0.5
    """
    counts, sums, c, n_rows = _totals(losses, uncertainty)
    m = np.ones(n_rows) if counts is None else counts.astype(np.float64)
    n = float(m.sum())
    # sum_i loss_i * #{j : u_j >= u_i}: each group's loss times the count at or above it.
    at_or_above = n - np.concatenate(([0.0], np.cumsum(m)[:-1]))
    return float(np.sum(sums * at_or_above) / (n * n)) * c
