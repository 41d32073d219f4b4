"""Combined statistics of many z-values or p-values, higher = more OOD: the GLRT (eq. 20)
and the classical combiners (Stouffer, Fisher, Bonferroni, Simes, HC, BJ, ALR), and
the CSI heuristic."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._core.validation import (
    F64,
    Options,
    as_matrix,
    as_pvalues,
    check_columns,
    check_positive,
    plain,
    validate_params,
)
from ..detectors._base import row_means
from ._qp import as_covariance, glrt_cov

#: The combined statistics that :func:`combine` computes, in the order of the paper's
#: Tables 13-14.
STATISTICS: tuple[str, ...] = (
    "glrt", "glrt_cov", "stouffer", "fisher", "bonferroni", "simes", "hc", "bj", "alr",
)

#: The methods of :class:`ScoreCombiner` and :class:`BankDetector`: ``"auto"`` (the
#: default: the best single base score unless a combination beats it with confidence on
#: proxy outliers) and every statistic of :data:`STATISTICS`.
METHODS: tuple[str, ...] = ("auto", *STATISTICS)


GLRT_METHODS = ("glrt", "glrt_cov")

#: The largest GLRT ``epsilon``: its terms ``(z - eps / 2) * eps`` of up to 10**8 columns
#: stay within the float64 range (an OOD mean of 1e150 standard deviations is no test).
MAX_EPSILON = 1e150


def check_epsilon(value: Any) -> float:
    """``epsilon`` of the GLRT as a float in ``[0, MAX_EPSILON]``, or ``ValueError``."""
    eps = check_positive("epsilon", value, allow_zero=True)
    if eps > MAX_EPSILON:
        raise ValueError(f"epsilon must be in [0, {MAX_EPSILON:g}] (the GLRT's terms "
                         f"(z - epsilon / 2) * epsilon must stay within the float64 range); "
                         f"got {value!r}.")
    return eps


_ROWS_PER_CHUNK = 1 << 15  # rows combined at once: bounds the temporaries to a few MB


# --------------------------------------------------------------------------- combiners
def _row_sums(terms: F64) -> F64:
    """Each row's sum, of its terms sorted: the same for the columns in any order (a sum
    in column order changes in its last bits with it)."""
    return np.sort(terms, axis=1).sum(axis=1)


def _glrt(Z: F64, eps: float) -> F64:
    """Eq. (20) negated: sum of ``(z - z_plus / 2) * z_plus``, ``z_plus = max(z, eps)``."""
    # terms beyond float64 (z-values past about 1e154) are refused by _finite_glrt
    with np.errstate(over="ignore", invalid="ignore"):  # (only combine() calls it)
        if eps == 0.0:
            zp = np.maximum(Z, 0.0)
            return 0.5 * _row_sums(zp * zp)
        zp = np.maximum(Z, eps)
        return _row_sums((Z - 0.5 * zp) * zp)


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


def _log_tails(block: F64, scale: str, k: int | None = None) -> tuple[F64, F64, F64]:
    """Row-wise ascending p-values as ``(log p_(i), log(1 - p_(i)), p_(i))``, first ``k``
    columns."""
    if scale == "z":
        zs = np.sort(block, axis=1)[:, ::-1][:, :k]  # descending z = ascending p
        return _log_sf(zs), _log_sf(-zs), special.ndtr(-zs)
    ps = np.sort(block, axis=1)[:, :k]
    with np.errstate(divide="ignore"):  # p = 1: log(1 - p) = -inf, handled by the callers
        return np.log(ps), np.log1p(-ps), ps


def _log1p_minus(x: F64) -> F64:
    """``log1p(x) - x`` to a relative 1e-14 (its series where the difference cancels)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        direct = np.log1p(x) - x
    series = x * x * (-1 / 2 + x * (1 / 3 + x * (-1 / 4 + x * (1 / 5 + x * (
        -1 / 6 + x * (1 / 7 + x * (-1 / 8)))))))
    return np.where(np.abs(x) < 1e-2, series, direct)


def _kl_plus(t: F64, logp: F64, log1mp: F64, p: F64) -> F64:
    """One-sided binomial Kullback-Leibler divergence ``K+(t, p)`` (0 where p >= t).

    Where ``p`` is near ``t`` (``t / 2 < p < t``) the terms ``t log(t / p)`` and ``(1 - t)
    log((1 - t) / (1 - p))`` nearly cancel (a divergence of 1e-19 came out as 2e-16 or 0, and
    lower for a smaller p), so it is taken as ``d^2 / (p (1 - p)) + t g(d / p) + (1 - t)
    g(-d / (1 - p))`` with ``d = t - p`` (exact there, from ``p`` itself) and ``g(x) =
    log1p(x) - x``: the first-order terms cancelled in closed form."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        kl = special.xlogy(t, t) - t * logp + special.xlogy(1.0 - t, 1.0 - t) \
            - np.where(t < 1.0, (1.0 - t) * log1mp, 0.0)
        q = 1.0 - p
        d = t - p
        near = (p > 0.5 * t) & (d > 0) & (q > 0)
        close = d * d / (p * q) + t * _log1p_minus(d / p) + np.where(
            t < 1.0, (1.0 - t) * _log1p_minus(-d / q), 0.0)  # t = 1: the term is 0
        kl = np.where(near, close, kl)
        return np.where(logp < np.log(t), np.maximum(kl, 0.0), 0.0)


def _combine_block(block: F64, method: str, scale: str, eps: float) -> F64:
    # row-major: NumPy reduces along a row of a column-major (Fortran, column-sliced) array
    # in another order, so a row's last bits would depend on the array's layout
    block = np.ascontiguousarray(block)
    m = block.shape[1]
    k = max(1, m // 2)  # order statistics used by HC, BJ and ALR: i <= m / 2
    if method == "glrt":
        z = block if scale == "z" else -special.ndtri(block)
        return _glrt(z, eps)
    if method == "stouffer":
        z = block if scale == "z" else -special.ndtri(block)
        with np.errstate(over="ignore"):
            out = _row_sums(z) / math.sqrt(m)
        wide = np.flatnonzero(~np.isfinite(out) & np.isfinite(z).all(axis=1))
        if wide.size:  # a sum beyond the float64 range: those rows summed in halves
            out[wide] = _row_sums(z[wide] * 0.5) * (2.0 / math.sqrt(m))
        return out
    if method == "fisher":
        logp = _log_sf(block) if scale == "z" else np.log(block)
        return -2.0 * _row_sums(logp)
    if method == "bonferroni":
        if scale == "z":
            logp1 = special.log_ndtr(-block.max(axis=1))
        else:
            logp1 = np.log(block.min(axis=1))
        return -(math.log(m) + logp1)
    if method == "simes":
        logp = np.sort(_log_sf(block) if scale == "z" else np.log(block), axis=1)
        return np.max(np.log(np.arange(1, m + 1) / m) - logp, axis=1)
    logp, log1mp, p_sorted = _log_tails(block, scale, k)
    t = np.arange(1, k + 1) / m
    if method == "hc":
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            p = np.exp(logp)  # a p-value below float64's range is 0
            low = (t - p) / np.exp(0.5 * (logp + log1mp))
            # p near 1: t - p = (1 - p) - (1 - t) from log(1 - p), in log space (t - p
            # cancelled, and p (1 - p) underflowed to 0/0 for z below about -38)
            high = np.exp(0.5 * (log1mp - logp)) - np.where(
                t < 1.0, (1.0 - t) * np.exp(-0.5 * (logp + log1mp)), 0.0)
            hc = math.sqrt(m) * np.where(p > 0.5, high, low)
        hc = np.where(np.isfinite(log1mp), hc, np.where(t < 1.0, -np.inf, 0.0))
        return hc.max(axis=1)
    kl = m * _kl_plus(t, logp, log1mp, p_sorted)
    if method == "bj":
        return kl.max(axis=1)
    # alr: log of sum_i w_i exp(m K+(i/m, p_(i))), w_i proportional to 1/i, summing to 1
    logw = -np.log(np.arange(1, k + 1)) - math.log(float(np.sum(1.0 / np.arange(1, k + 1))))
    return np.asarray(special.logsumexp(kl + logw, axis=1), dtype=np.float64)


@validate_params({"method": [Options(STATISTICS)], "scale": [Options(("z", "p"))]})
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
    methods but ``glrt_cov`` are invariant to permuting the columns, to the last bit (the
    sums of GLRT, Stouffer and Fisher add each row's terms sorted), and non-decreasing in
    every z (``glrt`` strictly increasing for ``epsilon > 0``) up to the round-off of their
    formulas: stepping a p-value down one float at a time can lower Fisher, Simes, HC, BJ
    or ALR by a few units in the last place.

    ``glrt_cov`` solves ``min_{x >= 0} (w - x)' cov^{-1} (w - x)``, ``w = z - eps``, per
    row: projected coordinate descent finds a starting active set, then a batched block
    principal pivoting active-set method (Kim and Park 2011, with Murty's finite backup
    rule) solves the equality-constrained system of every row exactly, in the primal
    (``cov^{-1}`` restricted to the free set) or the dual (``cov`` restricted to the
    bound set, the conditional-mean formula) form, whichever is smaller, and stops when
    the KKT conditions hold to 1e-10 relative. Rows still open after the iteration cap
    are solved by Lawson-Hanson (``scipy.optimize.nnls``) after Cholesky whitening.
    Every product of a row with ``cov`` or its inverse is summed in column order, row by
    row, so a row's statistic is the same to the last bit alone and in any batch.

    Parameters
    ----------
    values : array-like of shape (n_samples, n_scores)
        z-values (finite) or, with ``scale="p"``, p-values in (0, 1].
    method : str, default "glrt"
        One of :data:`STATISTICS` (``"auto"`` is a choice that :class:`ScoreCombiner`
        makes on proxy outliers, not a statistic).
    scale : {"z", "p"}, default "z"
        What ``values`` hold.
    epsilon : float in [0, 1e150], optional
        The GLRT's minimum OOD mean (``glrt``, ``glrt_cov``); default 0.25 (section 4.2).
        Larger values are refused: the statistic's terms ``(z - epsilon / 2) * epsilon``
        would leave the float64 range.
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
    name, kind = str(method), str(scale)
    arr = (as_matrix(values, "values", columns="n_scores") if kind == "z"
           else as_pvalues(values, "values"))
    if name in GLRT_METHODS:
        eps = 0.25 if epsilon is None else check_epsilon(epsilon)
    elif epsilon is not None:
        raise ValueError(f"epsilon is used only by methods 'glrt' and 'glrt_cov'; got "
                         f"epsilon={plain(epsilon)} with method={plain(name)}.")
    else:
        eps = 0.0
    if name == "glrt_cov":
        if cov is None:
            raise ValueError("cov must be given for method='glrt_cov' (e.g. "
                             "inlier_covariance(Z_train)); got None.")
        if kind == "p" and np.any(arr == 1.0):
            raise ValueError("values must be < 1 for method='glrt_cov' (p = 1 is z = -inf); "
                             f"got {int(np.sum(arr == 1.0))} value(s) equal to 1.")
        c = as_covariance(cov, arr.shape[1])
        if kind == "z":
            with np.errstate(over="ignore", invalid="ignore"):  # refused by _finite_glrt
                return _finite_glrt(glrt_cov(arr, c, eps), arr)
        return glrt_cov(-special.ndtri(arr), c, eps)
    if cov is not None:
        raise ValueError(f"cov is used only by method='glrt_cov'; got a cov with "
                         f"method={name!r}.")
    out = np.empty(arr.shape[0])
    for start in range(0, arr.shape[0], _ROWS_PER_CHUNK):
        stop = start + _ROWS_PER_CHUNK
        out[start:stop] = _combine_block(arr[start:stop], name, kind, eps)
    return _finite_glrt(out, arr) if name == "glrt" and kind == "z" else out


def _finite_glrt(out: F64, values: F64) -> F64:
    """``out``, or ``ValueError`` where a GLRT statistic of finite z-values exceeds the
    float64 range (its terms grow as ``z**2 / 2``: z-values beyond about 1e154 in magnitude).
    From p-values, ``z = Phi^{-1}(1 - p)`` is at most 38.5, and ``p = 1`` gives ``-inf``, the
    statistic's exact value."""
    bad = ~np.isfinite(out)
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"values must keep the GLRT statistic within the float64 range "
                         f"(|z| up to about 1e154); got row {row} with largest |value| "
                         f"{float(np.max(np.abs(values[row]))):.6g}, whose statistic is "
                         f"{float(out[row])}.")
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
    c = as_matrix(cos, "cos", columns="n_scores")
    nm = as_matrix(norm, "norm", columns="n_scores")
    sh = as_matrix(shift, "shift", columns="n_scores")
    nt = as_matrix(norm_train, "norm_train", columns="n_scores")
    st = as_matrix(shift_train, "shift_train", columns="n_scores")
    t = c.shape[1]
    for name, arr in (("norm", nm), ("shift", sh)):
        if arr.shape != c.shape:
            raise ValueError(f"{name} must have the shape of cos {c.shape}; got {arr.shape}.")
    for name, arr in (("norm_train", nt), ("shift_train", st)):
        check_columns(name, arr, t)
    # in the units of each column's largest magnitude: no overflow near the float maximum
    mean_norm, mean_shift = row_means(nt.T), row_means(st.T)
    for name, mean in (("norm_train", mean_norm), ("shift_train", mean_shift)):
        if np.any(mean == 0.0):
            raise ValueError(f"{name} must have non-zero column means (eq. 7 divides by "
                             f"them); got a zero mean in column {int(np.argmin(mean != 0))}.")
    return -(c * nm / mean_norm + sh / mean_shift).sum(axis=1)
