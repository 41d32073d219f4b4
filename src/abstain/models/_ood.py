"""Reject models for inputs that may be out-of-distribution (Franc, Prusa and Paplham, 2023).

A validation sample mixes in-distribution (ID) rows, with the loss of the
classifier, and OOD rows (``is_ood`` True; their loss entries are ignored). A
method gives one uncertainty score per row (a *single-score* method) or two
columns ``(s_r, s_g)``: a misclassification score and an OOD score (a
*double-score* method), combined as ``s = cos(a) * s_r + sin(a) * s_g`` for an
angle ``a`` in ``[0, pi]`` (``mu = tan(a)`` for ``a < pi/2``: ``s`` is a positive
multiple of ``s_r + mu * s_g``). A higher score is rejected first.

Every selector is the randomised threshold rule of the repository's one tie rule::

    c(x) = 1   if s(x) <  threshold_
           nu  if s(x) == threshold_     (nu = accept_prob_)
           0   if s(x) >  threshold_

so tied scores are accepted together with one probability. With ID rows positive,
``TPR = E[accepted ID] / #ID``, ``FPR = E[accepted OOD] / #OOD``, the selective risk
is the expected accepted ID loss over the expected accepted ID count, and the
precision is ``(1 - pi) TPR / ((1 - pi) TPR + pi FPR)`` with the OOD prior ``pi``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._certify.ltt import certified_tpr_fpr
from .._core.base import ParamsMixin, warn
from .._core.decision import check_infeasible_rule, draw_accept, threshold_proba
from .._core.exact import dot_sign
from .._core.serialize import Field, Flag, Int, Number, Seq, dumps, serializable
from .._core.validation import (
    Interval,
    check_random_state,
    plain,
)
from .._ood_search import search as core
from .._ood_search.sample import (
    N_DIRECTIONS,
    UNIT,
    Found,
    Sample,
    as_score_matrix,
    check_search,
    ood_fraction,
    precision_recall_constraint,
    tpr_fpr_constraint,
    validate_sample,
)
from ..exceptions import InfeasibleTargetWarning
from ..tables._pair import PairTable
from ..tables._score import ScoreTable, refuse_binned, table_or_none

__all__ = [
    "BoundedTPRFPR",
    "BoundedPrecisionRecall",
    "CostBasedOOD",
]


def _exact_below(s: NDArray[np.float64], w: NDArray[np.float64],
                 anchor: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """The highest of the score pairs ``s`` strictly below ``anchor`` along ``w``, in exact
    order (None where none is): the anchor of the next lower group."""
    n = s.shape[0]
    below = s[dot_sign(s[:, 0], s[:, 1], np.full(n, anchor[0]), np.full(n, anchor[1]),
                       float(w[0]), float(w[1])) < 0]
    if below.shape[0] == 0:
        return None
    # the float projections order them up to their round-off; the exact order among those
    # within it of the largest
    p = core.project(below, w)
    eps = float(np.finfo(np.float64).eps)
    reach = 8.0 * eps * (np.abs(w[0] * below[:, 0]) + np.abs(w[1] * below[:, 1]))
    top = below[p >= float(p.max()) - 2.0 * float(reach.max()) - 1e-300]
    best = top[0]
    for q in top[1:]:
        if dot_sign(q[:1], q[1:], best[:1], best[1:], float(w[0]), float(w[1]))[0] > 0:
            best = q
    return best.copy()


class _OODRule(ParamsMixin):
    """Shared fitted state, decisions and serialisation of the OOD selectors."""

    random_state: Any

    def _set(self, fit: Sample, found: Found | None,
             prior: float) -> None:
        self.n_id_ = fit.n_id
        self.n_ood_ = fit.n_ood
        self.n_scores_ = int(fit.s.shape[1])
        if found is None:
            self.feasible_ = False
            self.anchor_ = None
            self.weights_ = [1.0] if fit.s.shape[1] == 1 else [1.0, 0.0]
            self.threshold_, self.accept_prob_ = -math.inf, 1.0
            self.risk_ = self.tpr_ = self.fpr_ = self.precision_ = math.nan
        else:
            best, w, thr, anchor = found
            nu = best.nu
            if nu <= 0.0 and anchor is not None:  # the next lower group, fully, exactly
                anchor = _exact_below(fit.weighted_rows(), w, anchor)
                thr, nu = ((float(core.project(anchor[None, :], w)[0]), 1.0)
                           if anchor is not None else (-math.inf, 1.0))
            elif nu <= 0.0:  # accepts only the scores below thr: the next lower group, fully
                s = core.project(fit.weighted_rows(), w)
                below = s[s < thr]
                thr, nu = (float(below.max()), 1.0) if below.size else (-math.inf, 1.0)
            # the exact search's rule is the sign of (x - anchor) . w, decided exactly
            self.anchor_ = None if anchor is None else [float(v) * fit.unit for v in anchor]
            self.feasible_ = True
            self.weights_ = [float(v) for v in w]
            # on the scores given (the sample's may be divided by a power of two)
            self.threshold_, self.accept_prob_ = float(thr) * fit.unit, float(nu)
            if math.isfinite(thr) and not math.isfinite(self.threshold_):
                raise ValueError("the scores' combined score at the fitted rule exceeds the "
                                 "float64 range; divide the scores by a power of two (such "
                                 "as 2**10) and fit again.")
            # masses of running sums that were subtracted, or summed in another order than
            # the totals: within [0, total] (fpr_ -1e-16 and tpr_ 1.0000000000000002 were)
            i, o = min(max(best.I, 0.0), fit.n_id), min(max(best.O, 0.0), fit.n_ood)
            self.risk_ = max(best.L, 0.0) / i if i > 0 else math.nan
            self.tpr_, self.fpr_ = i / fit.n_id, o / fit.n_ood
            den = (1 - prior) * self.tpr_ + prior * self.fpr_
            self.precision_ = (1 - prior) * self.tpr_ / den if den > 0 else math.nan
        if self.n_scores_ == 2:
            wr, wg = self.weights_
            self.angle_ = float(math.atan2(wg, wr))
            self.mu_ = wg / wr if wr > 0 else (math.inf if wr == 0 else math.nan)
        else:
            self.angle_ = self.mu_ = math.nan

    def _search_args(self) -> tuple[str, int]:
        return check_search(self.search, self.n_directions)  # type: ignore[attr-defined]

    def score(self, scores: ArrayLike) -> NDArray[np.float64]:
        """The combined score ``scores @ weights_`` of new inputs, shape (n,)."""
        self._check_fitted("threshold_")
        s = as_score_matrix(scores)
        if s.shape[1] != self.n_scores_:
            raise ValueError(f"scores must have {self.n_scores_} column(s) as in fit; "
                             f"got {s.shape[1]}.")
        return core.project(s, np.asarray(self.weights_))

    def accept_proba(self, scores: ArrayLike) -> NDArray[np.float64]:
        """Acceptance probability: 1 below ``threshold_``, ``accept_prob_`` at it, 0 above.

        A rule of the exact search of two scores (``anchor_`` set) compares each input with
        its anchor exactly, by the sign of ``(x - anchor_) . weights_``, as the fit did: the
        combined score in floating point could tie inputs it separates (scores rounded to
        decimals) or separate inputs it ties. A row whose combined score overflows (two
        score columns near the float maximum) is compared divided by 16, as the fit
        searched such scores; the other rows as they are (a subnormal score divided by 16
        would be 0)."""
        self._check_fitted("threshold_")
        raw = as_score_matrix(scores)
        anchor = getattr(self, "anchor_", None)
        if anchor is not None:
            if raw.shape[1] != 2:
                raise ValueError(f"scores must have 2 column(s) as in fit; got {raw.shape[1]}.")
            # dot_sign takes differences beyond the float64 range in rationals: no scaling,
            # which would lose subnormal scores (5e-324 / 16 is 0)
            a = np.asarray(anchor, dtype=np.float64)
            wr, wg = self.weights_
            sign = dot_sign(raw[:, 0], raw[:, 1], np.full(raw.shape[0], a[0]),
                            np.full(raw.shape[0], a[1]), float(wr), float(wg))
            return np.where(sign < 0, 1.0, np.where(sign == 0, float(self.accept_prob_), 0.0))
        thr = float(self.threshold_)
        with np.errstate(over="ignore", invalid="ignore"):
            s = self.score(raw)
        out = threshold_proba(np.nan_to_num(s), thr, self.accept_prob_)
        wide = np.flatnonzero(~np.isfinite(s))
        if wide.size:
            # a combined score beyond the float64 range: those rows divided by 16, exactly
            # for scores of such size (the rows that fit unscaled stay so: a subnormal
            # score divided by 16 would be 0)
            out[wide] = threshold_proba(self.score(raw[wide] / UNIT), thr / UNIT,
                                        self.accept_prob_)
        return out

    def accept(self, scores: ArrayLike) -> NDArray[np.bool_]:
        """Randomised accept decisions; ties drawn from ``default_rng(random_state)``."""
        return draw_accept(self.accept_proba(scores), self.random_state)

    def _warn_infeasible(self, what: str, attainable: float | None = None) -> None:
        warn(InfeasibleTargetWarning(
            f"{what} is infeasible on this data (the paper's 'unable'); the selector rejects "
            "everything.", attainable=attainable), stacklevel=3)

    # -- serialisation ----------------------------------------------------------
    _FIELDS: dict[str, Field] = {
        "n_scores_": Int(1, 2, dim="n_scores"),
        "weights_": Seq(Number(), length="n_scores"),
        "angle_": Number(special=("nan",)),
        "mu_": Number(special=("nan", "inf")),
        "threshold_": Number(special=("-inf",)),
        "accept_prob_": Number(0.0, 1.0, low_open=True),
        "risk_": Number(0.0, special=("nan",)),
        "tpr_": Number(0.0, 1.0, special=("nan",)),
        "fpr_": Number(0.0, 1.0, special=("nan",)),
        "precision_": Number(0.0, 1.0, special=("nan",)),
        "feasible_": Flag(),
        "n_id_": Number(0.0),
        "n_ood_": Number(0.0),
        "anchor_": Seq(Number(), length=2, none=True, optional=True),
    }

    def _after_load(self) -> None:
        check_infeasible_rule(bool(self.feasible_), float(self.threshold_))
        anchor = getattr(self, "anchor_", None)
        if anchor is not None:  # the exact search's anchor projects onto threshold_
            at = (float(self.weights_[0]) * (anchor[0] / UNIT)
                  + float(self.weights_[1]) * (anchor[1] / UNIT)) if len(anchor) == 2 == len(
                      self.weights_) else None
            if (self.n_scores_ != 2 or at is None
                    or not math.isclose(at, float(self.threshold_) / UNIT, rel_tol=1e-12,
                                        abs_tol=1e-300)):
                raise ValueError("fitted.anchor_ must be the score pair at fitted.threshold_ "
                                 "along fitted.weights_ (two scores); got one that is not.")
        # The direction is one of the fit's: a unit vector (cos a, sin a), an exact normal
        # of a tied pair scaled to a largest entry in [0.5, 1), or the plug-in rule's
        # (1, mu); its angle and mu must agree with it.
        self._rates_meet_targets()
        self._rates_agree()
        w = [float(v) for v in self.weights_]
        if len(w) == 1:
            if w != [1.0]:
                raise ValueError(f"fitted.weights_ must be [1.0] for one score; got {w}.")
            if not (math.isnan(self.angle_) and math.isnan(self.mu_)):
                raise ValueError(f"fitted.angle_ and fitted.mu_ must be NaN for one score (no "
                                 f"direction); got {plain(self.angle_)} and {plain(self.mu_)}.")
            return
        unit = math.isclose(math.hypot(*w), 1.0, rel_tol=1e-9)
        normal = 0.5 <= max(abs(w[0]), abs(w[1])) < 1.0
        plug_in = w[0] == 1.0 and math.isclose(w[1], self.mu_, rel_tol=1e-12)
        if not (unit or normal or plug_in):
            raise ValueError(f"fitted.weights_ must be a unit vector, a vector of largest "
                             f"entry in [0.5, 1) or [1, mu_]; got {w}.")
        search, n_dir = self._search_args()
        on_rows = not (self._PLUG_IN and float(self.n_id_) == 0.0)
        if search == "grid" and on_rows and not np.any(np.all(
                core.grid_weights(n_dir) == np.asarray(w), axis=1)):
            # a fit on rows takes one of the grid's vectors, the same bits on every CPU
            raise ValueError(f"fitted.weights_ must be one of the params.n_directions = {n_dir} "
                             f"directions (cos a, sin a) at a = k pi / {n_dir} of "
                             f"params.search = 'grid'; got {w}.")
        if not math.isclose(math.atan2(w[1], w[0]), self.angle_, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(f"fitted.angle_ must be the angle of fitted.weights_ "
                             f"({plain(math.atan2(w[1], w[0]))}); got {plain(self.angle_)}.")
        mu = w[1] / w[0] if w[0] > 0 else (math.inf if w[0] == 0 else math.nan)
        same = (math.isnan(mu) and math.isnan(self.mu_)) or math.isclose(mu, self.mu_,
                                                                          rel_tol=1e-9)
        if not same:
            raise ValueError(f"fitted.mu_ must be fitted.weights_[1] / fitted.weights_[0] "
                             f"({plain(mu)}); got {plain(self.mu_)}.")

    def _ood_prior(self) -> tuple[float, str]:
        """The OOD prior of the fitted precision and cost, and where it comes from:
        ``ood_prior``, else the sample's OOD share."""
        prior = getattr(self, "ood_prior", None)
        if prior is not None:
            return float(prior), f"params.ood_prior = {plain(prior)}"
        share = float(self.n_ood_) / (float(self.n_id_) + float(self.n_ood_))
        return share, f"fitted.n_ood_ / (fitted.n_id_ + fitted.n_ood_) = {plain(share)}"

    def _rates_agree(self) -> None:
        """Refuse a feasible rule fitted on rows whose rates contradict each other: a fit
        has finite rates, a risk exactly where it accepts ID rows, and the precision of its
        rates at its prior (within a relative 1e-9: sums of the same numbers)."""
        rates = [float(getattr(self, r)) for r in ("tpr_", "fpr_", "risk_", "precision_")]
        if not self.feasible_ and not all(map(math.isnan, rates)):
            raise ValueError(f"fitted.tpr_, fpr_, risk_ and precision_ must be \"nan\" for an "
                             f"infeasible rule, as a fit writes them; got {plain(rates)}.")
        if float(self.n_id_) == 0.0 and self.feasible_ and not self._PLUG_IN:
            raise ValueError("fitted.n_id_ must be positive for a rule fitted on rows; got 0.")
        if not self.feasible_ or float(self.n_id_) == 0.0:  # the plug-in rule has no rates
            return
        tpr, fpr, risk = float(self.tpr_), float(self.fpr_), float(self.risk_)
        if math.isnan(tpr) or math.isnan(fpr):
            raise ValueError(f"fitted.tpr_ and fitted.fpr_ must be numbers for a rule fitted "
                             f"on rows; got {plain(tpr)} and {plain(fpr)}.")
        if math.isnan(risk) != (tpr == 0.0):
            raise ValueError(f"fitted.risk_ must be \"nan\" exactly where fitted.tpr_ is 0 (a "
                             f"rule that accepts ID rows has their risk); got {plain(risk)} at "
                             f"TPR {plain(tpr)}.")
        prior, source = self._ood_prior()
        den = (1 - prior) * tpr + prior * fpr
        want = (1 - prior) * tpr / den if den > 0 else math.nan
        got = float(self.precision_)
        if not ((math.isnan(want) and math.isnan(got))
                or math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-15)):
            raise ValueError(f"fitted.precision_ must be the precision of fitted.tpr_ and "
                             f"fitted.fpr_ at the OOD prior {source} ({plain(want)}); got "
                             f"{plain(got)}.")

    #: ``(fitted rate, parameter, at least)`` of the constraints a feasible rule meets.
    _TARGETS: tuple[tuple[str, str, bool], ...] = ()
    #: Whether a feasible rule may come from no rows (``n_id_ = 0``: the plug-in rule).
    _PLUG_IN = False

    def _rates_meet_targets(self) -> None:
        """Refuse a feasible rule whose fitted rates break its own constraints (the fit's
        rates are fractions of the sample: within 1e-9 of them)."""
        if not self.feasible_:
            return
        for rate, param, at_least in self._TARGETS:
            got, target = float(getattr(self, rate)), float(getattr(self, param))
            if not (got >= target - 1e-9 if at_least else got <= target + 1e-9):
                raise ValueError(f"fitted.{rate} must be {'>=' if at_least else '<='} "
                                 f"params.{param} = {plain(target)} for a feasible rule; got "
                                 f"{plain(got)}.")

    def _validate_search(self) -> None:
        self._search_args()
        check_random_state("random_state", self.random_state)

    def to_json(self) -> str:
        """Serialise parameters and fitted rule as plain JSON; load it with
        :func:`abstain.load_json`."""
        return dumps(self)


@serializable("ood")
class BoundedTPRFPR(_OODRule):
    """Bounded TPR-FPR model: minimal selective risk at TPR >= ``tpr`` and FPR <= ``fpr``.

    Definition 2 and Problem 1 of Franc, Prusa and Paplham (2023), fitted on a
    validation sample as problem (13), over the randomised threshold rules of one
    score or of all directions of two scores. One score: all thresholds in one
    O(n log n) sweep (Appendix B.2), exact. Two scores: ``search="grid"`` tries the
    paper's ``n_directions`` angles ``k * pi / d`` (O(d n log n)); ``search="exact"``
    returns the optimum over every direction (those at which the order of two distinct
    score pairs changes and those between two such changes), so it is never worse than
    any grid direction's linear rule. A grid rule thresholds its rounded combined score, as
    it applies it: on scores with exact collinear ties (an integer lattice) rounding can tie
    a point with one neighbour on a line and not the other, a rule no direction gives,
    which can be better than the exact optimum (by a group's share of the rows). The exact
    search finds its optimum by branch and bound over intervals of directions: a bound from
    the pairs whose order can change inside an interval prunes the intervals that cannot
    beat the best rule found, and only the others are swept exactly (docs/ood.md, "The
    exact search"; 3.3 s at n = 1e5 on a lightly loaded 2-core machine for the paper's
    synthetic pair, against hours for the sweep of every swap, O(m^2 log m) for m
    distinct pairs; slower where the objective is flat, as for :class:`CostBasedOOD`).

    Tie rule: tied scores are accepted together with one probability; the fitted
    ``accept_prob_`` makes a constraint hold with equality where that lowers the
    risk. Among rules of equal risk the one with the largest TPR is returned.

    With ``delta`` set, the rule carries a guarantee: with probability at least
    ``1 - delta`` over the validation sample (ID rows i.i.d., OOD rows i.i.d.), its true
    TPR on new ID inputs is at least ``tpr`` and its true FPR on new OOD inputs at most
    ``fpr``. Each rate is certified by the exact binomial test of Learn-then-Test
    (:class:`~abstain.BoundedImprovement`'s ``bound="binomial"``): ``1 - TPR`` as the
    rejected share of ID rows, FPR as the accepted share of OOD rows, each at level
    ``delta / 2`` and, for two scores, split again over the ``n_directions`` grid
    directions; both rates grow with the threshold, so fixed-sequence testing from the
    safe end certifies every threshold whose test passes. Among the certified rules the
    one of least empirical selective risk is returned (ties: larger TPR, then smaller
    FPR); it accepts whole tie groups (``accept_prob_ = 1``). ``search="exact"`` picks
    directions from the data and ``sample_weight`` breaks the binomial law, so neither is
    accepted with ``delta``.

    Parameters
    ----------
    tpr : float in (0, 1]
        Minimal acceptable TPR (the fraction of ID inputs accepted).
    fpr : float in [0, 1]
        Maximal acceptable FPR (the fraction of OOD inputs accepted).
    delta : float in (0, 1) or None, default None
        Allowed probability that the certified TPR or FPR fails on new data.
    search : {"grid", "exact"}, default "grid"
    n_directions : int, default 360
        Directions of the grid search.
    random_state : int, Generator or None
        Seed of :meth:`accept` on ties.

    Attributes
    ----------
    weights_ : list of float
        ``[1.0]`` for one score; ``[cos a, sin a]`` for two, or at a direction where two
        points tie, their exact normal times a power of two (largest entry in
        ``[0.5, 1)``), so that they tie exactly.
    angle_, mu_ : float
        ``a`` and ``mu = w_g / w_r`` (inf at ``a = pi/2``, NaN for ``a > pi/2``); NaN
        for one score.
    threshold_, accept_prob_ : float
        The rule on ``score(scores)``.
    anchor_ : list of 2 floats, or None
        For a rule of ``search="exact"`` on two scores, the score pair of the threshold's
        group: :meth:`accept_proba` compares inputs with it by the exact sign of
        ``(x - anchor_) . weights_``, as the fit ordered them (None otherwise).
    risk_, tpr_, fpr_, precision_ : float
        Attained on the validation sample (precision with the sample's OOD fraction).
    feasible_ : bool
        False when no rule meets both bounds (the paper's "unable"): the selector
        rejects everything, the attained values are NaN and an
        :class:`~abstain.InfeasibleTargetWarning` is issued.

    Examples
    --------
    >>> from abstain.models import BoundedTPRFPR
    >>> scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    >>> is_ood = [0, 0, 1, 0, 1, 1]
    >>> losses = [0, 1, 0, 0, 0, 0]
    >>> sel = BoundedTPRFPR(tpr=2 / 3, fpr=1 / 3).fit(scores, is_ood, losses)
    >>> sel.threshold_, round(sel.risk_, 4), sel.tpr_, round(sel.fpr_, 4)
    (0.4, 0.3333, 1.0, 0.3333)
    >>> BoundedTPRFPR(tpr=2 / 3, fpr=0.0).fit(scores, is_ood, losses).risk_
    0.5
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ood = rng.random(4000) < 0.5
    >>> s = rng.normal(size=4000) + 2.0 * ood                   # OOD inputs score higher
    >>> cert = BoundedTPRFPR(tpr=0.8, fpr=0.2, delta=0.1).fit(s, ood, np.zeros(4000))
    >>> bool(cert.tpr_ >= 0.8 and cert.fpr_ <= 0.2), cert.accept_prob_
    (True, 1.0)
    """

    def __init__(self, tpr: float = 0.95, fpr: float = 0.05, *, delta: float | None = None,
                 search: str = "grid", n_directions: int = N_DIRECTIONS,
                 random_state: Any = None) -> None:
        self.tpr = tpr
        self.fpr = fpr
        self.delta = delta
        self.search = search
        self.n_directions = n_directions
        self.random_state = random_state

    _parameter_constraints = {"tpr": [Interval(float, 0, 1, closed="right")],
                              "fpr": [Interval(float, 0, 1, closed="both")],
                              "delta": [Interval(float, 0, 1, closed="neither"), None]}
    _TARGETS = (("tpr_", "tpr", True), ("fpr_", "fpr", False))

    def _validate_params(self) -> None:
        super()._validate_params()
        self._validate_search()

    def _after_load(self) -> None:
        super()._after_load()
        if self.delta is None:
            return
        # as fit: a certified rule of whole tie groups, over a grid fixed before the data
        if self.n_scores_ == 2 and self.search == "exact":
            raise ValueError("params.search must be 'grid' with params.delta: the exact "
                             "search picks its directions from the data; got 'exact'.")
        if self.feasible_ and float(self.accept_prob_) != 1.0:
            raise ValueError(f"fitted.accept_prob_ must be 1 for a rule certified with "
                             f"params.delta (whole tie groups); got {plain(self.accept_prob_)}.")

    def fit(self, scores: ArrayLike | ScoreTable | PairTable, is_ood: ArrayLike | None = None,
            losses: ArrayLike | None = None, *,
            sample_weight: ArrayLike | None = None) -> BoundedTPRFPR:
        """Fit on a validation sample.

        Parameters
        ----------
        scores : array-like of shape (n,), (n, 1) or (n, 2), ScoreTable or PairTable
            Scores, or a :class:`~abstain.ScoreTable` built with ``is_ood`` (one score) or a
            :class:`~abstain.PairTable` (two scores) (then ``is_ood``,
            ``losses`` and ``sample_weight`` are omitted).
        is_ood : array-like of bool or 0/1, shape (n,); both classes present
        losses : array-like of shape (n,), finite and non-negative on ID rows; OOD entries
            ignored (NaN accepted there, as the file format writes it)
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        self
        """
        self._validate_params()
        tpr, fpr = float(self.tpr), float(self.fpr)
        search, d = self._search_args()
        fit = Sample.of(scores, is_ood, losses, sample_weight)
        least: list[float] = []  # per direction swept: the least FPR at TPR >= tpr
        if self.delta is None:
            con = tpr_fpr_constraint(fit, tpr, fpr)
            self._set(fit, fit.run(search, d, con, None, lambda i, o: least.append(
                core.least_fpr(i, o, fit.n_id, fit.n_ood, tpr))), ood_fraction(fit))
        else:
            if isinstance(scores, PairTable) or table_or_none(scores, {}) is not None:
                raise ValueError("delta certifies the rates by a binomial test on the rows; a "
                                 f"{type(scores).__name__} keeps no rows: fit the arrays.")
            rows = validate_sample(scores, is_ood, losses, sample_weight)  # type: ignore[arg-type]
            self._set(fit, self._certified(fit, rows, search, d, sample_weight),
                      ood_fraction(fit))
        if not self.feasible_:
            what = "" if self.delta is None else f" certified with delta {plain(self.delta)}"
            self._warn_infeasible(f"TPR >= {plain(tpr)} with FPR <= {plain(fpr)}{what}",
                                  min(least) if least else None)
        return self

    def _certified(self, fit: Sample, rows: tuple[Any, ...], search: str, d: int,
                   sample_weight: ArrayLike | None) -> Found | None:
        """The certified rule on the rows (``validate_sample``'s arrays: a one-column
        ``fit`` holds tie groups, whose marks mix ID and OOD rows)."""
        if sample_weight is not None:
            raise ValueError("sample_weight must be None with delta: weighted rows have no "
                             "binomial law to certify the rates with.")
        if search == "exact" and fit.s.shape[1] == 2:
            raise ValueError("search must be 'grid' with delta: the exact search picks its "
                             "directions from the data, which the guarantee does not allow.")
        assert self.delta is not None
        s, _, w_ood, w_loss = rows
        found = certified_tpr_fpr(s, w_ood > 0, w_loss, fit.directions(search, d),
                                  float(self.tpr), float(self.fpr), float(self.delta))
        if found is None:
            return None
        k, o, loss, risk, w, thr = found
        return (core.Best(0, 1.0, k, o, loss, risk), w, thr, None)


@serializable("ood")
class BoundedPrecisionRecall(_OODRule):
    """Bounded precision-recall model: minimal selective risk at recall and precision bounds.

    Definition 3 of Franc, Prusa and Paplham (2023), fitted as problem (14). The
    precision ``(1 - pi) TPR / ((1 - pi) TPR + pi FPR)`` uses ``ood_prior`` ``pi``, or
    the OOD fraction of the validation sample when ``ood_prior`` is None. The
    precision bound is linear in the accepted masses, so the search, the tie rule
    and the cost are those of :class:`BoundedTPRFPR`.

    Parameters
    ----------
    precision : float in (0, 1]
    recall : float in (0, 1]
        Minimal acceptable recall (TPR).
    ood_prior : float in (0, 1) or None
    search, n_directions, random_state
        As in :class:`BoundedTPRFPR`.

    Attributes
    ----------
    As in :class:`BoundedTPRFPR`; ``precision_`` uses ``ood_prior``.

    Examples
    --------
    >>> from abstain.models import BoundedPrecisionRecall
    >>> sel = BoundedPrecisionRecall(precision=0.75, recall=1.0).fit(
    ...     [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 0, 1, 0, 1, 1], [0, 1, 0, 0, 0, 0])
    >>> sel.threshold_, sel.risk_, sel.precision_
    (0.4, 0.333..., 0.75)
    """

    def __init__(self, precision: float = 0.9, recall: float = 0.9, *,
                 ood_prior: float | None = None, search: str = "grid",
                 n_directions: int = N_DIRECTIONS, random_state: Any = None) -> None:
        self.precision = precision
        self.recall = recall
        self.ood_prior = ood_prior
        self.search = search
        self.n_directions = n_directions
        self.random_state = random_state

    _parameter_constraints = {"precision": [Interval(float, 0, 1, closed="right")],
                              "recall": [Interval(float, 0, 1, closed="right")],
                              "ood_prior": [Interval(float, 0, 1, closed="neither"), None]}
    _TARGETS = (("tpr_", "recall", True), ("precision_", "precision", True))

    def _validate_params(self) -> None:
        super()._validate_params()
        self._validate_search()

    def fit(self, scores: ArrayLike | ScoreTable | PairTable, is_ood: ArrayLike | None = None,
            losses: ArrayLike | None = None, *,
            sample_weight: ArrayLike | None = None) -> BoundedPrecisionRecall:
        """Fit on a validation sample; arguments as in :meth:`BoundedTPRFPR.fit`."""
        self._validate_params()
        kappa, recall = float(self.precision), float(self.recall)
        prior = None if self.ood_prior is None else float(self.ood_prior)
        search, d = self._search_args()
        fit = Sample.of(scores, is_ood, losses, sample_weight)
        pi = ood_fraction(fit) if prior is None else prior
        con = precision_recall_constraint(fit, kappa, recall, pi)
        most: list[float] = []  # per direction swept: the most recall at precision >= kappa
        self._set(fit, fit.run(search, d, con, None, lambda i, o: most.append(
            core.most_recall(i, o, fit.n_id, fit.n_ood, kappa, pi))), pi)
        if not self.feasible_:
            self._warn_infeasible(f"recall >= {plain(recall)} with precision >= {plain(kappa)}",
                                  max(most) if most else None)
        return self


@serializable("ood")
class CostBasedOOD(_OODRule):
    """Cost-based OOD model, Definition 1 and Theorem 1 of Franc, Prusa and Paplham (2023).

    The extended loss (eq. 3) charges the ID loss for a prediction on an ID input,
    ``reject_id_cost`` (eps1) for rejecting it, ``predict_ood_cost`` (eps2) for a
    prediction on an OOD input and ``reject_ood_cost`` (eps3) for rejecting it.

    ``fit()`` with no data gives the optimal rule of Theorem 1 for two columns
    ``(r, g)``, a conditional risk and the OOD/ID likelihood ratio: accept when
    ``s_C = r + (eps2 - eps3) * pi / (1 - pi) * g <= eps1`` (``weights_ = [1, mu]``,
    ``threshold_ = eps1``; at equality any acceptance is optimal and 1 is used).
    ``fit(scores, is_ood, losses)`` minimises the empirical risk with the extended
    loss, ID and OOD parts weighted ``1 - pi`` and ``pi``, over the threshold rules
    of the scores (searched as in :class:`BoundedTPRFPR`). The objective is linear,
    so ``accept_prob_`` is 1; among rules of equal risk the largest coverage wins.

    Parameters
    ----------
    reject_id_cost, predict_ood_cost, reject_ood_cost : float >= 0
        eps1, eps2, eps3, with ``predict_ood_cost > reject_ood_cost``.
    ood_prior : float in (0, 1)
        ``pi``; for ``fit`` with data None means the sample's OOD fraction.
    search, n_directions, random_state
        As in :class:`BoundedTPRFPR`.

    Attributes
    ----------
    As in :class:`BoundedTPRFPR`, plus ``cost_``: the empirical risk (NaN for ``fit()``).

    Examples
    --------
    >>> from abstain.models import CostBasedOOD
    >>> rule = CostBasedOOD(0.3, 1.0, 0.0, ood_prior=0.5).fit()
    >>> rule.weights_, rule.threshold_
    ([1.0, 1.0], 0.3)
    >>> rule.accept_proba([[0.1, 0.1], [0.1, 0.5]]).tolist()
    [1.0, 0.0]
    """

    _PLUG_IN = True  # fit() without rows: Theorem 1's rule

    def __init__(self, reject_id_cost: float = 0.5, predict_ood_cost: float = 1.0,
                 reject_ood_cost: float = 0.0, *, ood_prior: float | None = None,
                 search: str = "grid", n_directions: int = N_DIRECTIONS,
                 random_state: Any = None) -> None:
        self.reject_id_cost = reject_id_cost
        self.predict_ood_cost = predict_ood_cost
        self.reject_ood_cost = reject_ood_cost
        self.ood_prior = ood_prior
        self.search = search
        self.n_directions = n_directions
        self.random_state = random_state

    _FIELDS: dict[str, Field] = {"cost_": Number(special=("nan",))}

    _parameter_constraints = {"reject_id_cost": [Interval(float, 0, None, closed="left")],
                              "predict_ood_cost": [Interval(float, 0, None, closed="left")],
                              "reject_ood_cost": [Interval(float, 0, None, closed="left")],
                              "ood_prior": [Interval(float, 0, 1, closed="neither"), None]}

    def _validate_params(self) -> None:
        super()._validate_params()
        if not float(self.predict_ood_cost) > float(self.reject_ood_cost):
            raise ValueError(f"predict_ood_cost must be greater than reject_ood_cost; got "
                             f"{plain(self.predict_ood_cost)} <= {plain(self.reject_ood_cost)}.")
        self._validate_search()

    def _after_load(self) -> None:
        super()._after_load()
        e1, e2, e3 = (float(self.reject_id_cost), float(self.predict_ood_cost),
                      float(self.reject_ood_cost))
        if float(self.n_id_) == 0.0 and float(self.n_ood_) == 0.0:  # the plug-in rule of fit()
            if self.ood_prior is None:
                raise ValueError("params.ood_prior must be given for the plug-in rule (fitted "
                                 "without rows); got null.")
            prior = float(self.ood_prior)
            mu = float((e2 - e3) * prior / (1 - prior))
            if ([float(v) for v in self.weights_] != [1.0, mu] or float(self.threshold_) != e1
                    or float(self.accept_prob_) != 1.0 or self.anchor_ is not None
                    or not math.isnan(self.cost_)):
                raise ValueError(f"a plug-in rule (fitted without rows) must have the weights "
                                 f"[1, {plain(mu)}], the threshold params.reject_id_cost = "
                                 f"{plain(e1)}, accept_prob_ 1, no anchor_ and a cost_ of "
                                 "\"nan\", as fit() sets them; got others.")
            return
        if self.feasible_ and float(self.accept_prob_) != 1.0:  # a linear objective
            raise ValueError(f"fitted.accept_prob_ must be 1 (whole tie groups: the cost is "
                             f"linear), as a fit sets it; got {plain(self.accept_prob_)}.")
        pi, source = self._ood_prior()
        tpr, fpr, risk = float(self.tpr_), float(self.fpr_), float(self.risk_)
        terms = [(1 - pi) * (risk * tpr if tpr > 0 else 0.0), (1 - pi) * e1 * (1 - tpr),
                 pi * e2 * fpr, pi * e3 * (1 - fpr)]
        want = math.fsum(terms)
        if not math.isclose(float(self.cost_), want, rel_tol=1e-9,
                            abs_tol=1e-12 * max(map(abs, terms))):
            raise ValueError(f"fitted.cost_ must be the extended risk of fitted.risk_, tpr_ "
                             f"and fpr_ at the costs and the OOD prior {source} "
                             f"({plain(want)}); got {plain(self.cost_)}.")

    def fit(self, scores: ArrayLike | ScoreTable | PairTable | None = None,
            is_ood: ArrayLike | None = None, losses: ArrayLike | None = None, *,
            sample_weight: ArrayLike | None = None) -> CostBasedOOD:
        """The plug-in rule of Theorem 1 (no data), or the empirical-risk minimiser."""
        self._validate_params()
        e1, e2, e3 = (float(self.reject_id_cost), float(self.predict_ood_cost),
                      float(self.reject_ood_cost))
        prior = None if self.ood_prior is None else float(self.ood_prior)
        search, d = self._search_args()
        given = [a is not None for a in (scores, is_ood, losses)]
        if not any(given):
            if prior is None:
                raise ValueError("ood_prior must be given for the plug-in rule fit(); got None.")
            mu = (e2 - e3) * prior / (1 - prior)
            if not math.isfinite(mu):
                raise ValueError(f"the plug-in rule's mu = (predict_ood_cost - reject_ood_cost)"
                                 f" * ood_prior / (1 - ood_prior) is beyond float64; got costs "
                                 f"up to {plain(e2)} at ood_prior {plain(prior)}: scale the "
                                 f"costs down.")
            self.weights_ = [1.0, float(mu)]
            self.angle_ = float(math.atan2(mu, 1.0))
            self.mu_ = float(mu)
            self.threshold_, self.accept_prob_, self.anchor_ = e1, 1.0, None
            self.risk_ = self.tpr_ = self.fpr_ = self.precision_ = self.cost_ = math.nan
            self.feasible_ = True
            self.n_id_ = self.n_ood_ = 0.0
            self.n_scores_ = 2
            return self
        refuse_binned(scores)
        if not all(given) and not isinstance(scores, (ScoreTable, PairTable)):
            raise ValueError("scores, is_ood and losses must be given together, or all omitted "
                             "(or a ScoreTable or PairTable as scores).")
        fit = Sample.of(scores, is_ood, losses, sample_weight)
        pi = ood_fraction(fit) if prior is None else prior
        # risk = (1-pi)/N_I * (L + e1 (N_I - I)) + pi/N_O * (e2 O + e3 (N_O - O))
        a, b = (1 - pi) / fit.n_id, pi / fit.n_ood
        slopes = (-a * e1, b * (e2 - e3), a)
        found = fit.run(search, d, None, slopes)
        assert found is not None
        self._set(fit, found, pi)
        # from the rule's own rates, term by term: the search's objective plus the constant
        # (1 - pi) e1 + pi e3 cancelled (0.0500002 for 0.05 at reject_id_cost 1e10)
        tpr, fpr, risk = float(self.tpr_), float(self.fpr_), float(self.risk_)
        self.cost_ = math.fsum([(1 - pi) * (risk * tpr if tpr > 0 else 0.0),
                                (1 - pi) * e1 * (1 - tpr), pi * e2 * fpr, pi * e3 * (1 - fpr)])
        return self
