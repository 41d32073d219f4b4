"""Linear ordinal classifier: Support Vector Ordinal Regression (SVOR).

SVOR with implicit constraints (Chu and Keerthi 2005), the base classifier of the
ordinal-regression experiments of Franc, Prusa and Voracek (JMLR 2023, section 5.2.2).
It learns a direction ``w`` and ``K - 1`` thresholds ``b`` and predicts the number of
thresholds below ``<x, w>``; its training objective is a convex upper bound on the
mean absolute error (MAE) of the class ranks.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from ._core.arrays import unmasked
from ._core.base import NamedFeatures, ParamsMixin, accuracy
from ._core.serialize import Array, Field, Int, Labels, Number, dumps, serializable
from ._core.validation import (
    Interval,
    RandomState,
    as_features,
    as_real_array,
    check_same_length,
    plain,
)
from .exceptions import ConvergenceWarning
from .scores._plugin import ordinal_margin

__all__ = ["SVOR", "SVORSolution", "solve_svor", "svor_objective"]


class SVORSolution(NamedTuple):
    """Result of the SVOR solver.

    Attributes
    ----------
    coef : ndarray of shape (d,)
        The direction ``w``.
    thresholds : ndarray of shape (K - 1,)
        The thresholds ``b``.
    objective : float
        Primal objective ``F(w, b)``.
    gap : float
        Duality gap ``F(w, b) - D(alpha)``: an upper bound on ``F(w, b) - min F``.
    n_iter : int
        Newton iterations over all smoothing levels.
    """

    coef: NDArray[np.float64]
    thresholds: NDArray[np.float64]
    objective: float
    gap: float
    n_iter: int


def _signs(ranks: NDArray[np.intp], n_classes: int) -> NDArray[np.float64]:
    """``S[i, j] = +1`` if threshold ``j`` lies below the class of sample ``i``, else -1."""
    return np.where(np.arange(n_classes - 1)[None, :] < ranks[:, None], 1.0, -1.0)


def svor_objective(
    X: ArrayLike, ranks: ArrayLike, coef: ArrayLike, thresholds: ArrayLike, C: float
) -> float:
    """Primal SVOR objective ``F(w, b)`` (Franc et al. 2023, section 5.2.2).

    ``F(w, b) = ||w||^2 / 2 + (C / n) sum_i [ sum_{j < y_i} max(0, 1 - <w, x_i> + b_j)
    + sum_{j >= y_i} max(0, 1 + <w, x_i> - b_j) ]`` with class ranks ``y_i`` in
    ``0..K-1`` and thresholds ``b_0..b_{K-2}``.

    Examples
    --------
    >>> from abstain.ordinal import svor_objective
    >>> svor_objective([[0.0], [2.0]], [0, 1], [1.0], [1.0], C=1.0)
    0.5
    """
    x = _svor_features(X)
    w = as_real_array(coef, "coef")
    b = as_real_array(thresholds, "thresholds")
    raw = np.asarray(ranks)
    if raw.dtype.kind == "f" and raw.size and np.all(raw == np.round(raw)):
        raw = raw.astype(np.int64)  # whole ranks written as floats
    if raw.ndim != 1 or raw.dtype.kind not in "iu" or (raw.size and (
            raw.min() < 0 or raw.max() > b.size)):
        raise ValueError(f"ranks must be whole class ranks in 0..{b.size} (one more class than "
                         f"thresholds), one per row of X; got {plain(ranks)}.")
    check_same_length(X=x, ranks=raw)
    if w.shape != (x.shape[1],) or b.ndim != 1 or not np.all(np.isfinite(w)) or not np.all(
            np.isfinite(b)):
        raise ValueError(f"coef must hold {x.shape[1]} finite values (one per feature) and "
                         f"thresholds a 1-D array of finite values; got shapes {w.shape} and "
                         f"{b.shape}.")
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not 0 < float(C) < math.inf:
        raise ValueError(f"C must be a finite number > 0; got {plain(C)}.")
    r = raw.astype(np.intp)
    S = _signs(r, b.size + 1)
    slack = 1.0 - S * ((x @ w)[:, None] - b[None, :])
    return float(0.5 * w @ w + C / len(r) * np.maximum(slack, 0.0).sum())


def _line_search(
    w: NDArray[np.float64],
    dw: NDArray[np.float64],
    Z: NDArray[np.float64],
    dZ: NDArray[np.float64],
    c: float,
    mu: float,
) -> float:
    """Exact minimiser ``t >= 0`` of the smoothed objective along a descent direction.

    The derivative ``phi'(t)`` is monotone and piecewise linear; safeguarded Newton
    steps inside a bracket find its root.
    """
    ww, wd = float(w @ dw), float(dw @ dw)

    def deriv(t: float) -> tuple[float, float]:
        zt = Z + t * dZ
        slope = np.clip(zt / mu, 0.0, 1.0)
        zone = (zt > 0.0) & (zt < mu)
        d1 = ww + t * wd + c * float(np.sum(slope * dZ))
        d2 = wd + c / mu * float(np.sum(dZ[zone] ** 2))
        return d1, d2

    lo, hi = 0.0, 1.0
    g_hi, h_hi = deriv(hi)
    while g_hi < 0.0 and hi < 1e12:
        lo, hi = hi, hi * 4.0
        g_hi, h_hi = deriv(hi)
    if g_hi <= 0.0:
        return hi
    t, g, h = hi, g_hi, h_hi
    for _ in range(60):
        step = t - g / h if h > 0.0 else 0.5 * (lo + hi)
        if not lo < step < hi:
            step = 0.5 * (lo + hi)
        t = step
        g, h = deriv(t)
        if g > 0.0:
            hi = t
        elif g < 0.0:
            lo = t
        else:
            break
        if hi - lo <= 1e-12 * hi:
            break
    return t


def _certificate(
    X: NDArray[np.float64],
    S: NDArray[np.float64],
    c: float,
    w: NDArray[np.float64],
    b: NDArray[np.float64],
    alpha: NDArray[np.float64],
) -> tuple[float, float, float]:
    """Primal value at ``(w, b)``, dual value at ``alpha`` and the threshold residual.

    ``D(alpha) = sum(alpha) - ||X^T beta||^2 / 2`` with ``beta_i = sum_j alpha_ij s_ij``
    is a lower bound on ``min F`` when ``0 <= alpha <= C / n`` and ``sum_i alpha_ij s_ij
    = 0`` for every threshold ``j`` (the residual).
    """
    Z = 1.0 - S * ((X @ w)[:, None] - b[None, :])
    primal = float(0.5 * w @ w + c * np.maximum(Z, 0.0).sum())
    A = alpha * S
    Xb = X.T @ A.sum(axis=1)
    dual = float(alpha.sum() - 0.5 * Xb @ Xb)
    residual = float(np.abs(A.sum(axis=0)).max())
    return primal, dual, residual


def _dual_for(
    X: NDArray[np.float64],
    S: NDArray[np.float64],
    c: float,
    w: NDArray[np.float64],
    b: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Dual variables for a primal point by bounded least squares of its KKT conditions.

    Terms with slack get ``alpha = C / n``, terms strictly outside the margin ``0``, and
    the terms on the margin (many at a degenerate optimum such as ``w = 0``, where the
    active-set polish gives up) the ``alpha`` in ``[0, C / n]`` that best satisfies
    ``w = X^T beta`` and the threshold equations. At an optimum these hold exactly, so
    the certificate of :func:`_certificate` closes the gap.
    """
    from scipy.optimize import lsq_linear

    Z = 1.0 - S * ((X @ w)[:, None] - b[None, :])
    zeps = 1e-9 * max(1.0, float(np.abs(Z).max()))
    on = np.abs(Z) <= zeps
    alpha = np.where(Z > zeps, c, 0.0)
    ie, je = np.nonzero(on)
    if ie.size == 0:
        return alpha
    fixed = alpha * S
    s_e = S[ie, je]
    d, n_thr = X.shape[1], S.shape[1]
    M = np.zeros((d + n_thr, ie.size))
    M[:d] = (s_e[:, None] * X[ie]).T
    M[d + je, np.arange(ie.size)] = s_e
    target = np.concatenate([w - X.T @ fixed.sum(axis=1), -fixed.sum(axis=0)])
    sol = lsq_linear(M, target, bounds=(0.0, c), method="bvls", tol=1e-14)
    alpha[ie, je] = np.clip(sol.x, 0.0, c)
    return alpha


def _fitted_certificate(X: NDArray[np.float64], S: NDArray[np.float64], c: float,
                        w: NDArray[np.float64], b: NDArray[np.float64], residual_tol: float,
                        low: float) -> tuple[float, float]:
    """``F(w, b)`` and its gap to the larger of ``low`` (a lower bound on ``min F``, such as
    0 = D(0)) and the dual fitted to the point's KKT conditions (:func:`_dual_for`), where
    that dual meets the threshold equations."""
    primal, dual, residual = _certificate(X, S, c, w, b, _dual_for(X, S, c, w, b))
    if residual <= residual_tol:
        low = max(low, dual)
    return primal, max(primal - low, 0.0)


def _polish(
    X: NDArray[np.float64],
    S: NDArray[np.float64],
    c: float,
    Z: NDArray[np.float64],
    mu: float,
    b: NDArray[np.float64],
    max_support: int,
    max_rounds: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None:
    """Exact optimum from a guess of the support set, by an active-set iteration.

    Terms are split into ``L`` (``alpha = C / n``, slack > 0), ``E`` (on the margin,
    ``0 <= alpha <= C / n``) and ``R`` (``alpha = 0``), starting from the quadratic zone
    of the smoothed solution. For a fixed split the optimality conditions are a linear
    system in ``(alpha_E, b)``; terms whose ``alpha`` leaves the box or whose margin
    contradicts their set are moved, and the system is solved again. Returns ``(w, b,
    alpha)`` when the split is consistent, else None.
    """
    n_thr = S.shape[1]
    in_e = (Z > 0.0) & (Z < mu)
    in_l = Z >= mu
    zeps, aeps = 1e-9, 1e-9 * c
    for _ in range(max_rounds):
        ie, je = np.nonzero(in_e)
        m = ie.size
        if m == 0 or m > max_support:
            return None
        s_e = S[ie, je]
        M = np.zeros((m, X.shape[1] + n_thr))
        M[:, : X.shape[1]] = s_e[:, None] * X[ie]
        M[np.arange(m), X.shape[1] + je] = -s_e
        # Optimality for a fixed split: margin equations M theta = 1 on E and
        # stationarity w = X^T beta, sum_i alpha_ij s_ij = 0, linear in (theta, alpha_E).
        p = M.shape[1]
        A_l = np.where(in_l, c * S, 0.0)
        K = np.zeros((p + m, p + m))
        K[: X.shape[1], : X.shape[1]] = np.eye(X.shape[1])
        K[:p, p:] = -M.T
        K[p:, :p] = M
        rhs = np.concatenate([X.T @ A_l.sum(axis=1), -A_l.sum(axis=0), np.ones(m)])
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        stationary = np.abs(K @ sol - rhs)[:p].max() <= 1e-9 * max(1.0, np.abs(rhs).max())
        w, b_new, a_e = sol[: X.shape[1]], sol[X.shape[1] : p], sol[p:]
        free = ~np.isin(np.arange(n_thr), je)
        b_new[free] = b[free]  # a threshold without a margin term keeps its value
        Z_new = 1.0 - S * ((X @ w)[:, None] - b_new[None, :])
        z_e = Z_new[ie, je]
        # One change per round, the worst violation first: alpha outside its box,
        # then a term of E off its margin, then a term of L or R on the wrong side.
        box = np.maximum(a_e - c, -a_e)
        if box.max() > aeps:
            k = int(np.argmax(box))
            in_e[ie[k], je[k]] = False
            in_l[ie[k], je[k]] = a_e[k] > c
            continue
        if np.abs(z_e).max() > zeps:
            k = int(np.argmax(np.abs(z_e)))
            in_e[ie[k], je[k]] = False
            in_l[ie[k], je[k]] = z_e[k] > 0.0
            continue
        wrong = np.where(in_l, -Z_new, np.where(in_e, 0.0, Z_new))
        k_flat = int(np.argmax(wrong))
        if wrong.flat[k_flat] > zeps:
            i, j = divmod(k_flat, n_thr)
            in_e[i, j], in_l[i, j] = True, False
            continue
        if not stationary:
            return None
        alpha = np.where(in_l, c, 0.0)
        alpha[ie, je] = np.clip(a_e, 0.0, c)
        return w, b_new, alpha
    return None


def solve_svor(
    X: NDArray[np.float64],
    ranks: NDArray[np.intp],
    n_classes: int,
    C: float,
    *,
    tol: float = 1e-8,
    max_iter: int = 500,
) -> SVORSolution:
    """Minimise the SVOR objective to a relative duality gap ``tol``.

    Newton's method on the objective with each hinge replaced by a Huber hinge of
    width ``mu`` (quadratic on ``(0, mu)``), with ``mu`` decreased tenfold whenever the
    smoothed problem is solved. The derivatives of the Huber hinges give dual variables
    ``alpha`` in ``[0, C / n]`` that satisfy the threshold equations at each smoothed
    optimum, so ``D(alpha) = sum(alpha) - ||X^T beta||^2 / 2`` is a lower bound on the
    optimum and the gap ``F(w, b) - D(alpha) <= (C / n) mu |E| / 4`` (``E`` the terms in
    the quadratic zone) certifies the solution.
    """
    n, d = X.shape
    c = C / n
    S = _signs(ranks, n_classes)
    w = np.zeros(d)
    b = np.zeros(n_classes - 1)
    mu = 1.0
    n_iter = 0
    objective = gap = math.inf
    # the threshold equations sum_i alpha_ij s_ij = 0, alpha in [0, C / n], hold to 1e-10 C
    # (an absolute 1e-10 for C < 1 left 1e-4 of C at C = 1e-6: a gap of 0 for a point 8e-12
    # above the optimum, relative)
    residual_tol = 1e-10 * C
    stuck = False  # the last step left w and b as they were (a step below their ulps)
    best = (math.inf, w, b)  # the lowest objective passed (from w = 0: never above it)
    while n_iter < max_iter:
        n_iter += 1
        f = X @ w
        Z = 1.0 - S * (f[:, None] - b[None, :])
        slope = np.clip(Z / mu, 0.0, 1.0)
        A = c * slope * S  # alpha_ij * s_ij
        beta = A.sum(axis=1)
        Xb = X.T @ beta
        objective = float(0.5 * w @ w + c * np.maximum(Z, 0.0).sum())
        if objective < best[0]:
            best = (objective, w, b)
        dual = float(c * slope.sum() - 0.5 * Xb @ Xb)
        g_w = w - Xb
        g_b = A.sum(axis=0)
        # Weak duality makes the gap >= 0; a negative difference is rounding.
        gap = max(objective - dual, 0.0)
        scale = max(objective, 1e-300)
        stationary = float(np.abs(g_b).max()) <= residual_tol
        if gap <= tol * scale and stationary:
            break
        zone = (Z > 0.0) & (Z < mu)
        Hm = np.where(zone, c / mu, 0.0)
        hrow = Hm.sum(axis=1)
        act = hrow > 0.0
        Xa = X[act]
        H = np.empty((d + n_classes - 1, d + n_classes - 1))
        H[:d, :d] = Xa.T @ (hrow[act, None] * Xa)
        H[:d, :d].flat[:: d + 1] += 1.0
        H[:d, d:] = -(Xa.T @ Hm[act])
        H[d:, :d] = H[:d, d:].T
        H[d:, d:] = np.diag(Hm.sum(axis=0))
        # A threshold with no term in the quadratic zone has a zero Hessian row; a tiny
        # ridge keeps the system solvable and the line search sets the step length.
        H[d:, d:].flat[:: n_classes] += 1e-9 * max(c / mu, 1.0)
        g = np.concatenate([g_w, g_b])
        try:
            step = np.linalg.solve(H, -g)
        except np.linalg.LinAlgError:  # singular in floats (large units, a large C)
            step = np.linalg.lstsq(H, -g, rcond=None)[0]
        decrement = -float(g @ step)
        if decrement <= 1e-3 * tol * scale or stuck:
            stuck = False
            support = 2 * (d + n_classes) + 20
            exact = _polish(X, S, c, Z, mu, b, max_support=support, max_rounds=50)
            if exact is not None:
                primal, dual, residual = _certificate(X, S, c, *exact)
                if primal - dual <= tol * max(primal, 1e-300) and residual <= residual_tol:
                    w, b = exact[0], exact[1]
                    objective, gap = primal, max(primal - dual, 0.0)
                    break
            if mu <= 1e-14:
                # Smoothing is exhausted: certify the point with dual variables fitted
                # to its KKT conditions, keeping the smoothed certificate if better.
                primal, dual, residual = _certificate(X, S, c, w, b, _dual_for(X, S, c, w, b))
                if residual <= residual_tol and primal - dual < gap:
                    objective, gap = primal, max(primal - dual, 0.0)
                if gap > tol * max(objective, 1e-300):
                    warnings.warn(
                        f"SVOR stopped at the smallest smoothing width without reaching "
                        f"the relative duality gap tol={tol:g}; the gap is "
                        f"{min(gap, objective) / max(objective, 1e-300):.3g}.",
                        ConvergenceWarning,
                        stacklevel=3,
                    )
                break
            mu *= 0.1
            continue
        dw, db = step[:d], step[d:]
        dZ = -S * ((X @ dw)[:, None] - db[None, :])
        t = _line_search(w, dw, Z, dZ, c, mu)
        # a step within a few ulps of w and b moves nothing: this smoothing width is done, as
        # when the decrement is small (two points a few ulps apart, in turn, ran out max_iter)
        ulps = 4.0 * np.finfo(np.float64).eps
        stuck = bool(np.all(np.abs(t * dw) <= ulps * np.abs(w))
                     and np.all(np.abs(t * db) <= ulps * np.abs(b)))
        w, b = w + t * dw, b + t * db
    else:
        # objective and gap were of the point before the last step: certify the point
        # returned, by a dual fitted to it, or by D(0) = 0 <= min F
        objective, gap = _fitted_certificate(X, S, c, w, b, residual_tol, 0.0)
        warnings.warn(
            f"SVOR did not reach the relative duality gap tol={tol:g} in max_iter={max_iter} "
            f"iterations; the gap is {min(gap, objective) / max(objective, 1e-300):.3g}.",
            ConvergenceWarning,
            stacklevel=3,
        )
    if best[0] < objective - 1e-12 * abs(objective):
        # the steps ended above a point they passed (an ill-conditioned Newton system, or
        # a degenerate optimum with many terms on the margin): that point, certified by the
        # best lower bound known (the duals fitted to it and to the last point, D(0) = 0)
        low = objective - gap
        w, b = best[1], best[2]
        objective, gap = _fitted_certificate(X, S, c, w, b, residual_tol, low)
        if gap > tol * max(objective, 1e-300):
            warnings.warn(
                f"SVOR's Newton steps ended above the best point they passed (features in "
                f"large units or a large C make its system ill-conditioned); that point is "
                f"returned, with a relative gap of {gap / max(objective, 1e-300):.3g}: scale "
                f"the features.", ConvergenceWarning, stacklevel=3)
    # F >= 0 = D(0): the gap is never above the objective itself
    return SVORSolution(w, b, objective, min(gap, objective), n_iter)


def _centred_thresholds(f: NDArray[np.float64], ranks: NDArray[np.intp],
                       n_classes: int) -> NDArray[np.float64]:
    """Each threshold at the middle of the values that minimise ``F`` given the
    projections ``f = X w``: ``F`` is convex and piecewise linear in ``b_j``, with slope
    ``(C / n) (#{y_i > j: f_i - 1 < b} - #{y_i <= j: f_i + 1 > b})``, and flat on an
    interval where that count is 0 (then any point of it is optimal, and the solver's
    depends on the row order). Both sides of every threshold hold rows."""
    out = np.empty(n_classes - 1)
    for j in range(n_classes - 1):
        up = np.sort(f[ranks > j] - 1.0)
        low = np.sort(f[ranks <= j] + 1.0)
        knots = np.unique(np.concatenate([up, low]))
        # the slope just right of each knot, without the factor C / n
        right = (np.searchsorted(up, knots, side="right")
                 - (low.size - np.searchsorted(low, knots, side="right")))
        k = int(np.argmax(right >= 0))  # the least minimiser; the last knot's slope is > 0
        out[j] = knots[k] if right[k] > 0 else 0.5 * knots[k] + 0.5 * knots[k + 1]
    return out


def _svor_features(X: Any) -> NDArray[np.float64]:
    """``X`` as a finite 2-D float64 array, with scikit-learn's wording for its refusals."""
    if sparse.issparse(X):
        raise ValueError("SVOR does not accept sparse input X; pass a dense array "
                         "(X.toarray()).")
    arr = np.asarray(X)
    if arr.dtype == object:
        arr = arr.astype(np.float64)  # numbers stored as objects; anything else: TypeError
    if np.iscomplexobj(arr):
        raise ValueError("Complex data not supported in X; got dtype "
                         f"{arr.dtype}.")
    if arr.ndim == 1:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape "
                         f"{arr.shape}. Reshape your data with X.reshape(-1, 1) for one "
                         f"feature or X.reshape(1, -1) for one sample.")
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={arr.shape}) while a minimum of 1 "
                         f"is required.")
    return as_features(arr)


def _column_warning() -> type[Warning]:
    """scikit-learn's ``DataConversionWarning`` if it is installed, else ``UserWarning``."""
    try:
        from sklearn.exceptions import DataConversionWarning
    except ImportError:
        return UserWarning
    return DataConversionWarning  # type: ignore[no-any-return]


def _svor_labels(y: Any) -> NDArray[Any]:
    """``y`` as a 1-D array of class labels: integers, integral floats or strings."""
    if y is None:
        raise ValueError("SVOR requires y to be passed, but the target y is None.")
    labels = np.asarray(unmasked(y, "y"))
    if labels.ndim == 2 and labels.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; "
                      "it is read as y.ravel().", _column_warning(), stacklevel=3)
        labels = labels.ravel()
    if labels.ndim != 1:
        raise ValueError(f"y must be a 1-D array of class labels; got shape {labels.shape}.")
    kind = labels.dtype.kind
    if kind == "c":
        raise ValueError(f"Complex data not supported in y; got dtype {labels.dtype}.")
    if kind == "f":
        if not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels)):
            raise ValueError("Unknown label type: continuous. y must hold class labels "
                             "(integers or strings), not continuous values.")
    elif kind == "O":
        items = labels.tolist()
        if not (all(isinstance(v, str) for v in items) or all(
                isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in items)):
            raise ValueError("Unknown label type: y of dtype object must hold only strings "
                             "or only integers.")
    elif kind not in "iuU":  # bytes (S) too: a fitted model could not be written to JSON
        raise ValueError(f"Unknown label type: y has dtype {labels.dtype}; give integer or "
                         f"string labels.")
    return labels


@serializable("svor")
class SVOR(NamedFeatures, ParamsMixin):
    """Support Vector Ordinal Regression with implicit constraints (Chu and Keerthi 2005).

    Learns ``w`` and thresholds ``b_0..b_{K-2}`` of the ordinal classifier
    ``h(x) = sum_j [<x, w> > b_j]`` (class ranks ``0..K-1``; the paper writes
    ``1 + sum``) by minimising (Franc et al. 2023, section 5.2.2)::

        F(w, b) = ||w||^2 / 2 + (C / n) sum_i [ sum_{j < y_i} max(0, 1 - <w, x_i> + b_j)
                                              + sum_{j >= y_i} max(0, 1 + <w, x_i> - b_j) ]

    The paper prints only the ``C / n`` loss term; the regulariser ``||w||^2 / 2`` is
    that of Chu and Keerthi's formulation, without which ``C`` would not matter. The
    thresholds carry no ordering constraint and are not regularised. The loss counts
    every threshold on the wrong side of ``<w, x_i>``, an upper bound on the absolute
    error ``|h(x_i) - y_i|``. Prediction counts the thresholds below ``<w, x>`` and does
    not depend on their order; ``thresholds_`` is sorted (at the optimum Chu and Keerthi
    show it is already ordered). ``coef_`` is the unique optimum's; given it, ``F`` is
    flat in a threshold over an interval where no hinge changes slope, and each threshold
    is the middle of that interval (or its one point), so the fit does not depend on the
    row order beyond the last bits of ``X @ coef_``.

    Labels may be integers (or integral floats) or strings: they are mapped to ranks
    ``0..K-1`` through ``classes_`` (``np.unique``'s sort order, so strings rank
    alphabetically), and the model treats consecutive labels as one step apart.

    The solver is Newton's method on Huber-smoothed hinges with a decreasing
    smoothing width, ending with an exact active-set solve of the optimality
    conditions; it stops when the duality gap is at most ``tol`` times the objective.

    Parameters
    ----------
    C : float, default 1.0
        Weight of the mean hinge loss, ``> 0``.
    tol : float, default 1e-8
        Relative duality gap at which the solver stops.
    max_iter : int, default 500
        Newton iterations over all smoothing levels.
    random_state : None
        Unused; the solver is deterministic. Kept for a uniform estimator interface.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    coef_ : ndarray of shape (d,)
    thresholds_ : ndarray of shape (K - 1,)
    objective_ : float
    gap_ : float
        Upper bound on ``objective_ - min F`` from the dual certificate, whose threshold
        equations hold to ``1e-10 * C``: a bound for ``C`` up to about 1e7; above (1e8 and
        more, near a hard margin) that residual can hide a gap of about 1e-5 relative, and
        ``gap_`` may read 0 where it is not.
    n_iter_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        The column names of a data frame ``X`` of the fit (all strings); absent otherwise.
        ``predict`` and the other methods refuse a frame whose names differ.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.ordinal import SVOR
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    >>> y = np.array([1, 1, 2, 2, 3, 3])
    >>> model = SVOR(C=100.0).fit(X, y)
    >>> model.predict(X).tolist()
    [1, 1, 2, 2, 3, 3]
    >>> model.uncertainty([[1.5], [0.0]]).round(3).tolist()  # higher = reject first
    [-0.0, -3.0]
    >>> model.score(X, y)  # the accuracy, as for every scikit-learn classifier
    1.0
    """

    def __init__(
        self, C: float = 1.0, *, tol: float = 1e-8, max_iter: int = 500, random_state: Any = None
    ) -> None:
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    _estimator_type = "classifier"

    _parameter_constraints = {
        "C": [Interval(float, 0, None, closed="neither")],
        "tol": [Interval(float, 0, None, closed="neither")],
        "max_iter": [Interval(int, 1, None, closed="left", condition="be a positive integer")],
        "random_state": [RandomState()]}

    def __sklearn_tags__(self) -> Any:
        """Estimator tags for scikit-learn >= 1.6 (imported only when scikit-learn asks)."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=True),
            input_tags=InputTags(sparse=False),
        )

    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` has run (scikit-learn's ``check_is_fitted`` protocol)."""
        return hasattr(self, "coef_")

    def fit(self, X: ArrayLike, y: ArrayLike) -> SVOR:
        """Fit the model; ``y`` holds labels (integers or strings) of at least two classes.

        Returns
        -------
        self
        """
        self._validate_params()
        C, tol = float(self.C), float(self.tol)
        x = _svor_features(X)
        labels = _svor_labels(y)
        check_same_length(X=x, y=labels)
        classes, ranks = np.unique(labels, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"y must hold at least 2 classes; got {classes.size} class.")
        sol = solve_svor(x, ranks.astype(np.intp), classes.size, C, tol=tol,
                         max_iter=int(self.max_iter))
        thresholds = _centred_thresholds(x @ sol.coef, ranks.astype(np.intp), classes.size)
        if not (np.all(np.isfinite(sol.coef)) and np.all(np.isfinite(thresholds))):
            objective = math.inf
        else:
            objective = svor_objective(x, ranks, sol.coef, thresholds, C)
        if not math.isfinite(min(objective, sol.objective)):
            raise ValueError(f"C={C!r} is too large for these features: the SVOR objective "
                             "goes beyond float64; take a smaller C, or scale the features "
                             "down.")
        self.classes_, self.coef_ = classes, sol.coef
        self.thresholds_ = np.sort(thresholds)
        # the centred thresholds minimise F given coef_: no higher than the solver's
        self.objective_ = min(objective, sol.objective)
        # at most the objective (F >= 0 = D(0)), which the difference can pass by an ulp
        self.gap_ = min(max(sol.gap - (sol.objective - self.objective_), 0.0), self.objective_)
        self.n_iter_ = sol.n_iter
        self.n_features_in_ = x.shape[1]
        self._fit_names(X)
        return self

    def _features(self, X: ArrayLike) -> NDArray[np.float64]:
        self._check_fitted("coef_")
        self._check_names(X)
        x = _svor_features(X)
        if x.shape[1] != self.coef_.size:
            raise ValueError(f"X has {x.shape[1]} features, but SVOR is expecting "
                             f"{self.coef_.size} features as input.")
        return x

    def projection(self, X: ArrayLike) -> NDArray[np.float64]:
        """The latent value ``<x, w>`` that the thresholds cut, shape (n,)."""
        return self._features(X) @ self.coef_

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Signed distance of ``<x, w>`` to each class's interval, scikit-learn's shape.

        Class ``k`` owns the interval ``(b_{k-1}, b_k]`` (``b_{-1} = -inf``,
        ``b_{K-1} = +inf``); its decision value is ``min(<x, w> - b_{k-1}, b_k - <x, w>)``,
        positive inside the interval and negative outside, shape (n, K). The first
        largest value is the predicted class, and the largest value is the distance to
        the nearest threshold, so :func:`abstain.scores.margin` of it is :meth:`uncertainty`.
        With two classes it is ``<x, w> - b_0``, shape (n,): positive means
        ``classes_[1]``, as for every scikit-learn binary classifier. The latent value
        itself is :meth:`projection`.
        """
        f = self.projection(X)
        if self.thresholds_.size == 1:
            return f - self.thresholds_[0]
        lower = np.concatenate(([-np.inf], self.thresholds_))
        upper = np.concatenate((self.thresholds_, [np.inf]))
        return np.minimum(f[:, None] - lower, upper - f[:, None])

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Labels ``classes_[sum_j [<x, w> > b_j]]``, shape (n,)."""
        f = self.projection(X)
        return self.classes_[np.searchsorted(self.thresholds_, f, side="left")]

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Accuracy of :meth:`predict` on ``X`` against ``y``, as every scikit-learn classifier.

        The (weighted) fraction of exactly right labels, so that ``cross_val_score`` and
        ``GridSearchCV`` work without ``scoring``; an ordinal model is often selected by
        ``scoring="neg_mean_absolute_error"`` instead, and by the quality of its
        abstention with a scorer of :mod:`abstain.metrics`.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            True labels.
        sample_weight : array-like of shape (n,), optional
            Non-negative weights with a positive sum.

        Returns
        -------
        float
        """
        return accuracy(y, self.predict(X), sample_weight)

    def uncertainty(self, X: ArrayLike) -> NDArray[np.float64]:
        """Margin uncertainty ``-min_j |<x, w> - b_j|`` (higher = reject first), shape (n,).

        The paper's baseline score of section 5.2.2 is the distance ``min_j |<x, w> -
        b_j|`` (a confidence); it is negated here, see :func:`abstain.scores.ordinal_margin`.
        """
        return ordinal_margin(self.projection(X), self.thresholds_)

    def to_json(self) -> str:
        """Serialise parameters and the fitted model to a plain JSON string.

        Load it with :func:`abstain.load_json`.
        """
        return dumps(self)

    _FIELDS: dict[str, Field] = {
        "classes_": Labels(min_length=2),
        "coef_": Array((None,)),
        "thresholds_": Array((None,)),
        "objective_": Number(0.0),  # hinge losses and a squared norm
        "gap_": Number(0.0),
        "n_iter_": Int(0),
    }

    def _after_load(self) -> None:
        if not 1 <= self.n_iter_ <= self.max_iter:  # the solver counts its steps from 1
            raise ValueError(f"fitted.n_iter_ must be in [1, params.max_iter = "
                             f"{self.max_iter}], as a fit counts its steps; got {self.n_iter_}.")
        if self.gap_ > self.objective_:  # F >= 0 = D(0): a fit caps the gap there
            raise ValueError(f"fitted.gap_ must be at most fitted.objective_ "
                             f"({self.objective_!r}), as a fit makes it; got {self.gap_!r}.")
        try:  # the labels a fit takes: no continuous values, no bools
            _svor_labels(self.classes_)
        except ValueError:
            raise ValueError(f"fitted.classes_ must hold class labels, integers or strings, as "
                             f"a fit takes them; got {plain(self.classes_.tolist())}."
                             ) from None
        k = self.classes_.size - 1
        if self.thresholds_.size != k:
            raise ValueError(f"fitted.thresholds_ must hold {k} values, one fewer than "
                             f"fitted.classes_; got {self.thresholds_.size}.")
        if np.any(np.diff(self.thresholds_) < 0):
            raise ValueError("fitted.thresholds_ must be sorted ascending.")
        self.n_features_in_ = self.coef_.size
