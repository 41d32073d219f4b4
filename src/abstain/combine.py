"""Score combining by hypothesis testing: empirical z-values, p-values, the GLRT and the
classical combiners, and an OOD detector whose false-alarm rate (FAR) is guaranteed.

Implements sections 3.1-3.3 and Appendix A of Reehorst and Schniter, "Score combining
for contrastive OOD detection" (the paper): m base scores of a test input are mapped to
z-values with the inlier training data (eq. 21), combined into one statistic by a
generalised likelihood-ratio test (GLRT, eq. 20; with a general covariance, eqs. 31-34)
or by a classical p-value combiner, and thresholded with conformal p-values (eq. 22) at a
level that bounds the FAR with high probability (eq. 24, Algorithms 2 and 3).

Direction rule (one for the whole module)
-----------------------------------------
The paper's base scores are *inlier* scores (higher = more inlier) and its tests reject
for small statistics. Here everything follows the library's rule, **a higher value means
more OOD**:

* base scores ``S`` of shape (n, m), one column per score, are higher = more OOD;
* z-values are the paper's z-values negated: under H0 (inlier) each is (up to the ECDF's
  discreteness) N(0, 1), and OOD inputs have *positive* means, so the paper's
  negative-means problem (15), ``mu_l <= -epsilon``, is solved here as the equivalent
  positive-means problem ``mu_l >= epsilon``;
* where a combiner works on p-values, the per-column p-value of a z-value is its upper
  tail ``p = Phi(-z) = norm.sf(z)`` (one-sided; more OOD = smaller p), computed in log
  space (``log_ndtr``) so that z = 40 still gives a finite ``log p``;
* every combined statistic is higher = more OOD (a monotone increasing function of the
  negated paper statistic; each method below says which);
* a detector flags ``statistic > threshold`` (strictly) as OOD.

Scores whose larger values mean "more inlier" (CSI's cosine, norm and shift scores, a
softmax probability, ...) are negated at the edge: pass ``higher_is_inlier=True`` to
:class:`EmpiricalZ`, :class:`ScoreCombiner` or :class:`GuaranteedDetector`, which then
negate their inputs; the functions take the library direction only.

Tie rules
---------
* :class:`EmpiricalZ`: ``p_hat(s) = (1 + #{train >= s}) / (n + 2)`` and
  ``z = Phi^{-1}(1 - p_hat(s))``; a training score equal to ``s`` counts as at least as
  extreme as ``s`` (the paper's ``s_l(x_i) <= s`` of eq. 21 after the sign flip). The
  ``+1 / +2`` is the continuity correction that keeps every z finite:
  ``|z| <= Phi^{-1}(1 - 1/(n + 2))``. For a fresh inlier and continuous scores the count
  ``#{train >= s}`` is uniform on ``0..n``, so ``p_hat`` is uniform on
  ``{1, ..., n + 1} / (n + 2)`` and z is exactly symmetric about 0.
* p-values from a calibration sample count ties as at least as extreme:
  ``#{cal >= s} / n`` (eq. 9) and ``(1 + #{cal >= s}) / (n + 1)`` (conformal, eq. 22).
* Sorting combiners (Simes, HC, BJ, ALR) sort each row's p-values; tied p-values are
  interchangeable, so the statistic does not depend on how ties are ordered.
* Thresholds are order statistics of the calibration statistics; an input tied with the
  threshold is an inlier. ``statistic > l-th largest calibration value`` is exactly the
  paper's ``q_hat(x) <= (l + 0.99) / (n + 1)`` of Algorithm 3, ties included.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import linalg, special, stats
from scipy.optimize import nnls

from ._base import ParamsMixin
from ._validation import as_scores, check_choice, check_positive

__all__ = [
    "METHODS",
    "EmpiricalZ",
    "FARGuarantee",
    "GuaranteedDetector",
    "ScoreCombiner",
    "combine",
    "conformal_pvalues",
    "conformal_threshold",
    "csi_statistic",
    "empirical_pvalues",
    "far_guarantee",
    "from_json",
    "inlier_covariance",
]

F64 = NDArray[np.float64]

_FORMAT = "abstain.combine/1"

#: Names accepted by :func:`combine`, in the order of the paper's Tables 13-14.
METHODS: tuple[str, ...] = (
    "glrt", "glrt_cov", "stouffer", "fisher", "bonferroni", "simes", "hc", "bj", "alr",
)
_GLRT_METHODS = ("glrt", "glrt_cov")
_ROWS_PER_CHUNK = 1 << 15  # rows combined at once: bounds the temporaries to a few MB


# --------------------------------------------------------------------------- validation
def _as_matrix(values: ArrayLike, name: str, *, finite: bool = True) -> F64:
    """A non-empty (n_samples, n_scores) float64 array (finite unless ``finite=False``)."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be an array of real numbers; got {type(values).__name__}."
        ) from exc
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        hint = " (one sample: pass values.reshape(1, -1))" if arr.ndim == 1 else ""
        raise ValueError(
            f"{name} must be a non-empty 2-D array (n_samples, n_scores){hint}; "
            f"got an array of shape {arr.shape}."
        )
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN; got {int(np.isnan(arr).sum())}.")
    if finite and not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} must be finite; got {bad} infinite value(s).")
    return arr


def _as_pvalues(values: ArrayLike, name: str = "P") -> F64:
    arr = _as_matrix(values, name, finite=False)
    bad = ~((arr > 0.0) & (arr <= 1.0))
    if bad.any():
        first = arr[bad][0]
        raise ValueError(
            f"{name} must hold p-values in (0, 1]; got {int(bad.sum())} outside, e.g. {first!r}."
        )
    return arr


def _check_columns(name: str, arr: F64, m: int) -> None:
    if arr.shape[1] != m:
        raise ValueError(f"{name} must have {m} column(s), as in fit; got {arr.shape[1]}.")


def _check_open_unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number; got {value!r}.")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1); got {value!r}.")
    return v


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


# --------------------------------------------------------------------------- z-values
class EmpiricalZ(ParamsMixin):
    """Empirical z-values of base scores from inlier training data (eq. 21, negated).

    Column ``l`` of ``transform(S)`` is ``z_l(s) = Phi^{-1}(1 - p_hat_l(s))`` with the
    continuity-corrected upper tail ``p_hat_l(s) = (1 + #{i : S_train[i, l] >= s}) / (n + 2)``.
    This is the paper's ``-Phi^{-1}(F_hat_l(s))`` with its ECDF ``F_hat = c / n`` replaced
    by ``(c + 1) / (n + 2)``, so no z is infinite.

    Direction: inputs are higher = more OOD (set ``higher_is_inlier=True`` to negate
    inlier scores on the way in); z is N(0, 1)-like on inliers and large for OOD inputs.
    Ties: a training score equal to ``s`` counts as ``>= s``. Bounds: every z lies in
    ``[-b, b]`` with ``b = Phi^{-1}(1 - 1/(n + 2))``; on fresh inliers with continuous
    scores z is exactly symmetric about 0 (see the module docstring).

    Parameters
    ----------
    higher_is_inlier : bool, default False
        Negate ``S`` in ``fit`` and ``transform`` (for scores where larger = more inlier).

    Attributes
    ----------
    sorted_train_ : ndarray of shape (n_scores, n_train)
        The training scores of each column, sorted ascending (after any negation).
    n_train_, n_scores_ : int

    Examples
    --------
    >>> from abstain.combine import EmpiricalZ
    >>> ez = EmpiricalZ().fit([[0.0, 10.0], [1.0, 20.0], [2.0, 30.0]])
    >>> ez.transform([[1.0, 35.0], [-5.0, 20.0]]).round(3)
    array([[-0.253,  0.842],
           [-0.842, -0.253]])
    """

    def __init__(self, *, higher_is_inlier: bool = False) -> None:
        self.higher_is_inlier = higher_is_inlier

    def fit(self, S_train: ArrayLike) -> EmpiricalZ:
        """Store the sorted inlier training scores.

        Parameters
        ----------
        S_train : array-like of shape (n_train, n_scores)
            Base scores of inlier training inputs, one column per score.
        """
        flip = _check_bool("higher_is_inlier", self.higher_is_inlier)
        S = _as_matrix(S_train, "S_train")
        if flip:
            S = -S
        self.sorted_train_ = np.sort(S.T, axis=1)
        self.n_train_, self.n_scores_ = S.shape
        return self

    def transform(self, S: ArrayLike) -> F64:
        """Empirical z-values of ``S``: array of shape (n_samples, n_scores).

        Parameters
        ----------
        S : array-like of shape (n_samples, n_scores)
        """
        self._check_fitted("sorted_train_")
        arr = _as_matrix(S, "S")
        _check_columns("S", arr, self.n_scores_)
        if self.higher_is_inlier:
            arr = -arr
        n = self.n_train_
        z = np.empty(arr.shape)
        for j in range(self.n_scores_):
            below = np.searchsorted(self.sorted_train_[j], arr[:, j], side="left")
            # upper tail p = (1 + #{train >= s}) / (n + 2), lower q = (1 + #{train < s}) / (n + 2)
            p = (n + 1 - below) / (n + 2.0)
            q = (1 + below) / (n + 2.0)
            # ndtri is accurate for small arguments: evaluate it on the smaller tail
            z[:, j] = np.where(q <= 0.5, special.ndtri(q), -special.ndtri(p))
        return z

    def fit_transform(self, S_train: ArrayLike) -> F64:
        """``fit(S_train).transform(S_train)`` (in-sample z-values, as used by eq. 34)."""
        return self.fit(S_train).transform(S_train)

    def to_json(self) -> str:
        """Serialise to plain JSON (format ``abstain.combine/1``); load with :func:`from_json`."""
        self._check_fitted("sorted_train_")
        return json.dumps(self._doc(), sort_keys=True, allow_nan=False)

    def _doc(self) -> dict[str, Any]:
        return {"format": _FORMAT, "model": "EmpiricalZ",
                "params": {"higher_is_inlier": bool(self.higher_is_inlier)},
                "fitted": {"sorted_train_": self.sorted_train_.tolist()}}

    def _load(self, fitted: dict[str, Any]) -> None:
        arr = np.asarray(fitted["sorted_train_"], dtype=np.float64)
        if arr.ndim != 2 or arr.size == 0 or not np.isfinite(arr).all():
            raise ValueError("sorted_train_ must be a non-empty finite 2-D array in the file.")
        if np.any(np.diff(arr, axis=1) < 0):
            raise ValueError("sorted_train_ must be sorted ascending along each row in the file.")
        self.sorted_train_ = arr
        self.n_scores_, self.n_train_ = arr.shape


# --------------------------------------------------------------------------- p-values
def _count_ge(cal_stat: ArrayLike, stat: ArrayLike) -> tuple[NDArray[np.int64], int]:
    """``#{cal >= s}`` for every entry of ``stat`` (1-D, or column-wise for 2-D)."""
    try:
        cal = np.asarray(cal_stat, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"cal_stat must be an array of real numbers; got {type(cal_stat).__name__}."
        ) from exc
    if cal.ndim == 1:
        c = as_scores(cal, "cal_stat")
        s = as_scores(stat, "stat", allow_empty=True)
        srt = np.sort(c)
        return c.size - np.searchsorted(srt, s, side="left"), c.size
    if cal.ndim != 2:
        raise ValueError(
            f"cal_stat must be 1-D (n,) or 2-D (n, m); got an array of shape {cal.shape}."
        )
    c2 = _as_matrix(cal, "cal_stat")
    s2 = np.asarray(stat, dtype=np.float64)
    if s2.ndim != 2 or s2.shape[1] != c2.shape[1]:
        raise ValueError(
            f"stat must be 2-D with {c2.shape[1]} column(s) like cal_stat; "
            f"got an array of shape {s2.shape}."
        )
    if s2.size and not np.isfinite(s2).all():
        raise ValueError(f"stat must be finite; got {int((~np.isfinite(s2)).sum())} "
                         "NaN or infinite value(s).")
    out = np.empty(s2.shape, dtype=np.int64)
    for j in range(c2.shape[1]):
        srt = np.sort(c2[:, j])
        out[:, j] = c2.shape[0] - np.searchsorted(srt, s2[:, j], side="left")
    return out, c2.shape[0]


def empirical_pvalues(cal_stat: ArrayLike, stat: ArrayLike) -> F64:
    """Plug-in p-values of eq. (9) from a calibration sample: ``#{cal >= s} / n``.

    In the library direction a larger statistic is more extreme, so the paper's
    ``Pr{s(X) <= s | H0}`` becomes the upper tail. Ties count as at least as extreme.
    The value can be 0 (``s`` above every calibration value); use
    :func:`conformal_pvalues` for p-values in (0, 1] with a finite-sample guarantee.

    Parameters
    ----------
    cal_stat : array-like of shape (n,) or (n, m)
        Statistics of inlier calibration inputs (column-wise if 2-D).
    stat : array-like of shape (k,) or (k, m)

    Returns
    -------
    ndarray of the shape of ``stat``

    Examples
    --------
    >>> from abstain.combine import empirical_pvalues
    >>> empirical_pvalues([1.0, 2.0, 2.0, 3.0], [0.5, 2.0, 3.5]).tolist()
    [1.0, 0.75, 0.0]
    """
    count, n = _count_ge(cal_stat, stat)
    return np.asarray(count / float(n), dtype=np.float64)


def conformal_pvalues(cal_stat: ArrayLike, stat: ArrayLike) -> F64:
    """Conformal p-values of eq. (22): ``(1 + #{cal >= s}) / (n + 1)``.

    The paper's ``(1 + |{x_i : t(x_i) <= t}|) / (1 + v)`` in the library direction (a
    larger statistic is more extreme); ties count as at least as extreme, so the p-value
    is valid (``Pr{p <= a} <= a`` for an exchangeable inlier) for any score distribution.
    Values lie in ``[1/(n + 1), 1]``.

    Parameters
    ----------
    cal_stat : array-like of shape (n,) or (n, m)
        Statistics of inlier calibration inputs, independent of any data used to build
        the statistic (column-wise if 2-D).
    stat : array-like of shape (k,) or (k, m)

    Returns
    -------
    ndarray of the shape of ``stat``

    Examples
    --------
    >>> from abstain.combine import conformal_pvalues
    >>> conformal_pvalues([1.0, 2.0, 2.0, 3.0], [0.5, 2.0, 3.5]).tolist()
    [1.0, 0.8, 0.2]
    """
    count, n = _count_ge(cal_stat, stat)
    return np.asarray((1.0 + count) / (n + 1.0), dtype=np.float64)


# --------------------------------------------------------------------------- combiners
def _glrt(Z: F64, eps: float) -> F64:
    """Eq. (20) negated: sum of ``(z - z_plus / 2) * z_plus``, ``z_plus = max(z, eps)``."""
    if eps == 0.0:
        zp = np.maximum(Z, 0.0)
        return 0.5 * np.einsum("ij,ij->i", zp, zp)
    zp = np.maximum(Z, eps)
    return np.einsum("ij,ij->i", Z - 0.5 * zp, zp)


def _log_sf(z: F64) -> F64:
    """``log Phi(-z) = log norm.sf(z)`` with relative error below 1e-12 for every z.

    ``log(ndtr(-z))`` (twice as fast as ``log_ndtr``) for ``-3 <= z <= 30``;
    ``log_ndtr(-z)`` above, where ``ndtr(-z)`` nears underflow; ``log1p(-ndtr(z))``
    below, where ``log p`` is near 0.
    """
    with np.errstate(divide="ignore"):
        out = np.log(special.ndtr(-z))
    far = z > 30.0
    if far.any():
        out[far] = special.log_ndtr(-z[far])
    near = z < -3.0
    if near.any():
        out[near] = np.log1p(-special.ndtr(z[near]))
    return np.asarray(out, dtype=np.float64)


def _log_tails(block: F64, scale: str, k: int | None = None) -> tuple[F64, F64]:
    """Row-wise ascending p-values as ``(log p_(i), log(1 - p_(i)))``, first ``k`` columns."""
    if scale == "z":
        zs = np.sort(block, axis=1)[:, ::-1][:, :k]  # descending z = ascending p
        return _log_sf(zs), _log_sf(-zs)
    ps = np.sort(block, axis=1)[:, :k]
    with np.errstate(divide="ignore"):  # p = 1: log(1 - p) = -inf, handled by the callers
        return np.log(ps), np.log1p(-ps)


def _kl_plus(t: F64, logp: F64, log1mp: F64) -> F64:
    """One-sided binomial Kullback-Leibler divergence ``K+(t, p)`` (0 where p >= t)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        kl = special.xlogy(t, t) - t * logp + special.xlogy(1.0 - t, 1.0 - t) \
            - np.where(t < 1.0, (1.0 - t) * log1mp, 0.0)
        return np.where(logp < np.log(t), np.maximum(kl, 0.0), 0.0)


def _combine_block(block: F64, method: str, scale: str, eps: float) -> F64:
    m = block.shape[1]
    k = max(1, m // 2)  # order statistics used by HC, BJ and ALR: i <= m / 2
    if method == "glrt":
        z = block if scale == "z" else -special.ndtri(block)
        return _glrt(z, eps)
    if method == "stouffer":
        z = block if scale == "z" else -special.ndtri(block)
        return z.sum(axis=1) / math.sqrt(m)
    if method == "fisher":
        logp = _log_sf(block) if scale == "z" else np.log(block)
        return -2.0 * logp.sum(axis=1)
    if method == "bonferroni":
        if scale == "z":
            logp1 = special.log_ndtr(-block.max(axis=1))
        else:
            logp1 = np.log(block.min(axis=1))
        return -(math.log(m) + logp1)
    if method == "simes":
        logp = np.sort(_log_sf(block) if scale == "z" else np.log(block), axis=1)
        return np.max(np.log(np.arange(1, m + 1) / m) - logp, axis=1)
    logp, log1mp = _log_tails(block, scale, k)
    t = np.arange(1, k + 1) / m
    if method == "hc":
        p = np.exp(logp)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            hc = math.sqrt(m) * (t - p) / np.exp(0.5 * (logp + log1mp))
        hc = np.where(np.isfinite(log1mp), hc, np.where(t < 1.0, -np.inf, 0.0))
        return hc.max(axis=1)
    kl = m * _kl_plus(t, logp, log1mp)
    if method == "bj":
        return kl.max(axis=1)
    # alr: log of sum_i w_i exp(m K+(i/m, p_(i))), w_i proportional to 1/i, summing to 1
    logw = -np.log(np.arange(1, k + 1)) - math.log(float(np.sum(1.0 / np.arange(1, k + 1))))
    return np.asarray(special.logsumexp(kl + logw, axis=1), dtype=np.float64)


def combine(
    values: ArrayLike,
    method: str = "glrt",
    *,
    scale: str = "z",
    epsilon: float | None = None,
    cov: ArrayLike | None = None,
) -> F64:
    """Combine m per-column z-values (or p-values) of each sample into one statistic.

    The entry point in the spirit of :func:`scipy.stats.combine_pvalues`, vectorised over
    samples (rows). **A larger returned value is more OOD** for every method. From
    z-values (``scale="z"``, the library direction: OOD has positive mean), p-value
    combiners use the one-sided ``p = Phi(-z) = norm.sf(z)`` in log space; from p-values
    (``scale="p"``, smaller = more OOD), z-value combiners use ``z = Phi^{-1}(1 - p)``.

    Statistics per row, with ``p_(1) <= ... <= p_(m)`` the row's sorted p-values:

    * ``glrt`` (eq. 20): ``sum_l (z_l - z_l+ / 2) z_l+`` with ``z_l+ = max(z_l, eps)``,
      the log-GLR ``max_{mu >= eps} log N(z; mu, I) / N(z; 0, I)``;
    * ``glrt_cov`` (eqs. 31-33): ``max_{mu >= eps} log N(z; mu, cov) / N(z; 0, cov)``,
      a non-negative QP per row, solved exactly (see below);
    * ``stouffer`` (eq. 14): ``sum_l z_l / sqrt(m)`` (scipy's statistic);
    * ``fisher`` (eq. 10): ``-2 sum_l log p_l`` (scipy's statistic);
    * ``bonferroni`` (eq. 11): ``-log(m p_(1))``;
    * ``simes`` (eq. 12, the same statistic as the global BH test):
      ``-log(min_i m p_(i) / i)``;
    * ``hc`` (App. A.1): ``max_{i <= m/2} sqrt(m) (i/m - p_(i)) / sqrt(p_(i) (1 - p_(i)))``;
    * ``bj`` (App. A.1): ``max_{i <= m/2} m K+(i/m, p_(i))``;
    * ``alr`` (App. A.1): ``log sum_{i <= m/2} w_i exp(m K+(i/m, p_(i)))``, ``w_i ~ 1/i``.

    Each is the negated paper statistic or a monotone increasing function of it
    (``-log`` of the unclipped Bonferroni / Simes p-value; Fisher's ``-2 sum log p``).
    ``K+(t, p) = t log(t/p) + (1-t) log((1-t)/(1-p))`` if ``p < t``, else 0 (binomial
    Kullback-Leibler). HC is Donoho and Jin's (2004) HC* with ``alpha_0 = 1/2``, BJ is
    Berk and Jones' (1979) statistic and ALR Walther's (2013) average likelihood ratio,
    all over ``i = 1 .. max(1, floor(m/2))`` as in Walther (2013); the ALR weights are
    normalised to sum to 1 (a constant factor, no change in ranking) and the one-sided
    ``K+`` keeps it monotone. The ``log`` of ALR is returned. HC overflows to ``+inf``
    for z above about 53 (the true value exceeds the float64 range).

    Ties: the sorting combiners (Simes, HC, BJ, ALR) sort each row's p-values; tied
    values are interchangeable, so the statistic does not depend on their order. All
    methods but ``glrt_cov`` are invariant to permuting the columns and non-decreasing in
    every z (``glrt`` strictly increasing for ``epsilon > 0``).

    ``glrt_cov`` solves ``min_{x >= 0} (w - x)' cov^{-1} (w - x)``, ``w = z - eps``, per
    row: projected coordinate descent finds a starting active set, then a batched block
    principal pivoting active-set method (Kim and Park 2011, with Murty's finite backup
    rule) solves the equality-constrained system of every row exactly, in the primal
    (``cov^{-1}`` restricted to the free set) or the dual (``cov`` restricted to the
    bound set, the conditional-mean formula) form, whichever is smaller, and stops when
    the KKT conditions hold to 1e-10 relative. Rows still open after the iteration cap
    are solved by Lawson-Hanson (``scipy.optimize.nnls``) after Cholesky whitening.

    Parameters
    ----------
    values : array-like of shape (n_samples, n_scores)
        z-values (finite) or, with ``scale="p"``, p-values in (0, 1].
    method : str, default "glrt"
        One of :data:`METHODS`.
    scale : {"z", "p"}, default "z"
        What ``values`` hold.
    epsilon : float >= 0, optional
        The GLRT's minimum OOD mean (``glrt``, ``glrt_cov``); default 0.25 (section 4.2).
    cov : array-like of shape (n_scores, n_scores), optional
        Symmetric positive-definite covariance of the z-values; required by and only
        used by ``glrt_cov`` (e.g. :func:`inlier_covariance`; the identity gives ``glrt``).

    Returns
    -------
    ndarray of shape (n_samples,)
        The combined statistic; higher = more OOD.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.combine import combine
    >>> Z = np.array([[0.1, -0.3, 0.2], [2.5, 1.8, 3.0]])    # an inlier, an outlier
    >>> combine(Z, "glrt").round(3)
    array([-0.094,  9.245])
    >>> combine(Z, "fisher").round(3)
    array([ 4.247, 30.031])
    >>> combine(Z, "glrt_cov", cov=np.eye(3)).round(3)
    array([-0.094,  9.245])
    """
    name = check_choice("method", method, METHODS)
    kind = check_choice("scale", scale, ("z", "p"))
    arr = _as_matrix(values, "Z") if kind == "z" else _as_pvalues(values, "P")
    if name in _GLRT_METHODS:
        eps = 0.25 if epsilon is None else check_positive("epsilon", epsilon, allow_zero=True)
    elif epsilon is not None:
        raise ValueError(f"epsilon is used only by methods 'glrt' and 'glrt_cov'; got "
                         f"epsilon={epsilon!r} with method={name!r}.")
    else:
        eps = 0.0
    if name == "glrt_cov":
        if cov is None:
            raise ValueError("cov must be given for method='glrt_cov' (e.g. "
                             "inlier_covariance(Z_train)); got None.")
        if kind == "p" and np.any(arr == 1.0):
            raise ValueError("P must be < 1 for method='glrt_cov' (p = 1 is z = -inf); "
                             f"got {int(np.sum(arr == 1.0))} value(s) equal to 1.")
        z = arr if kind == "z" else -special.ndtri(arr)
        return _glrt_cov(z, _as_covariance(cov, arr.shape[1]), eps)
    if cov is not None:
        raise ValueError(f"cov is used only by method='glrt_cov'; got a cov with "
                         f"method={name!r}.")
    out = np.empty(arr.shape[0])
    for start in range(0, arr.shape[0], _ROWS_PER_CHUNK):
        stop = start + _ROWS_PER_CHUNK
        out[start:stop] = _combine_block(arr[start:stop], name, kind, eps)
    return out


# --------------------------------------------------------------------------- covariance GLRT
def inlier_covariance(Z_train: ArrayLike, sigma: float = 1e-6) -> F64:
    """The inlier covariance of eq. (34): ``Z' Z / (n - 1) + sigma I``.

    Uncentred, as written in the paper (z-values have mean 0 under H0 by construction);
    the sign convention of z does not matter (``z z'`` is unchanged by negation).

    Parameters
    ----------
    Z_train : array-like of shape (n_train, n_scores)
        Empirical z-values of the inlier training data, ``n_train >= 2``.
    sigma : float >= 0, default 1e-6
        Ridge that keeps the matrix full rank (the paper's value).

    Examples
    --------
    >>> from abstain.combine import inlier_covariance
    >>> inlier_covariance([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]], sigma=0.0).tolist()
    [[1.5, 0.5], [0.5, 1.5]]
    """
    Z = _as_matrix(Z_train, "Z_train")
    if Z.shape[0] < 2:
        raise ValueError(f"Z_train must have at least 2 rows; got {Z.shape[0]}.")
    s = check_positive("sigma", sigma, allow_zero=True)
    cov = Z.T @ Z / (Z.shape[0] - 1.0)
    cov[np.diag_indices_from(cov)] += s
    return cov


def _as_covariance(cov: ArrayLike, m: int) -> F64:
    c = np.asarray(cov, dtype=np.float64)
    if c.shape != (m, m):
        raise ValueError(f"cov must have shape ({m}, {m}) to match the {m} score column(s); "
                         f"got an array of shape {c.shape}.")
    if not np.isfinite(c).all():
        raise ValueError("cov must be finite; got NaN or infinite value(s).")
    if not np.allclose(c, c.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(c).max()))):
        raise ValueError("cov must be symmetric; got an asymmetric matrix.")
    return 0.5 * (c + c.T)


def _solve_restricted(A: F64, mask: NDArray[np.bool_], R: F64) -> F64:
    """Per row r: ``u[S] = A[S, S]^{-1} R[r, S]`` on ``S = mask[r]``, 0 elsewhere.

    Rows are grouped by ``|S|`` and each group solved as one batch of ``|S| x |S|``
    systems (LAPACK ``gesv`` per matrix, through ``numpy.linalg.solve``).
    """
    k, m = mask.shape
    u = np.zeros((k, m))
    sizes = mask.sum(axis=1)
    order = np.argsort(~mask, axis=1, kind="stable")  # indices of S first, ascending
    flat_a = A.ravel()
    for s in np.unique(sizes):
        if s == 0:
            continue
        rows = np.flatnonzero(sizes == s)
        idx = order[rows, :s]
        sub = flat_a.take(idx[:, :, None] * m + idx[:, None, :])
        pos = (rows * m)[:, None] + idx
        sol = np.linalg.solve(sub, R.ravel().take(pos)[..., None])[..., 0]
        u.ravel()[pos.ravel()] = sol.ravel()
    return u


def _partition_solution(
    Q: F64, cov: F64, W: F64, C: F64, free: NDArray[np.bool_]
) -> tuple[F64, F64]:
    """Exact ``(x, y)`` of the partition: ``x`` 0 off ``free``, ``y = Q (x - w)`` 0 on it.

    Primal: ``x_F = Q_FF^{-1} c_F``. Dual (``G`` = complement): ``v = cov_GG^{-1} w_G``,
    ``y_G = -v``, ``x_F = w_F - cov_FG v`` (the conditional mean given ``mu_G = eps``).
    Each row uses the smaller of the two systems.
    """
    m = free.shape[1]
    n_free = free.sum(axis=1)
    primal = n_free <= m - n_free
    x = np.empty(W.shape)
    y = np.empty(W.shape)
    if primal.any():
        fp = free[primal]
        xp = _solve_restricted(Q, fp, C[primal])
        yp = xp @ Q - C[primal]
        yp[fp] = 0.0
        x[primal], y[primal] = xp, yp
    dual = ~primal
    if dual.any():
        bound = ~free[dual]
        v = _solve_restricted(cov, bound, W[dual])
        xd = W[dual] - v @ cov
        xd[bound] = 0.0
        x[dual], y[dual] = xd, -v
    return x, y


def _nonneg_qp(Q: F64, cov: F64, W: F64, *, max_iter: int | None = None,
               sweeps: int = 2) -> tuple[F64, int]:
    """``argmin_{x >= 0} (w - x)' Q (w - x)`` for every row ``w`` of ``W``; ``Q = cov^{-1}``.

    Returns the solutions and the number of rows handed to the Lawson-Hanson fallback.
    """
    k, m = W.shape
    C = W @ Q
    # starting active set: a few sweeps of projected coordinate descent from max(w, 0)
    xt = np.maximum(W, 0.0).T.copy()  # (m, k): one contiguous row per coordinate
    gt = Q @ (xt - W.T)
    qd = np.diag(Q)
    for _ in range(sweeps):
        for j in range(m):
            new = np.maximum(xt[j] - gt[j] / qd[j], 0.0)
            step = new - xt[j]
            xt[j] = new
            gt += Q[:, j, None] * step[None, :]
    x = xt.T.copy()
    free = x > 0.0
    tol_x = 1e-10 * (1.0 + np.abs(W).max(axis=1))
    tol_y = 1e-10 * (1.0 + np.abs(C).max(axis=1))
    best = np.full(k, m + 1)  # fewest KKT violations so far (block principal pivoting)
    chances = np.full(k, 3)
    active = np.arange(k)
    limit = 10 * m + 50 if max_iter is None else max_iter
    for _ in range(limit):
        if active.size == 0:
            break
        fa = free[active]
        xa, ya = _partition_solution(Q, cov, W[active], C[active], fa)
        x[active] = xa
        bad = (fa & (xa < -tol_x[active, None])) | (~fa & (ya < -tol_y[active, None]))
        n_bad = bad.sum(axis=1)
        fewer = n_bad < best[active]
        best[active] = np.where(fewer, n_bad, best[active])
        ch = np.where(fewer, 3, chances[active])
        exchange_all = fewer | (ch >= 1)
        chances[active] = np.where(~fewer & exchange_all, ch - 1, ch)
        # Murty's backup rule: flip only the largest infeasible index
        last = m - 1 - np.argmax(bad[:, ::-1], axis=1)
        single = np.zeros_like(bad)
        single[np.arange(bad.shape[0]), last] = True
        free[active] = fa ^ np.where(exchange_all[:, None], bad, single & bad)
        active = active[n_bad > 0]
    x = np.where(free, np.maximum(x, 0.0), 0.0)
    if active.size:  # not settled within the cap: exact Lawson-Hanson per row
        chol = linalg.cholesky(cov, lower=True)
        A = linalg.solve_triangular(chol, np.eye(m), lower=True)  # A' A = Q
        for r in active:
            x[r] = nnls(A, A @ W[r])[0]
    return x, int(active.size)


def _glrt_cov(Z: F64, cov: F64, eps: float) -> F64:
    m = cov.shape[0]
    try:
        chol = linalg.cholesky(cov, lower=True)
    except np.linalg.LinAlgError as exc:
        raise ValueError("cov must be positive definite; its Cholesky factorisation "
                         "failed (add a ridge, e.g. inlier_covariance(..., sigma=1e-6)).") from exc
    Q = linalg.cho_solve((chol, True), np.eye(m))
    Q = 0.5 * (Q + Q.T)
    out = np.empty(Z.shape[0])
    for start in range(0, Z.shape[0], 8192):
        Zc = Z[start:start + 8192]
        x, _ = _nonneg_qp(Q, cov, Zc - eps)
        mu = x + eps
        # log GLR = z' Q mu - mu' Q mu / 2 = mu' Q (z - mu / 2)
        out[start:start + 8192] = np.einsum("ij,ij->i", mu, (Zc - 0.5 * mu) @ Q)
    return out


# --------------------------------------------------------------------------- CSI baseline
def csi_statistic(
    cos: ArrayLike,
    norm: ArrayLike,
    shift: ArrayLike,
    *,
    norm_train: ArrayLike,
    shift_train: ArrayLike,
) -> F64:
    """CSI's heuristic score combination (eqs. 6-7), negated: higher = more OOD.

    ``-sum_j [lambda_con_j cos_j norm_j + lambda_shift_j shift_j]`` with
    ``lambda_con_j = 1 / mean(norm_train_j)`` and ``lambda_shift_j = 1 / mean(shift_train_j)``.
    Unlike the rest of this module, the inputs are CSI's raw quantities in their own
    direction (eqs. 3-5: the maximal cosine similarity to the training set, the feature
    norm and the shift-classifier logit, each larger for inliers), because the product
    ``cos * norm`` is not invariant to negating its factors; only the output is negated.
    A baseline, not a test: it has no null distribution.

    Parameters
    ----------
    cos, norm, shift : array-like of shape (n_samples, n_shifts)
        ``s_cos,j``, ``s_norm,j`` and ``s_shift,j`` for each shift ``j``.
    norm_train, shift_train : array-like of shape (n_train, n_shifts)
        ``s_norm,j`` and ``s_shift,j`` on the training inliers (eq. 7); their column means
        must be non-zero.

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> from abstain.combine import csi_statistic
    >>> csi_statistic([[0.9], [0.2]], [[2.0], [1.0]], [[3.0], [-1.0]],
    ...               norm_train=[[2.0], [2.0]], shift_train=[[2.0], [4.0]]).tolist()
    [-1.9, 0.2333...]
    """
    c = _as_matrix(cos, "cos")
    nm = _as_matrix(norm, "norm")
    sh = _as_matrix(shift, "shift")
    nt = _as_matrix(norm_train, "norm_train")
    st = _as_matrix(shift_train, "shift_train")
    t = c.shape[1]
    for name, arr in (("norm", nm), ("shift", sh)):
        if arr.shape != c.shape:
            raise ValueError(f"{name} must have the shape of cos {c.shape}; got {arr.shape}.")
    for name, arr in (("norm_train", nt), ("shift_train", st)):
        _check_columns(name, arr, t)
    mean_norm, mean_shift = nt.mean(axis=0), st.mean(axis=0)
    for name, mean in (("norm_train", mean_norm), ("shift_train", mean_shift)):
        if np.any(mean == 0.0):
            raise ValueError(f"{name} must have non-zero column means (eq. 7 divides by "
                             f"them); got a zero mean in column {int(np.argmin(mean != 0))}.")
    return -(c * nm / mean_norm + sh / mean_shift).sum(axis=1)


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


def _min_n(alpha: float, delta: float) -> int:
    # l = 1 is feasible iff Pr{FAR > alpha} = (1 - alpha)^n <= delta
    n = max(1, math.ceil(math.log(delta) / math.log1p(-alpha)))
    while n > 1 and (n - 1) * math.log1p(-alpha) <= math.log(delta):
        n -= 1
    while n * math.log1p(-alpha) > math.log(delta):
        n += 1
    return n


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
    n : int >= 1
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
        raise ValueError(f"n must be a positive integer; got {n!r}.")
    a = _check_open_unit("alpha", alpha)
    d = _check_open_unit("delta", delta)
    n = int(n)
    need = _min_n(a, d)

    def ok(rank: int) -> bool:
        return bool(stats.beta.sf(a, rank, n + 1 - rank) <= d)

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
    achieved = float(stats.beta.isf(d, lo, n + 1 - lo))
    return FARGuarantee(True, lo, lo / (n + 1.0), achieved, need)


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
    a = _check_open_unit("alpha", alpha)
    cal = as_scores(cal_stat, "cal_stat")
    n = cal.size
    need = math.ceil(1.0 / a - 1e-12)
    if n < need:
        raise ValueError(f"cal_stat must hold at least ceil(1/alpha) = {need} values for "
                         f"alpha={alpha!r}; got {n}.")
    k = n + 1 - math.floor((n + 1) * a + 1e-9)  # = ceil((n + 1)(1 - alpha))
    return float(np.partition(cal, k - 1)[k - 1])


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

    Parameters
    ----------
    alpha : float in (0, 1), default 0.05
        Target maximal false-alarm rate.
    delta : float in (0, 1), default 0.1
        Allowed probability (over calibration draws) that the FAR exceeds ``alpha``.
    higher_is_inlier : bool, default False
        Negate the statistics in ``fit`` and ``predict`` (for a statistic such as the
        paper's ``t_GLRT``, where smaller = more OOD).

    Attributes
    ----------
    threshold_ : float
        Flag ``statistic > threshold_`` (after any negation).
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
    >>> det.predict([0.0, 5.0]).tolist()
    [False, True]
    """

    def __init__(self, *, alpha: float = 0.05, delta: float = 0.1,
                 higher_is_inlier: bool = False) -> None:
        self.alpha = alpha
        self.delta = delta
        self.higher_is_inlier = higher_is_inlier

    def fit(self, cal_stat: ArrayLike) -> GuaranteedDetector:
        """Choose the threshold from inlier calibration statistics of shape (n,)."""
        flip = _check_bool("higher_is_inlier", self.higher_is_inlier)
        cal = as_scores(cal_stat, "cal_stat")
        if flip:
            cal = -cal
        n = cal.size
        g = far_guarantee(n, self.alpha, self.delta)
        if not g.feasible:
            raise ValueError(
                f"cal_stat must hold at least {g.min_n} values for FAR <= alpha={self.alpha!r} "
                f"with probability >= 1 - delta={self.delta!r}; got {n}."
            )
        self.threshold_ = float(np.partition(cal, n - g.rank)[n - g.rank])
        self.rank_ = g.rank
        self.level_ = g.level
        self.achieved_alpha_ = g.achieved_alpha
        self.n_calibration_ = n
        return self

    def predict(self, stat: ArrayLike) -> NDArray[np.bool_]:
        """``True`` (OOD) where ``stat > threshold_``: boolean array of shape (k,)."""
        self._check_fitted("threshold_")
        s = as_scores(stat, "stat", allow_empty=True)
        if self.higher_is_inlier:
            s = -s
        return s > self.threshold_

    def to_json(self) -> str:
        """Serialise to plain JSON (format ``abstain.combine/1``); load with :func:`from_json`."""
        self._check_fitted("threshold_")
        return json.dumps(self._doc(), sort_keys=True, allow_nan=False)

    _FITTED = ("threshold_", "rank_", "level_", "achieved_alpha_", "n_calibration_")

    def _doc(self) -> dict[str, Any]:
        params = {"alpha": float(self.alpha), "delta": float(self.delta),
                  "higher_is_inlier": bool(self.higher_is_inlier)}
        fitted = {k: getattr(self, k) for k in self._FITTED}
        return {"format": _FORMAT, "model": "GuaranteedDetector", "params": params,
                "fitted": fitted}

    def _load(self, fitted: dict[str, Any]) -> None:
        missing = set(self._FITTED) - set(fitted)
        if missing:
            raise ValueError(f"the file lacks fitted attribute(s) {sorted(missing)}.")
        self.threshold_ = float(fitted["threshold_"])
        self.rank_ = int(fitted["rank_"])
        self.level_ = float(fitted["level_"])
        self.achieved_alpha_ = float(fitted["achieved_alpha_"])
        self.n_calibration_ = int(fitted["n_calibration_"])


# --------------------------------------------------------------------------- pipeline
class ScoreCombiner(ParamsMixin):
    """Base scores -> empirical z-values -> one combined statistic (Algorithm 1, lines 2-4).

    ``fit`` learns the z-value maps (:class:`EmpiricalZ`) from inlier training scores and,
    for ``method="glrt_cov"``, the inlier covariance of eq. (34) from their in-sample
    z-values; ``score`` returns :func:`combine` of the z-values of new inputs.

    Parameters
    ----------
    method : str, default "glrt"
        One of :data:`METHODS`.
    epsilon : float >= 0, optional
        For ``glrt`` / ``glrt_cov``; default 0.25.
    sigma : float >= 0, default 1e-6
        Ridge of eq. (34), used by ``glrt_cov``.
    higher_is_inlier : bool, default False
        The base scores are inlier scores (larger = more inlier, as in the paper); they
        are negated on the way in. The statistic is higher = more OOD either way.

    Attributes
    ----------
    empirical_z_ : EmpiricalZ
    cov_ : ndarray of shape (n_scores, n_scores) or None

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.combine import ScoreCombiner
    >>> rng = np.random.default_rng(0)
    >>> comb = ScoreCombiner(method="glrt").fit(rng.normal(size=(500, 3)))
    >>> stat = comb.score([[0.0, 0.0, 0.0], [3.0, 3.0, 3.0]])
    >>> bool(stat[1] > stat[0])
    True
    """

    def __init__(self, *, method: str = "glrt", epsilon: float | None = None,
                 sigma: float = 1e-6, higher_is_inlier: bool = False) -> None:
        self.method = method
        self.epsilon = epsilon
        self.sigma = sigma
        self.higher_is_inlier = higher_is_inlier

    def fit(self, S_train: ArrayLike) -> ScoreCombiner:
        """Fit on inlier training base scores of shape (n_train, n_scores)."""
        name = check_choice("method", self.method, METHODS)
        if self.epsilon is not None:
            if name not in _GLRT_METHODS:
                raise ValueError(f"epsilon is used only by methods 'glrt' and 'glrt_cov'; "
                                 f"got epsilon={self.epsilon!r} with method={name!r}.")
            check_positive("epsilon", self.epsilon, allow_zero=True)
        ez = EmpiricalZ(higher_is_inlier=self.higher_is_inlier).fit(S_train)
        self.cov_ = None
        if name == "glrt_cov":
            self.cov_ = inlier_covariance(ez.transform(S_train), self.sigma)
        self.empirical_z_ = ez
        return self

    def transform(self, S: ArrayLike) -> F64:
        """Empirical z-values of ``S``: shape (n_samples, n_scores)."""
        self._check_fitted("empirical_z_")
        return self.empirical_z_.transform(S)

    def score(self, S: ArrayLike) -> F64:
        """The combined statistic of base scores ``S`` (n_samples, n_scores): shape (n,)."""
        Z = self.transform(S)
        return combine(Z, self.method, epsilon=self.epsilon, cov=self.cov_)

    def to_json(self) -> str:
        """Serialise to plain JSON (format ``abstain.combine/1``); load with :func:`from_json`."""
        self._check_fitted("empirical_z_")
        return json.dumps(self._doc(), sort_keys=True, allow_nan=False)

    def _doc(self) -> dict[str, Any]:
        params = {"method": self.method,
                  "epsilon": None if self.epsilon is None else float(self.epsilon),
                  "sigma": float(self.sigma), "higher_is_inlier": bool(self.higher_is_inlier)}
        fitted = {"empirical_z_": self.empirical_z_._doc(),
                  "cov_": None if self.cov_ is None else self.cov_.tolist()}
        return {"format": _FORMAT, "model": "ScoreCombiner", "params": params, "fitted": fitted}

    def _load(self, fitted: dict[str, Any]) -> None:
        ez = _from_doc(fitted["empirical_z_"])
        if not isinstance(ez, EmpiricalZ):
            raise ValueError("empirical_z_ in the file must be an EmpiricalZ.")
        self.empirical_z_ = ez
        cov = fitted.get("cov_")
        self.cov_ = None if cov is None else _as_covariance(cov, ez.n_scores_)


_MODELS: dict[str, type[EmpiricalZ] | type[GuaranteedDetector] | type[ScoreCombiner]] = {
    "EmpiricalZ": EmpiricalZ, "GuaranteedDetector": GuaranteedDetector,
    "ScoreCombiner": ScoreCombiner,
}


def _from_doc(doc: Any) -> EmpiricalZ | GuaranteedDetector | ScoreCombiner:
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(f"text must be a JSON object written by to_json (format {_FORMAT!r}).")
    name = doc.get("model")
    if name not in _MODELS:
        raise ValueError(f"model must be one of {sorted(_MODELS)}; got {name!r}.")
    obj = _MODELS[name](**doc.get("params", {}))
    obj._load(doc.get("fitted", {}))
    return obj


def from_json(text: str) -> EmpiricalZ | GuaranteedDetector | ScoreCombiner:
    """Load an object of this module written by its ``to_json``; only plain JSON is parsed.

    Examples
    --------
    >>> from abstain.combine import EmpiricalZ, from_json
    >>> ez = EmpiricalZ().fit([[1.0], [2.0], [3.0]])
    >>> from_json(ez.to_json()).transform([[2.5]]).round(4).tolist()
    [[0.2533]]
    """
    return _from_doc(json.loads(text))
