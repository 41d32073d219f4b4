"""Thresholds whose false-alarm rate is at most alpha with probability 1 - delta
(Algorithms 2-3)."""

from __future__ import annotations

import decimal
import fractions
import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._core.base import ParamsMixin
from .._core.serialize import Field, Int, Number, dumps, serializable
from .._core.validation import Boolean, Interval, as_scores, plain, validate_params


# --------------------------------------------------------------------------- FAR guarantee
class FARGuarantee(NamedTuple):
    """Algorithm 2 of the paper on the integer grid: the largest usable order statistic.

    Attributes
    ----------
    feasible : bool
        Whether some threshold at a calibration value meets the guarantee.
    rank : int
        ``l``: flag ``statistic > l``-th largest calibration statistic (0 if infeasible:
        flag nothing).
    level : float
        ``l / (n + 1)``: the same rule on conformal p-values, ``p <= level`` (the paper
        returns ``a = (l + 0.99) / (n + 1)``, an equivalent level).
    achieved_alpha : float
        ``alpha_delta = Beta(l, n + 1 - l).isf(delta)``: the FAR is at most this with
        probability at least ``1 - delta`` (0 if infeasible).
    min_n : int
        The smallest calibration size for which the target is feasible:
        ``ceil(log(delta) / log(1 - alpha))``.
    """

    feasible: bool
    rank: int
    level: float
    achieved_alpha: float
    min_n: int


#: Up to this many rows a tail within round-off of delta is settled in exact arithmetic.
_EXACT_N = 5000
_EPS = float(np.finfo(np.float64).eps)


def _binomial_cdf_at_most(n: int, p: Fraction, k: int, bound: Fraction) -> bool:
    """Whether ``Pr{Bin(n, p) <= k} <= bound``, exactly (``p`` and ``bound`` rationals).

    Every term ``C(n, j) p^j (1 - p)^(n - j)`` has the denominator ``den(p)^n``, so the
    numerators are summed as integers and compared once (a sum of ``Fraction`` terms reduced
    each sum by a gcd of numbers of ``53 n`` bits: up to 240 s at ``n = 5,000``), by the
    recurrence ``T_m = Q T_(m-1) + C(n, m) P^m`` for ``T_m = sum_(j <= m) C(n, j) P^j
    Q^(m - j)`` (each step a product by a small number), times ``Q^(n - k)`` once."""
    P, S = p.numerator, p.denominator
    Q = S - P
    total, comb, p_pow = 1, 1, 1
    for m in range(1, k + 1):
        comb, p_pow = comb * (n - m + 1) // m, p_pow * P
        total = total * Q + comb * p_pow
    return total * Q ** (n - k) * bound.denominator <= bound.numerator * S**n


def _min_n(alpha: float, delta: float) -> int:
    """The least ``n`` with ``(1 - alpha)^n <= delta`` (``l = 1`` feasible), in closed form.

    Below ``2**50`` the float64 estimate ``log(delta) / log1p(-alpha)`` is corrected by
    a step or two (consecutive ``n`` give distinct products there), and where the products
    of ``n - 1`` or ``n`` lie within their round-off of ``log(delta)`` the least ``n`` is
    taken in exact (``n`` up to 5,000) or decimal arithmetic; above ``2**50``, where a float
    no longer tells ``n`` from ``n + 1``, the quotient is taken in decimal arithmetic
    (:func:`_min_n_decimal`). Either way the work does not grow with ``1 / alpha`` or
    ``1 / delta``.
    """
    log_d, log_q = math.log(delta), math.log1p(-alpha)
    if not log_d / log_q < 2.0**50:  # also an infinite quotient, for alpha below 1e-308
        return _min_n_decimal(alpha, delta)
    n = max(1, math.ceil(log_d / log_q))
    while n > 1 and (n - 1) * log_q <= log_d:
        n -= 1
    while n * log_q > log_d:
        n += 1
    tol = 64 * _EPS * abs(log_d) + 1e-300
    close = min(abs(k * log_q - log_d) for k in (n - 1, n)) <= tol
    if close and n > _EXACT_N:
        # the float products decide n only beyond their round-off (n near 1e14, alpha near
        # 1e-14: one row off in 7 of 3,000 draws); within it, decimal arithmetic does
        return _min_n_decimal(alpha, delta)
    if close:
        # (1 - alpha)^n or (1 - alpha)^(n - 1) within round-off of delta (the float steps
        # above may have stopped one past an exact equality): the least n in exact arithmetic
        q, dd = 1 - Fraction(alpha), Fraction(delta)
        while n > 1 and q ** (n - 1) <= dd:
            n -= 1
        while q**n > dd:
            n += 1
    return n


def _min_n_decimal(alpha: float, delta: float) -> int:
    """``ceil(log(delta) / log(1 - alpha))`` in decimal arithmetic, for a large quotient.

    The quotient ``q`` is below ``745 / alpha``: it has at most ``3 + ceil(-log10(alpha))``
    digits before the point, and the context keeps 40 more, so rounding moves it by less
    than ``1e-35``. For ``alpha < 1e-12``, ``-log(1 - alpha)`` is its series to the fourth
    term (relative error below ``alpha**4 < 1e-48``, which moves ``q`` by less than
    ``1e-33``). The ceiling is exact unless ``q`` lies that close to a whole number.
    """
    with decimal.localcontext() as ctx:
        ctx.prec = 43 + max(0, math.ceil(-math.log10(alpha)))
        a = decimal.Decimal(alpha)
        if alpha < 1e-12:
            minus_log_q = a * (1 + a / 2 + a * a / 3 + a * a * a / 4)
        else:
            minus_log_q = -(1 - a).ln()
        q = -decimal.Decimal(delta).ln() / minus_log_q
        return max(1, int(q.to_integral_value(rounding=decimal.ROUND_CEILING)))


@validate_params({"alpha": [Interval(float, 0, 1, closed="neither")],
                  "delta": [Interval(float, 0, 1, closed="neither")]})
def far_guarantee(n: int, alpha: float, delta: float) -> FARGuarantee:
    """The conformal level that bounds the false-alarm rate with high probability.

    With ``n`` exchangeable inlier calibration statistics, the detector that flags a test
    statistic above the ``l``-th largest calibration value has a random FAR (over the
    draw of the calibration set) distributed as ``Beta(l, n + 1 - l)`` for continuous
    statistics (eq. 24 with ``l = floor((n + 1) a)``), and stochastically smaller with
    ties. This returns the largest ``l`` in ``1..n`` with
    ``Pr{FAR > alpha} = Beta(l, n + 1 - l).sf(alpha) <= delta``, by bisection on the
    integer ``l`` (the paper's Algorithm 2 bisects on ``a``; both give the same ``l``).
    Infeasible (``n < min_n``) is a result, not an error: ``feasible=False``, ``rank=0``.

    Parameters
    ----------
    n : int in [1, 2**53]
        Calibration size.
    alpha : float in (0, 1)
        Target maximal FAR.
    delta : float in (0, 1)
        Allowed probability that the FAR exceeds ``alpha``.

    Examples
    --------
    >>> from abstain.combine import far_guarantee
    >>> g = far_guarantee(1000, alpha=0.05, delta=0.1)
    >>> g.feasible, g.rank, g.min_n
    (True, 41, 45)
    >>> round(g.achieved_alpha, 4)
    0.0492
    >>> far_guarantee(40, alpha=0.05, delta=0.1).feasible
    False
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer; got {plain(n)}.")
    if n > 2**53:
        raise ValueError(f"n must be at most 2**53 = {2**53} (the largest calibration size "
                         f"float64 counts exactly); got {plain(n)}.")
    a, d = float(alpha), float(delta)
    n = int(n)
    need = _min_n(a, d)

    def ok(rank: int) -> bool:
        # Pr{FAR > alpha} <= delta, from the smaller tail, which is accurate: near delta = 1
        # the upper tail is 1 less a tiny number and rounds (1 - delta is exact there)
        tail = (stats.beta.cdf(a, rank, n + 1 - rank) if d > 0.5
                else stats.beta.sf(a, rank, n + 1 - rank))
        if not math.isfinite(tail):
            raise ValueError(f"the binomial tail of n = {n} rows at alpha = {plain(a)} is not "
                             "computable in float64 (SciPy returns NaN); use fewer rows.")
        bound = 1.0 - d if d > 0.5 else d
        if abs(tail - bound) <= 64 * _EPS * bound and n <= _EXACT_N:
            # within round-off of delta: Pr{Bin(n, alpha) <= rank - 1} <= delta, exactly
            return _binomial_cdf_at_most(n, Fraction(a), rank - 1, Fraction(d))
        return bool(tail >= bound) if d > 0.5 else bool(tail <= bound)

    if n < need or not ok(1):
        return FARGuarantee(False, 0, 0.0, 0.0, need)
    lo, hi = 1, n  # ok(lo) holds; find the largest l with ok(l)
    if ok(hi):
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    # the (1 - delta)-quantile of the FAR, at most alpha since ok(lo) holds (isf may round
    # it an ulp above)
    achieved = min(float(stats.beta.isf(d, lo, n + 1 - lo)), a)
    return FARGuarantee(True, lo, lo / (n + 1.0), achieved, need)


@validate_params({"alpha": [Interval(float, 0, 1, closed="neither")]})
def conformal_threshold(cal_stat: ArrayLike, alpha: float) -> float:
    """The plain split-conformal threshold: FAR <= ``alpha`` in expectation only (eq. 23).

    The ``ceil((n + 1)(1 - alpha))``-th smallest calibration statistic; flagging
    ``statistic > threshold`` has ``E[FAR] <= alpha`` over calibration draws, but a FAR
    above ``alpha`` for about half of them (its FAR is ``Beta(l, n + 1 - l)`` with
    ``l = floor((n + 1) alpha)``). Use :class:`GuaranteedDetector` for a bound that
    holds with probability ``1 - delta``. Refuses ``n < 1 / alpha``. Ties: the order
    statistic of the sorted calibration values (ties kept), flag ``statistic > threshold``.

    Parameters
    ----------
    cal_stat : array-like of shape (n,)
        Inlier calibration statistics (higher = more OOD).
    alpha : float in (0, 1)

    Examples
    --------
    >>> from abstain.combine import conformal_threshold
    >>> conformal_threshold(list(range(1, 21)), alpha=0.1)
    19.0
    """
    a = float(alpha)
    cal = as_scores(cal_stat, "cal_stat")
    n = cal.size
    inverse = 1.0 / a
    # 1e-12 forgives the rounding of alpha (alpha = 1/3 needs 3 values); beyond 2**53 the
    # float 1 / alpha is no whole count (or is inf, alpha < 5.6e-309): exact arithmetic
    need = (math.ceil(inverse - 1e-12) if inverse < 2.0**53
            else math.ceil(fractions.Fraction(1) / fractions.Fraction(a)))
    if n < need:
        raise ValueError(f"cal_stat must hold at least ceil(1/alpha) = {need} values for "
                         f"alpha={plain(alpha)}; got {n}.")
    # = ceil((n + 1)(1 - alpha)); a relative 1e-12 forgives the rounding of alpha (an
    # absolute 1e-9 also swallowed an alpha set 1e-11 below 0.1 on purpose)
    x = (n + 1) * a
    k = n + 1 - (round(x) if abs(x - round(x)) <= 1e-12 * x else math.floor(x))
    # at least the smallest: an alpha within 1e-12 of 1 rounds (n + 1) alpha up to n + 1,
    # and k = 0 read the largest value, which flags nothing
    k = max(k, 1)
    return float(np.partition(cal, k - 1)[k - 1])


@serializable("combine")
class GuaranteedDetector(ParamsMixin):
    """OOD detector whose FAR is at most ``alpha`` with probability ``>= 1 - delta``.

    Algorithm 3 of the paper: fitted on the statistics of ``n`` inlier calibration
    inputs (independent of the data that built the statistic), it flags a test statistic
    as OOD when it exceeds the ``rank_``-th largest calibration value, the rank given by
    :func:`far_guarantee`. Equivalently: conformal p-value ``<= level_``. The guarantee
    is over the draw of the calibration set and holds for any exchangeable inlier
    statistics (ties only make the FAR smaller). Ties: an input tied with the threshold
    is an inlier (``stat > threshold_`` is strict), which is exactly Algorithm 3's
    ``q_hat <= (rank_ + 0.99) / (n + 1)`` with the tie rule of :func:`conformal_pvalues`.
    :func:`conformal_threshold` is the plain rule with ``E[FAR] <= alpha`` only.

    :meth:`score` is the statistic in the library's direction (higher = more OOD),
    :meth:`accept` is True for an input kept as an inlier (``score <= threshold_``) and
    ``~accept`` flags OOD.

    Parameters
    ----------
    alpha : float in (0, 1), default 0.05
        Target maximal false-alarm rate.
    delta : float in (0, 1), default 0.1
        Allowed probability (over calibration draws) that the FAR exceeds ``alpha``.
    higher_is_inlier : bool, default False
        Negate the statistics in ``fit`` and :meth:`score` (for a statistic such as the
        paper's ``t_GLRT``, where smaller = more OOD).

    Attributes
    ----------
    threshold_ : float
        Flag ``score(stat) > threshold_`` (the statistic after any negation).
    rank_ : int
    level_ : float
    achieved_alpha_ : float
        The FAR bound that holds with probability ``1 - delta`` (``<= alpha``).
    n_calibration_ : int

    Raises
    ------
    ValueError
        In ``fit``, when ``n < min_n`` (no order statistic meets the guarantee); the
        message names ``min_n``.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.combine import GuaranteedDetector
    >>> cal = np.random.default_rng(0).normal(size=1000)
    >>> det = GuaranteedDetector(alpha=0.05, delta=0.1).fit(cal)
    >>> det.rank_, round(det.achieved_alpha_, 4)
    (41, 0.0492)
    >>> det.accept([0.0, 5.0]).tolist()        # True = kept as an inlier
    [True, False]
    """

    def __init__(self, *, alpha: float = 0.05, delta: float = 0.1,
                 higher_is_inlier: bool = False) -> None:
        self.alpha = alpha
        self.delta = delta
        self.higher_is_inlier = higher_is_inlier

    _parameter_constraints = {"alpha": [Interval(float, 0, 1, closed="neither")],
                              "delta": [Interval(float, 0, 1, closed="neither")],
                              "higher_is_inlier": [Boolean()]}

    def fit(self, cal_stat: ArrayLike) -> GuaranteedDetector:
        """Choose the threshold from inlier calibration statistics of shape (n,)."""
        self._validate_params()
        flip = bool(self.higher_is_inlier)
        cal = as_scores(cal_stat, "cal_stat")
        if flip:
            cal = -cal
        n = cal.size
        g = far_guarantee(n, self.alpha, self.delta)
        if not g.feasible:
            raise ValueError(
                f"cal_stat must hold at least {g.min_n} values for FAR <= "
                f"alpha={plain(self.alpha)} "
                f"with probability >= 1 - delta={plain(self.delta)}; got {n}."
            )
        self.threshold_ = float(np.partition(cal, n - g.rank)[n - g.rank])
        self.rank_ = g.rank
        self.level_ = g.level
        self.achieved_alpha_ = g.achieved_alpha
        self.n_calibration_ = n
        return self

    def score(self, stat: ArrayLike) -> NDArray[np.float64]:
        """The statistic in the library's direction (higher = more OOD), shape (k,).

        ``stat`` itself (a copy), negated when ``higher_is_inlier``: the value compared
        with ``threshold_``.
        """
        self._check_fitted("threshold_")
        s = as_scores(stat, "stat", allow_empty=True)
        return -s if self.higher_is_inlier else s.copy()

    def accept(self, stat: ArrayLike) -> NDArray[np.bool_]:
        """``True`` (kept as an inlier) where ``score(stat) <= threshold_``, shape (k,).

        An input tied with the threshold is accepted; ``~accept(stat)`` flags OOD.
        """
        return ~(self.score(stat) > self.threshold_)

    def accept_proba(self, stat: ArrayLike) -> NDArray[np.float64]:
        """:meth:`accept` as floats (1.0 accepted, 0.0 flagged): the rule is not randomised."""
        return self.accept(stat).astype(np.float64)

    def to_json(self) -> str:
        """Serialise to plain JSON; load with :func:`abstain.load_json`."""
        return dumps(self)

    _FIELDS: dict[str, Field] = {
        "threshold_": Number(),
        "rank_": Int(1),
        "level_": Number(0.0, 1.0, low_open=True, high_open=True),
        "achieved_alpha_": Number(0.0, 1.0),
        "n_calibration_": Int(1, 2**53),
    }

    def _after_load(self) -> None:
        if self.rank_ > self.n_calibration_:
            raise ValueError(f"fitted.rank_ must be at most fitted.n_calibration_ = "
                             f"{self.n_calibration_}; got {self.rank_}.")
        # the guarantee is a function of (n, alpha, delta): a document claims only that one
        g = far_guarantee(self.n_calibration_, float(self.alpha), float(self.delta))
        if not g.feasible:
            raise ValueError(f"fitted.n_calibration_ = {self.n_calibration_} is below the "
                             f"{g.min_n} rows that params.alpha and params.delta need.")
        if (self.rank_, self.level_) != (g.rank, g.level) or not math.isclose(
                self.achieved_alpha_, g.achieved_alpha, rel_tol=1e-9, abs_tol=1e-300):
            raise ValueError(f"fitted.rank_, level_ and achieved_alpha_ must be those of "
                             f"far_guarantee({self.n_calibration_}, alpha, delta) = {g.rank}, "
                             f"{g.level!r}, {g.achieved_alpha!r}; got {self.rank_}, "
                             f"{self.level_!r}, {self.achieved_alpha_!r}.")
