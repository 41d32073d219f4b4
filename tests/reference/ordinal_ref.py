"""Reference SVOR solver: the primal QP with explicit slack variables, solved by SLSQP.

Minimise ``||w||^2 / 2 + (C / n) sum_ij xi_ij`` subject to ``xi_ij >= 0`` and
``xi_ij >= 1 - s_ij (<w, x_i> - b_j)`` with ``s_ij = +1`` for ``j < y_i`` and ``-1``
otherwise (Franc et al. 2023, section 5.2.2). Small problems only.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize


def svor_objective_ref(X, ranks, w, b, C) -> float:
    """Double loop over samples and thresholds, straight from the definition."""
    n = len(ranks)
    total = 0.0
    for i in range(n):
        f = float(np.dot(X[i], w))
        for j in range(len(b)):
            if j < ranks[i]:
                total += max(0.0, 1.0 - f + b[j])
            else:
                total += max(0.0, 1.0 + f - b[j])
    return 0.5 * float(np.dot(w, w)) + C / n * total


def svor_ref(X, ranks, n_classes, C):
    """Return ``(w, b)`` minimising the SVOR objective, via SLSQP on the slack QP."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    k = n_classes - 1
    S = np.where(np.arange(k)[None, :] < np.asarray(ranks)[:, None], 1.0, -1.0)
    c = C / n

    def unpack(z):
        return z[:d], z[d : d + k], z[d + k :].reshape(n, k)

    def fun(z):
        w, _, xi = unpack(z)
        return 0.5 * w @ w + c * xi.sum()

    def jac(z):
        g = np.zeros_like(z)
        g[:d] = z[:d]
        g[d + k :] = c
        return g

    def cons(z):
        w, b, xi = unpack(z)
        return (xi - 1.0 + S * ((X @ w)[:, None] - b[None, :])).ravel()

    def cons_jac(z):
        J = np.zeros((n * k, z.size))
        rows = np.arange(n * k)
        ii, jj = np.divmod(rows, k)
        J[:, :d] = S.ravel()[:, None] * X[ii]
        J[rows, d + jj] = -S.ravel()
        J[rows, d + k + rows] = 1.0
        return J

    z0 = np.concatenate([np.zeros(d + k), np.ones(n * k) * 2.0])
    bounds = [(None, None)] * (d + k) + [(0.0, None)] * (n * k)
    res = minimize(fun, z0, jac=jac, method="SLSQP", bounds=bounds,
                   constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
                   options={"ftol": 1e-14, "maxiter": 2000})
    w, b, _ = unpack(res.x)
    return w, b
