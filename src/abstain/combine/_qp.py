"""The GLRT with a covariance (Appendix A.2): a batched non-negative quadratic program."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import linalg
from scipy.optimize import nnls

from .._core.validation import (
    F64,
    Interval,
    as_matrix,
    as_real_array,
    validate_params,
)


# --------------------------------------------------------------------------- covariance GLRT
@validate_params({"sigma": [Interval(float, 0, None, closed="left")]})
def inlier_covariance(Z_train: ArrayLike, sigma: float = 1e-6) -> F64:
    """The inlier covariance of eq. (34): ``Z' Z / (n - 1) + sigma I``.

    Uncentred, as written in the paper (z-values have mean 0 under H0 by construction);
    the sign convention of z does not matter (``z z'`` is unchanged by negation). Each entry
    is summed exactly and rounded once, so it does not depend on the order of the rows.

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
    Z = as_matrix(Z_train, "Z_train", columns="n_scores")
    if Z.shape[0] < 2:
        raise ValueError(f"Z_train must have at least 2 rows; got {Z.shape[0]}.")
    s = float(sigma)
    # each entry the correctly rounded sum of its products (math.fsum): the same bits for
    # the rows in any order and on any CPU (a BLAS Z' Z sums in row order, by the kernel)
    cov = _covariance(Z, s)
    if not np.isfinite(cov).all():
        # products or their sums beyond float64: each column in units of a power of two at
        # least its largest magnitude (exact), the entries scaled back
        e = np.frexp(np.max(np.abs(Z), axis=0))[1]
        cov = _covariance(np.ldexp(Z, -e), 0.0)
        with np.errstate(over="ignore"):
            cov = np.ldexp(cov, e[:, None] + e[None, :])
        cov[np.diag_indices_from(cov)] += s
    if not np.isfinite(cov).all():  # z-values beyond about 1.3e154: entries beyond float64
        raise ValueError(f"Z_train must keep its covariance within the float64 range (|z| "
                         f"up to about 1e154); got z-values of magnitude up to "
                         f"{float(np.max(np.abs(Z))):.3g}.")
    return cov


def _covariance(Z: F64, sigma: float) -> F64:
    """:func:`inlier_covariance`'s entries of ``Z``, inf where a product or a sum
    overflows."""
    m = Z.shape[1]
    cov = np.full((m, m), np.inf)
    try:
        with np.errstate(over="ignore"):
            for i in range(m):
                for j in range(i + 1, m):
                    cov[i, j] = cov[j, i] = (math.fsum((Z[:, i] * Z[:, j]).tolist())
                                             / (Z.shape[0] - 1.0))
            cov[np.diag_indices_from(cov)] = covariance_diagonal(Z, sigma)
    except OverflowError:  # finite products whose sum overflows (math.fsum raises)
        cov[:] = np.inf
    return cov


def covariance_diagonal(Z: F64, sigma: float) -> F64:
    """The diagonal of :func:`inlier_covariance` of the z-values ``Z`` (n >= 2 rows), with
    the same bits: each column's sum of squares correctly rounded, over ``n - 1``, plus
    ``sigma``."""
    return np.array([math.fsum(np.square(Z[:, j]).tolist()) / (Z.shape[0] - 1.0) + sigma
                     for j in range(Z.shape[1])])


def check_positive_definite(cov: F64, what: str, fix: str = "") -> None:
    """Raise unless ``cov`` (symmetric) has a Cholesky factor, as ``glrt_cov`` needs, and is
    not numerically singular: its smallest eigenvalue above ``4 m eps`` times its largest
    (whether the factorisation of an exactly singular matrix, such as that of two equal
    columns, fails is up to its last bits and the LAPACK kernel)."""
    try:
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        low = float(np.linalg.eigvalsh(cov).min())
        raise ValueError(f"{what} must be symmetric positive definite (its Cholesky "
                         f"factorisation fails); got smallest eigenvalue {low:.4g}{fix}.") from None
    eig = np.linalg.eigvalsh(cov)
    if eig[0] <= 4 * cov.shape[0] * np.finfo(float).eps * eig[-1]:
        raise ValueError(f"{what} must be symmetric positive definite (not numerically "
                         f"singular); got eigenvalues from {eig[0]:.4g} to {eig[-1]:.4g}{fix}.")


def as_covariance(cov: ArrayLike, m: int) -> F64:
    c = as_real_array(cov, "cov")
    if c.shape != (m, m):
        raise ValueError(f"cov must have shape ({m}, {m}) to match the {m} score column(s); "
                         f"got an array of shape {c.shape}.")
    if not np.isfinite(c).all():
        raise ValueError("cov must be finite; got NaN or infinite value(s).")
    if not np.allclose(c, c.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(c).max()))):
        raise ValueError("cov must be symmetric; got an asymmetric matrix.")
    return 0.5 * (c + c.T)


def _times(A: F64, M: F64) -> F64:
    """``A @ M`` row by row, summed over the columns of ``A`` in their order.

    Each row's value depends on that row alone, never on how many rows are multiplied with
    it (a BLAS product may take another kernel, and other last bits, for another batch
    size), so a row scores the same alone as in any batch.
    """
    out = A[:, :1] * M[0]
    for j in range(1, M.shape[0]):
        out += A[:, j:j + 1] * M[j]
    return out


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
        yp = _times(xp, Q) - C[primal]
        yp[fp] = 0.0
        x[primal], y[primal] = xp, yp
    dual = ~primal
    if dual.any():
        bound = ~free[dual]
        v = _solve_restricted(cov, bound, W[dual])
        xd = W[dual] - _times(v, cov)
        xd[bound] = 0.0
        x[dual], y[dual] = xd, -v
    return x, y


def _nonneg_qp(Q: F64, cov: F64, W: F64, *, max_iter: int | None = None,
               sweeps: int = 2) -> tuple[F64, int]:
    """``argmin_{x >= 0} (w - x)' Q (w - x)`` for every row ``w`` of ``W``; ``Q = cov^{-1}``.

    Returns the solutions and the number of rows handed to the Lawson-Hanson fallback.
    """
    k, m = W.shape
    C = _times(W, Q)
    # starting active set: a few sweeps of projected coordinate descent from max(w, 0)
    xt = np.maximum(W, 0.0).T.copy()  # (m, k): one contiguous row per coordinate
    gt = _times(xt.T - W, Q).T.copy()  # Q is symmetric
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


def glrt_cov(Z: F64, cov: F64, eps: float) -> F64:
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
        half = _times(Zc - 0.5 * mu, Q) * mu
        total = half[:, 0].copy()
        for j in range(1, m):
            total += half[:, j]
        out[start:start + 8192] = total
    return out
