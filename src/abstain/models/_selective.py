"""The three reject models of Franc et al. (2023) and their common optimum.

Each model is fitted on calibration data ``(uncertainty, losses)`` and returns the
randomised Bayes selection function of eq. (25)::

    c(x) = 1   if s(x) <  threshold_
           nu  if s(x) == threshold_     (nu = accept_prob_)
           0   if s(x) >  threshold_

The fit is the exact optimum on the calibration sample over all such randomised
threshold rules. Tie rule: samples with equal uncertainty are accepted or rejected
together, with the same probability. A fitted rule is stored canonically:
``threshold_`` is an observed uncertainty value and ``accept_prob_`` is in (0, 1];
the rule that rejects everything has ``threshold_ = -inf``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._certify.certify import (
    BOUNDS,
    certified_search,
    check_crc_losses,
    crc_sums_exact,
    fit_groups,
    refuse_delta_with_guarantee,
    refuse_expected,
)
from .._certify.ltt import LTT_BOUNDS
from .._certify.risk_bounds import crc_search
from .._core.base import ParamsMixin, warn
from .._core.decision import check_infeasible_rule, draw_accept, threshold_proba
from .._core.exact import sum_round_off, sums_exact
from .._core.groups import TieGroups, coverage_count, validated_groups
from .._core.serialize import (
    Field,
    Flag,
    Int,
    Number,
    Text,
    Tup,
    dumps,
    serializable,
)
from .._core.validation import (
    Interval,
    Options,
    RandomState,
    as_scores,
    plain,
)
from ..exceptions import InfeasibleTargetWarning
from ..tables._binned import BinnedTable
from ..tables._score import ScoreTable, as_groups, selective_table, table_or_none
from ._equivalent import EquivalentModels, equivalent_models

__all__ = [
    "EquivalentModels",
    "CostBased",
    "BoundedImprovement",
    "BoundedAbstention",
]


class _RejectRule(ParamsMixin):
    """Shared machinery of the fitted randomised threshold rules."""

    random_state: Any
    equivalent_: EquivalentModels | None

    def _after_load(self) -> None:
        check_infeasible_rule(bool(self.feasible_), float(self.threshold_))
        thr = float(self.threshold_)
        if thr == math.inf and getattr(self, "bound_", None) is None:
            raise ValueError("fitted.threshold_ may be inf (accept every new row) only for a "
                             "rule certified with delta or conformal risk control; got inf.")
        if self.n_samples_ > 0:  # fitted on rows (CostBased's plug-in rule has none)
            if math.isnan(self.coverage_):
                raise ValueError("fitted.coverage_ must be a number for a rule fitted on "
                                 f"{self.n_samples_} rows; got \"nan\".")
            # -inf accepts no row; a finite one with accept_prob_ 1 accepts its group whole
            if (thr == -math.inf and self.coverage_ > 0.0) or (
                    thr > -math.inf and self.coverage_ == 0.0 and self.accept_prob_ == 1.0):
                raise ValueError(f"fitted.threshold_ must be -inf exactly where the rule "
                                 f"accepts no row (fitted.coverage_ 0); got {plain(thr)} at "
                                 f"coverage {plain(self.coverage_)}.")
            # a fit has a risk exactly where it accepts something
            if math.isnan(self.risk_) != (self.coverage_ == 0.0):
                raise ValueError(f"fitted.risk_ must be \"nan\" exactly where fitted.coverage_ "
                                 f"is 0; got {plain(self.risk_)} at coverage "
                                 f"{plain(self.coverage_)}.")
            self._check_rows()
        eq = self.equivalent_
        if eq is None:
            return
        for name in ("target_risk", "reject_cost"):
            pair = getattr(eq, name)
            if pair is not None and not pair[0] <= pair[1]:
                raise ValueError(f"fitted.equivalent_.{name} must be an interval [low, high] "
                                 f"with low <= high; got {list(pair)!r}.")
        if eq.target_risk is not None and eq.target_risk[0] != float(self.risk_):
            raise ValueError(f"fitted.equivalent_.target_risk must start at fitted.risk_ = "
                             f"{plain(self.risk_)}; got {list(eq.target_risk)!r}.")
        _at_most("fitted.equivalent_.target_coverage", eq.target_coverage, "fitted.coverage_",
                 self.coverage_, both=True)

    def _check_rows(self) -> None:
        """Refuse a coverage that no rule on ``n_samples_`` rows has: a rule accepting whole
        tie groups (``accept_prob_`` 1) covers a whole number of rows; one that accepts a
        part ``p`` of its threshold group rejects at least ``1 - p`` of a row. Both within the
        round-off of ``coverage_ * n_samples_`` (a fit's coverage is its count over ``n``;
        ``BoundedAbstention`` writes its target, a whole count within a relative 1e-12)."""
        n, cov, p = self.n_samples_, float(self.coverage_), float(self.accept_prob_)
        rows = cov * n
        slack = 1e-9 * max(rows, 1.0)
        if p == 1.0 and abs(rows - round(rows)) > slack:
            raise ValueError(f"fitted.coverage_ must be a whole number of the "
                             f"fitted.n_samples_ = {n} rows for a rule with fitted.accept_prob_ "
                             f"1 (whole tie groups); got {plain(cov)} ({rows!r} rows).")
        if p < 1.0 and (1.0 - cov) * n < (1.0 - p) - slack:
            raise ValueError(f"fitted.coverage_ must leave at least 1 - fitted.accept_prob_ = "
                             f"{plain(1.0 - p)} of a row of the fitted.n_samples_ = {n} "
                             f"rows rejected (the rest of the threshold group); got {plain(cov)}.")

    def _set_rule(self, groups: TieGroups | None, g: int, nu: float, feasible: bool) -> None:
        if groups is None:
            return
        n = groups.n
        if g < 0:
            self.threshold_ = -math.inf
            self.accept_prob_ = 1.0
        else:
            self.threshold_ = float(groups.values[g])
            self.accept_prob_ = float(nu)
        x = groups.accepted_at(g, nu)
        self.coverage_ = x / n
        self.risk_ = groups.risk_of(g, nu) if x > 0 else math.nan
        self.feasible_ = bool(feasible)
        self.n_samples_ = int(n)
        self.equivalent_ = equivalent_models(groups, g, nu)

    def score(self, uncertainty: ArrayLike) -> NDArray[np.float64]:
        """The score the rule thresholds: the validated ``uncertainty`` itself (a copy).

        Parameters
        ----------
        uncertainty : array-like of shape (n,)
            Scores of new inputs, on the scale the rule was fitted on.

        Returns
        -------
        ndarray of shape (n,)
            Higher = rejected first.
        """
        self._check_fitted("threshold_")
        return as_scores(uncertainty, allow_empty=True).copy()

    def accept_proba(self, uncertainty: ArrayLike) -> NDArray[np.float64]:
        """Acceptance probability ``c(x)`` of eq. (25) for each score.

        Parameters
        ----------
        uncertainty : array-like of shape (n,)
            Scores of new inputs, on the scale the rule was fitted on.

        Returns
        -------
        ndarray of shape (n,)
            1.0 below ``threshold_``, ``accept_prob_`` at it, 0.0 above.
        """
        u = self.score(uncertainty)
        return threshold_proba(u, self.threshold_, self.accept_prob_)

    def accept(self, uncertainty: ArrayLike) -> NDArray[np.bool_]:
        """Draw the randomised accept decision for each score.

        Inputs at the threshold are accepted with probability ``accept_prob_``, drawn
        from ``numpy.random.default_rng(random_state)``; an int ``random_state``
        makes every call return the same decisions.

        Returns
        -------
        ndarray of bool, shape (n,)
            True where the prediction is accepted.
        """
        return draw_accept(self.accept_proba(uncertainty), self.random_state)

    # -- serialisation ----------------------------------------------------------
    _FIELDS: dict[str, Field] = {
        "threshold_": Number(special=("-inf",)),
        "accept_prob_": Number(0.0, 1.0, low_open=True),
        "coverage_": Number(0.0, 1.0),
        "risk_": Number(0.0, special=("nan",)),
        "feasible_": Flag(),
        "n_samples_": Int(0, 2**63 - 1),  # rows counted in int64
        "equivalent_": Tup(
            Number(0.0, 1.0),
            Tup(Number(0.0, special=("inf",)), Number(0.0, special=("inf",)), none=True),
            Tup(Number(0.0, special=("inf",)), Number(0.0, special=("inf",)), none=True),
            convert=EquivalentModels, none=True,
        ),
    }

    def to_json(self) -> str:
        """Serialise the parameters and fitted rule to a JSON string.

        Non-finite floats are written as the strings ``"inf"``, ``"-inf"``, ``"nan"``
        so the file is standard JSON. Load it with :func:`abstain.load_json`.
        """
        return dumps(self)


@serializable("rule")
class CostBased(_RejectRule):
    """Cost-based reject model (Chow's rule), Problem 1 of Franc et al. (2023).

    Minimises the expected risk of eq. (1): the loss of an accepted prediction, or
    ``reject_cost`` for a rejected one. Fitted on calibration data it returns the
    threshold rule with the lowest empirical cost ``mean(c * loss + (1 - c) * reject_cost)``;
    among rules of equal cost it takes the one with the largest coverage (a
    randomised acceptance never lowers a linear cost, so ``accept_prob_`` is 1). Two
    rules' costs are equal when they differ by less than the round-off of their sums
    (``4 (n + 2) eps`` times the losses and reject costs that each sums, with ``n`` the
    rows, or the tie groups where every sum of the losses is exact: whole-number losses
    below 2**53 in all), so the rule does not depend on the order in which a tie group's
    losses are added.
    ``fit()`` with no data gives the plug-in rule for a conditional-risk score:
    accept when ``r(x) <= reject_cost`` (eq. 4; at ``r(x) == reject_cost`` any
    acceptance probability is optimal and 1 is used).

    Parameters
    ----------
    reject_cost : float > 0
        The cost ``epsilon`` of abstaining, in the units of the loss.
    random_state : int, numpy Generator or None
        Seed for :meth:`accept` (unused here, accepted for a uniform interface).

    Attributes
    ----------
    threshold_, accept_prob_ : float
        The rule of eq. (25).
    coverage_, risk_ : float
        Coverage and selective risk on the calibration data (NaN for ``fit()``).
    cost_ : float
        Empirical cost of the rule (NaN for ``fit()``).
    feasible_ : bool
        Always True.
    equivalent_ : EquivalentModels or None
        Parameters of the other models giving the same rule.

    Examples
    --------
    >>> from abstain import CostBased
    >>> rule = CostBased(reject_cost=0.3).fit([0.1, 0.2, 0.6, 0.9], [0, 0, 1, 1])
    >>> rule.threshold_, rule.coverage_, rule.cost_
    (0.2, 0.5, 0.15)
    >>> CostBased(reject_cost=0.3).fit().accept_proba([0.1, 0.3, 0.5]).tolist()
    [1.0, 1.0, 0.0]
    """

    def __init__(self, reject_cost: float = 0.5, *, random_state: Any = None) -> None:
        self.reject_cost = reject_cost
        self.random_state = random_state

    _FIELDS: dict[str, Field] = {
        "coverage_": Number(0.0, 1.0, special=("nan",)),
        "cost_": Number(0.0, special=("nan",)),
        "accept_prob_": Number(1.0, 1.0),  # every fit accepts whole tie groups
    }

    _parameter_constraints = {"reject_cost": [Interval(float, 0, None, closed="neither")],
                              "random_state": [RandomState()]}

    def _after_load(self) -> None:
        super()._after_load()
        eps = float(self.reject_cost)
        if self.n_samples_ == 0:  # the plug-in rule of fit() without data
            if (float(self.threshold_) != eps or not math.isnan(self.coverage_)
                    or not math.isnan(self.risk_) or not math.isnan(self.cost_)
                    or self.equivalent_ is not None):
                raise ValueError(f"fitted.threshold_ must be params.reject_cost ({eps!r}), "
                                 f"and fitted.coverage_, risk_, cost_ and equivalent_ absent, "
                                 f"for the rule fitted without data (fitted.n_samples_ 0); got "
                                 f"threshold_ {plain(self.threshold_)}.")
            return
        # its cost is its risk and coverage at this reject cost
        cov = float(self.coverage_)
        cost = (0.0 if cov == 0.0 else float(self.risk_) * cov) + eps * (1.0 - cov)
        _at_most("fitted.cost_", float(self.cost_), "fitted.risk_ times fitted.coverage_ plus "
                 "params.reject_cost times the rest", cost, both=True)
        eq = self.equivalent_
        if eq is not None and eq.reject_cost is not None:
            low, high = eq.reject_cost
            if not low * (1 - 1e-9) <= eps <= high * (1 + 1e-9):
                raise ValueError(f"params.reject_cost must lie in fitted.equivalent_.reject_cost "
                                 f"[{plain(low)}, {plain(high)}], the costs at which the rule is "
                                 f"optimal; got {plain(eps)}.")

    def fit(
        self, uncertainty: ArrayLike | None = None, losses: ArrayLike | None = None
    ) -> CostBased:
        """Fit on calibration data, or with no data the plug-in rule ``threshold = reject_cost``.

        Parameters
        ----------
        uncertainty : array-like of shape (n,), ScoreTable or BinnedTable, optional
        losses : array-like of shape (n,), optional
            Both or neither, or a :class:`~abstain.ScoreTable` (or a
            :class:`~abstain.BinnedTable`: whole bins) of the rows as ``uncertainty`` with
            ``losses`` omitted.

        Returns
        -------
        self
        """
        self._validate_params()
        eps = float(self.reject_cost)
        uncertainty, _ = _whole_bins(uncertainty, losses)  # accepts whole groups anyway
        table = table_or_none(uncertainty, {"losses": losses})
        if table is None and (uncertainty is None or losses is None):
            if (uncertainty is None) != (losses is None):
                raise ValueError(
                    "uncertainty and losses must be given together, or both omitted."
                )
            self.threshold_ = eps
            self.accept_prob_ = 1.0
            self.coverage_ = self.risk_ = self.cost_ = math.nan
            self.feasible_ = True
            self.n_samples_ = 0
            self.equivalent_ = None
            return self
        groups = (validated_groups(losses, uncertainty) if table is None  # type: ignore[arg-type]
                  else selective_table(table).groups())
        # whole-number losses summed below 2**53: every group's sum is exact, and only the
        # G groups' terms round (not the n rows': 0.4 of the costs at n = 4.5e14)
        exact = (table.binary and table.n < 2**53 if table is not None
                 else sums_exact(np.asarray(losses, dtype=np.float64)))
        # Costs in units of the power of two groups.scale, enlarged for a reject cost near
        # the float64 maximum: exact scaling, so no sum of losses or costs overflows.
        groups = groups.rescaled(eps)
        unit_eps = eps / groups.scale
        # Per-group change of cost when accepting it, and the cost of each prefix. Costs
        # within the round-off of these sums are equal (a group's losses are summed in row
        # order, so their last bits may fall either way: a group of mean loss 0.3 against a
        # reject cost of 0.3); among the least, the largest coverage.
        cost = np.concatenate(([0.0], np.cumsum(groups.unit_sums - unit_eps * groups.counts)))
        slack = _cost_round_off(groups, unit_eps, exact)
        best = int(np.flatnonzero(cost - slack <= np.min(cost + slack))[-1])
        self._set_rule(groups, best - 1, 1.0, True)
        # (accepted loss + eps * rejected rows) / n, not cost[best] + eps: with a reject cost
        # far above the losses that sum would cancel to 0.
        # (the rejected share is exact at coverage 0 and 1: the cost is then the reject
        # cost, or the mean loss, to the last bit)
        accepted, n = float(groups.knots_x[best]), float(groups.n)
        if accepted in (0.0, n):  # the reject cost, or the mean loss, to the last bit
            unit_cost = unit_eps if accepted == 0.0 else float(groups.unit_knots_y[best]) / n
        else:  # correctly rounded, in rationals (7 / 10 read 0.7000000000000001)
            unit_cost = float((Fraction(float(groups.unit_knots_y[best]))
                               + Fraction(unit_eps) * int(n - accepted)) / int(n))
        self.cost_ = float(unit_cost) * groups.scale
        return self


def _cost_round_off(groups: TieGroups, unit_eps: float, exact: bool = False
                    ) -> NDArray[np.float64]:
    """A bound on the round-off of each of :class:`CostBased`'s prefix costs (knots
    ``0..G``, in units of ``groups.scale``): ``4 (n + 2) eps`` times the losses and reject
    costs summed up to it, or ``4 (G + 2) eps`` where the groups' loss sums are ``exact``
    (the G terms of the running cost round, not the n losses)."""
    magnitude = groups.unit_knots_y + unit_eps * groups.knots_x
    return sum_round_off(groups.counts.size if exact else groups.n) * magnitude


def _at_most(name: str, value: float, bound_name: str, bound: float, *,
             both: bool = False) -> None:
    """Refuse a loaded ``value`` above ``bound`` (``both``: other than it) beyond a relative
    1e-9, the round-off a fit leaves between fields derived from the same sums."""
    slack = max(1e-9 * abs(bound), 2e-323)  # among the subnormals: a few of their ulps
    if value > bound + slack or (both and value < bound - slack):
        raise ValueError(f"{name} must be {'' if both else 'at most '}{bound_name} ({bound!r}) "
                         f"as a fit makes it; got {value!r}.")


@serializable("rule")
class BoundedAbstention(_RejectRule):
    """Bounded-abstention model, Problem 5 of Franc et al. (2023).

    Minimal selective risk at coverage at least ``target_coverage``, by the paper's
    optimal strategy with the score in place of the conditional risk (so minimal when the
    score orders the inputs as their conditional risk does; a score that does not may
    reach a lower risk at a larger coverage). The fitted rule
    has expected coverage exactly ``target_coverage`` on the calibration data: it
    accepts the lowest scores and randomises on the tie group at the boundary
    (eqs. 22-24), which for untied scores means accepting one sample with a
    fractional probability when ``n * target_coverage`` is not an integer.

    Parameters
    ----------
    target_coverage : float in (0, 1]
    random_state : int, numpy Generator or None
        Seed for the randomised decisions of :meth:`accept`.

    Attributes
    ----------
    threshold_, accept_prob_ : float
    coverage_, risk_ : float
        ``coverage_ == target_coverage``; ``risk_`` is the rule's selective risk there.
    feasible_ : bool
        Always True.
    equivalent_ : EquivalentModels

    Examples
    --------
    >>> from abstain import BoundedAbstention
    >>> rule = BoundedAbstention(target_coverage=0.5).fit([0.1, 0.5, 0.5, 0.9], [0, 0, 1, 1])
    >>> rule.threshold_, rule.accept_prob_, rule.coverage_, rule.risk_
    (0.5, 0.5, 0.5, 0.25)
    """

    def __init__(self, target_coverage: float = 0.9, *, random_state: Any = None) -> None:
        self.target_coverage = target_coverage
        self.random_state = random_state

    _FIELDS: dict[str, Field] = {"threshold_": Number()}

    _parameter_constraints = {"target_coverage": [Interval(float, 0, 1, closed="right")],
                              "random_state": [RandomState()]}

    def _after_load(self) -> None:
        super()._after_load()
        if self.n_samples_ == 0:
            raise ValueError("fitted.n_samples_ must be at least 1 (a fit on rows); got 0.")
        # the target coverage exactly, or at least it where a BinnedTable's bin is whole
        _at_most("params.target_coverage", self.target_coverage, "fitted.coverage_",
                 self.coverage_, both=self.accept_prob_ < 1.0)

    def fit(self, uncertainty: ArrayLike | ScoreTable,
            losses: ArrayLike | None = None) -> BoundedAbstention:
        """Fit on calibration data.

        Parameters
        ----------
        uncertainty : array-like of shape (n,), ScoreTable or BinnedTable
            Scores, or a :class:`~abstain.ScoreTable` of the rows (then ``losses`` is
            omitted), or a :class:`~abstain.BinnedTable`: the rule then accepts whole bins
            only, so its coverage, risk and bound are exact on the rows and a bin straddling
            the boundary counts against the target (rounded down to the last bin within the
            risk target; up to the first bin reaching the coverage target).
        losses : array-like of shape (n,)

        Returns
        -------
        self
        """
        self._validate_params()
        omega = float(self.target_coverage)
        uncertainty, whole = _whole_bins(uncertainty, losses)
        groups = as_groups(uncertainty, losses, "uncertainty", "losses")
        if groups is None:
            groups = validated_groups(losses, uncertainty)  # type: ignore[arg-type]
        g, nu = groups.rule_at(coverage_count(omega, groups.n))
        if whole:  # the bin at the boundary is accepted whole: coverage >= the target
            nu = 1.0
        self._set_rule(groups, g, nu, True)
        if not whole:
            self.coverage_ = omega
        return self


@serializable("rule")
class BoundedImprovement(_RejectRule):
    """Bounded-improvement model, Problem 3 of Franc et al. (2023).

    Maximal coverage whose selective risk is at most ``target_risk``.

    With ``delta=None`` the fit is the exact optimum on the calibration data: the
    largest expected coverage of any randomised threshold rule with empirical
    selective risk ``<= target_risk`` (Theorem 3; the tie group at the boundary is
    accepted with the probability that makes the risk exactly the target; a risk within
    a relative 1e-12 above the target meets it, as in ``coverage_at_risk``).

    With ``delta`` set, the rule carries a guarantee: with probability at least
    ``1 - delta`` over the calibration sample (i.i.d. rows, not used to train the score),
    its true selective risk ``E[loss | accepted]`` is at most ``target_risk``. The rule
    accepts ``s <= threshold_`` (``accept_prob_ = 1``; tied scores are accepted together).
    ``bound`` chooses the procedure (docs/guarantees.md compares them):

    ``"sgr"``
        Selection with guaranteed risk (Geifman and El-Yaniv 2017): a binary search over
        the ``G`` tie groups with ``K = ceil(log2(G + 1))`` tests, each at level
        ``delta / K``, with the exact binomial (Clopper-Pearson) bound for 0/1 losses and,
        for other losses, the smaller of Hoeffding's and Maurer and Pontil's empirical
        Bernstein bound, each at level ``delta / (2 K)``. The threshold is an observed score.
    ``"binomial"``, ``"hb"``, ``"wsr"``
        Learn-then-Test (Angelopoulos et al. 2021) with fixed-sequence testing, each test at
        the full level ``delta``, with the exact binomial p-value (0/1 losses only), the
        Hoeffding-Bentkus p-value or the Waudby-Smith-Ramdas betting p-value. Every tenth
        row (rows 0, 10, 20, ...) fixes the grid of thresholds (200 quantiles of its scores
        and ``+inf``) and the start of the sequence; the other rows test the grid from the
        start upwards and the rule is the last threshold of the passing run. The threshold
        is a grid point: it may lie between observed scores, or be ``+inf`` (accept all).
    ``"auto"`` (default)
        ``"binomial"`` for 0/1 losses, ``"wsr"`` for other losses: the tightest of these
        for the loss type. On a :class:`~abstain.ScoreTable` (which keeps no rows to split)
        ``"sgr"``; naming a Learn-then-Test procedure with a table raises ``ValueError``.

    With ``guarantee="expected_joint"`` (and ``delta=None``) the rule is conformal risk
    control (Angelopoulos, Bates, Fisch, Lei and Schuster 2022) of the *joint* risk
    ``E[loss * 1{accepted}]``, the generalised risk whose area is AUGRC: for a new row
    exchangeable with the calibration rows, it is at most ``target_risk`` in expectation
    over the calibration sample, the new row and the acceptance draw. It is the largest
    rule whose accepted calibration losses ``S`` meet ``(S + loss_bound) / (n + 1) <=
    target_risk``; tie rule: the group at the boundary is accepted with the probability
    ``accept_prob_`` that makes this an equality, exactly in rationals where the loss
    sums are exact, else below by their round-off (the proof, in
    ``abstain._certify.risk_bounds.crc_search``, covers randomised rules), and the rule
    accepts everything new (``threshold_ = +inf``) when all calibration rows fit. The
    selective risk ``E[loss | accepted]`` is *not* controlled by it, neither in
    expectation nor with high probability (its loss is not monotone in the threshold);
    ``guarantee="expected"`` is refused for that reason. ``bound_`` is ``"crc"`` and
    ``risk_bound_`` the left side of the inequality.

    ``loss_bound`` is never inferred from the data (the largest observed loss is no bound
    on the next one): losses must lie in ``[0, loss_bound]``; 0/1 losses need no bound.

    An infeasible target is an explicit result: ``feasible_`` is False, the rule
    rejects everything and an :class:`InfeasibleTargetWarning` says what is attainable.

    Parameters
    ----------
    target_risk : float > 0
        Bound on the selective risk, in the units of the loss.
    delta : float in (0, 1) or None, default None
        Allowed probability that the guarantee fails.
    bound : {"auto", "sgr", "binomial", "hb", "wsr"}, default "auto"
        The procedure that gives the guarantee (unused without ``delta``).
    guarantee : {None, "expected_joint"}, default None
        None: the empirical optimum, or with ``delta`` the selective risk with probability
        ``1 - delta``. ``"expected_joint"``: conformal risk control of the joint risk
        ``E[loss * 1{accepted}] <= target_risk`` (needs ``delta=None``).
    loss_bound : float > 0, default 1.0
        Upper bound ``B`` on the loss, used by the bounds for losses other than 0/1 and
        by conformal risk control (for every loss, 0/1 ones included).
    random_state : int, numpy Generator or None
        Seed for the randomised decisions of :meth:`accept`.

    Attributes
    ----------
    threshold_, accept_prob_ : float
    coverage_, risk_ : float
        Coverage and empirical selective risk on the calibration data.
    feasible_ : bool
    min_risk_ : float
        Lowest empirical selective risk any threshold rule attains on the data.
    risk_bound_ : float
        With ``delta``: the upper confidence bound on the true selective risk of the
        returned rule at the level its procedure tests (``delta / K`` for ``"sgr"``,
        ``delta`` for the others), at most ``target_risk`` (NaN without ``delta`` or
        when infeasible). With ``guarantee="expected_joint"``:
        ``(S + loss_bound) / (n + 1)``, at most ``target_risk``.
    bound_ : str or None
        The procedure that gave the guarantee (``"auto"`` resolved, ``"crc"`` for
        ``guarantee="expected_joint"``); None for the empirical optimum.
    equivalent_ : EquivalentModels

    Examples
    --------
    >>> from abstain import BoundedImprovement
    >>> rule = BoundedImprovement(target_risk=0.25).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
    >>> rule.threshold_, round(rule.accept_prob_, 4), round(rule.coverage_, 4), rule.risk_
    (0.3, 0.6667, 0.6667, 0.25)
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> u = rng.random(2000)
    >>> loss = (rng.random(2000) < u / 4).astype(float)   # risk of accepting u <= t: t / 8
    >>> rule = BoundedImprovement(0.05, delta=0.1).fit(u, loss)
    >>> rule.bound_, bool(rule.risk_bound_ <= 0.05), round(rule.coverage_, 2)
    ('binomial', True, 0.25)
    >>> joint = BoundedImprovement(0.05, guarantee="expected_joint").fit(u, loss)
    >>> joint.bound_, round(joint.risk_bound_, 6), round(joint.coverage_ * joint.risk_, 4)
    ('crc', 0.05, 0.0495)
    """

    def __init__(
        self,
        target_risk: float = 0.05,
        *,
        delta: float | None = None,
        bound: str = "auto",
        guarantee: str | None = None,
        loss_bound: float = 1.0,
        random_state: Any = None,
    ) -> None:
        self.target_risk = target_risk
        self.delta = delta
        self.bound = bound
        self.guarantee = guarantee
        self.loss_bound = loss_bound
        self.random_state = random_state

    _FIELDS: dict[str, Field] = {
        "threshold_": Number(special=("-inf", "inf")),
        "min_risk_": Number(0.0),
        "risk_bound_": Number(0.0, special=("nan",)),
        "bound_": Text(("sgr", *LTT_BOUNDS, "crc"), none=True),
    }

    _parameter_constraints = {"target_risk": [Interval(float, 0, None, closed="neither")],
                              "delta": [Interval(float, 0, 1, closed="neither"), None],
                              "bound": [Options(BOUNDS)],
                              "guarantee": [Options(("expected_joint",)), None],
                              "loss_bound": [Interval(float, 0, None, closed="neither")],
                              "random_state": [RandomState()]}

    def _validate_params(self) -> None:
        refuse_expected(self.guarantee)
        super()._validate_params()
        refuse_delta_with_guarantee(self.guarantee, self.delta)

    def _after_load(self) -> None:
        super()._after_load()
        # the fitted guarantee is the one the parameters ask for, as fit makes it
        allowed: tuple[str | None, ...]
        if self.guarantee is not None:
            allowed = ("crc",)
        elif self.delta is None:
            allowed = (None,)
        else:
            allowed = ("sgr", *LTT_BOUNDS) if self.bound == "auto" else (self.bound,)
        if self.bound_ not in allowed:
            names = " or ".join("null" if b is None else repr(b) for b in allowed)
            raise ValueError(f"fitted.bound_ must be {names} for params.delta = {self.delta!r}, "
                             f"params.guarantee = {self.guarantee!r} and params.bound = "
                             f"{self.bound!r}; got {self.bound_!r}.")
        if self.bound_ is None and not math.isnan(self.risk_bound_):
            raise ValueError("fitted.risk_bound_ must be \"nan\" for a rule fitted without delta "
                             f"or guarantee; got {self.risk_bound_!r}.")
        if self.bound_ is not None and self.feasible_:
            if math.isnan(self.risk_bound_):
                raise ValueError(f"fitted.risk_bound_ must be a number for a rule fitted with "
                                 f"the {self.bound_!r} bound; got \"nan\".")
        if self.n_samples_ == 0:
            raise ValueError("fitted.n_samples_ must be at least 1 (a fit on rows); got 0.")
        if not math.isnan(self.risk_):
            _at_most("fitted.min_risk_", self.min_risk_, "fitted.risk_", self.risk_)
        target = float(self.target_risk)
        if self.bound_ is None and self.feasible_ != (self.coverage_ > 0.0):
            raise ValueError(f"fitted.feasible_ must be true exactly where the rule accepts rows "
                             f"(fitted.coverage_ above 0) for a rule fitted without delta or "
                             f"guarantee; got {str(bool(self.feasible_)).lower()} at coverage "
                             f"{plain(self.coverage_)}.")
        if self.bound_ is None and not self.feasible_ and self.min_risk_ < target * (1 - 1e-9):
            raise ValueError(f"fitted.min_risk_ must be above params.target_risk ({plain(target)}) "
                             f"for an infeasible rule fitted without delta or guarantee (a rule "
                             f"of that risk meets the target); got {plain(self.min_risk_)}.")
        if not self.feasible_:
            return
        if self.bound_ is None and not math.isnan(self.risk_):
            _at_most("fitted.risk_", self.risk_, "params.target_risk", target)
        if self.bound_ is not None:
            _at_most("fitted.risk_bound_", self.risk_bound_, "params.target_risk", target)
        if self.bound_ not in (None, "crc") and self.accept_prob_ != 1.0:
            raise ValueError("fitted.accept_prob_ must be 1 for a certified rule (it accepts "
                             f"whole tie groups); got {self.accept_prob_!r}.")

    def fit(self, uncertainty: ArrayLike | ScoreTable,
            losses: ArrayLike | None = None) -> BoundedImprovement:
        """Fit on calibration data.

        Parameters
        ----------
        uncertainty : array-like of shape (n,), ScoreTable or BinnedTable
            Scores, or a :class:`~abstain.ScoreTable` of the rows (then ``losses`` is
            omitted), or a :class:`~abstain.BinnedTable`: the rule then accepts whole bins
            only, so its coverage, risk and bound are exact on the rows and a bin straddling
            the boundary counts against the target (rounded down to the last bin within the
            risk target; up to the first bin reaching the coverage target).
        losses : array-like of shape (n,)

        Returns
        -------
        self
        """
        self._validate_params()
        lam = float(self.target_risk)
        uncertainty, whole = _whole_bins(uncertainty, losses)
        groups, top, binary, squares = fit_groups(uncertainty, losses)
        self.min_risk_ = float(np.min(groups.unit_cum_sums / groups.cum_counts)) * groups.scale
        self.risk_bound_ = math.nan
        self.bound_ = None
        theta = least = math.nan
        if self.guarantee is not None:
            check_crc_losses(top, self.loss_bound)
            g, nu, bound = crc_search(groups, lam, float(self.loss_bound),
                                      crc_sums_exact(uncertainty, losses))
            if whole and nu < 1.0:  # down to the last whole bin: a smaller rule stays valid
                g, nu = g - 1, 1.0
                bound = (float(groups.cum_sums[g]) + self.loss_bound) / (
                    groups.n + 1.0) if g >= 0 else math.nan
            self.bound_, self.risk_bound_ = "crc", float(bound)
            if g == groups.counts.size - 1 and nu == 1.0:
                theta = math.inf
        elif self.delta is None:
            g, nu = groups.max_rule_at_risk(lam)
            if whole and nu < 1.0:  # down to the last whole bin: the bin at the boundary
                g, nu = g - 1, 1.0  # would break it
        else:
            self.bound_, g, theta, self.risk_bound_, least = certified_search(
                uncertainty, losses, groups, top, binary, squares, lam, float(self.delta),
                float(self.loss_bound), self.bound)
            nu = 1.0
        feasible = g >= 0
        self._set_rule(groups, g, nu, feasible)
        if feasible and not math.isnan(theta):
            self.threshold_ = theta
        if not feasible and self.guarantee is not None:
            warn(
                f"target_risk={plain(lam)} is infeasible for conformal risk control: accepting "
                f"anything needs (accepted losses + loss_bound) / (n + 1) <= target_risk, "
                f"and n + 1 = {groups.n + 1:g} rows give at least "
                f"{self.loss_bound / (groups.n + 1):.6g}; the rule rejects everything.",
                InfeasibleTargetWarning,
                stacklevel=2,
            )
        elif not feasible:
            what = "risk bound" if self.delta is not None else "selective risk"
            attainable = self.min_risk_ if self.delta is None else least
            warn(InfeasibleTargetWarning(
                f"target_risk={plain(lam)} is infeasible on this data: no threshold rule has a "
                f"{what} at or below it (lowest empirical selective risk {self.min_risk_:.6g}); "
                "the rule rejects everything.",
                attainable=None if math.isnan(attainable) else attainable), stacklevel=2)
        return self


def _whole_bins(uncertainty: Any, losses: Any) -> tuple[Any, bool]:
    """``(the table of a BinnedTable's bins, True)``, or ``(uncertainty, False)``."""
    if isinstance(uncertainty, BinnedTable):
        if losses is not None:
            raise ValueError("losses must be omitted when a BinnedTable is given in place of "
                             "the arrays; the table already holds them.")
        if uncertainty.marked:
            raise ValueError("this BinnedTable has OOD marks; the selective reject models take "
                             "one built without is_ood.")
        return uncertainty.whole_bin_table(), True
    return uncertainty, False
