"""Brute-force references for ``abstain.combine`` (Reehorst and Schniter, "Score combining
for contrastive OOD detection").

Written straight from the paper's definitions with plain loops, numerical optimisation
and exhaustive enumeration; only small inputs are meant to be passed in.

Direction: the library's (higher = more OOD). Where the paper's formula is stated for
inlier scores, the reference applies it to the negated quantities, literally:
``s_paper = -s``, ``z = -z_paper``, and the paper's statistic ``t`` is returned as ``-t``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import optimize, stats


# --------------------------------------------------------------------------- z and p
def empirical_z_ref(train: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Eq. (21) on inlier scores ``-train``, with the ECDF ``c / n`` replaced by
    ``(c + 1) / (n + 2)``, negated: ``z = -Phi^{-1}((1 + #{-t_i <= -s}) / (n + 2))``."""
    n, m = train.shape
    out = np.empty(s.shape)
    for r in range(s.shape[0]):
        for j in range(m):
            c = 0
            for i in range(n):
                if -train[i, j] <= -s[r, j]:
                    c += 1
            out[r, j] = -stats.norm.ppf((c + 1) / (n + 2))
    return out


def pvalues_ref(cal: np.ndarray, s: np.ndarray, conformal: bool) -> np.ndarray:
    """Eq. (9) plug-in ``#{cal >= s} / n`` or eq. (22) ``(1 + #{cal >= s}) / (n + 1)``,
    one 1-D column at a time, by a double loop."""
    n = len(cal)
    out = np.empty(len(s))
    for r in range(len(s)):
        c = 0
        for i in range(n):
            if cal[i] >= s[r]:
                c += 1
        out[r] = (1 + c) / (n + 1) if conformal else c / n
    return out


# --------------------------------------------------------------------------- GLRT
def glrt_ref(z: np.ndarray, eps: float) -> float:
    """``max_{mu >= eps} [log N(z; mu, I) - log N(z; 0, I)]`` by bounded L-BFGS-B."""
    def neg(mu):
        return 0.5 * np.sum((z - mu) ** 2) - 0.5 * np.sum(z**2), -(z - mu)

    start = np.maximum(z, eps) + 0.3
    res = optimize.minimize(neg, start, jac=True, method="L-BFGS-B",
                            bounds=[(eps, None)] * len(z),
                            options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 1000})
    return -float(res.fun)


def _qp_value(z: np.ndarray, cov: np.ndarray, mu: np.ndarray) -> float:
    q = np.linalg.inv(cov)
    return float(z @ q @ mu - 0.5 * mu @ q @ mu)


def glrt_cov_enum(z: np.ndarray, cov: np.ndarray, eps: float) -> float:
    """Eq. (33), negated, with ``mu*`` of eq. (32) by enumerating every active set:
    for each free set F solve the equality-constrained problem, keep it if feasible
    (``mu_F >= eps``), and take the best. Exponential in m: use m <= 6."""
    m = len(z)
    q = np.linalg.inv(cov)
    w = z - eps
    best_obj, best_mu = math.inf, None
    for r in range(m + 1):
        for free in itertools.combinations(range(m), r):
            x = np.zeros(m)
            f = list(free)
            if f:
                x[f] = np.linalg.solve(q[np.ix_(f, f)], (q @ w)[f])
            if np.any(x < -1e-12):
                continue
            x = np.maximum(x, 0.0)
            obj = (w - x) @ q @ (w - x)
            if obj < best_obj:
                best_obj, best_mu = obj, x + eps
    assert best_mu is not None
    return _qp_value(z, cov, best_mu)


def glrt_cov_nnls(z: np.ndarray, cov: np.ndarray, eps: float) -> float:
    """Eq. (32) as NNLS after whitening (``A = L^{-1}``, ``cov = L L'``), solved by
    ``scipy.optimize.nnls`` (Lawson-Hanson), then eq. (33) negated."""
    a = np.linalg.inv(np.linalg.cholesky(cov))
    x = optimize.nnls(a, a @ (z - eps))[0]
    return _qp_value(z, cov, x + eps)


def glrt_cov_slsqp(z: np.ndarray, cov: np.ndarray, eps: float) -> float:
    """Eq. (32) by SLSQP with bounds ``mu >= eps`` (a third, independent solver)."""
    q = np.linalg.inv(cov)

    def obj(mu):
        d = z - mu
        return 0.5 * d @ q @ d, -(q @ d)

    res = optimize.minimize(obj, np.maximum(z, eps), jac=True, method="SLSQP",
                            bounds=[(eps, None)] * len(z),
                            options={"ftol": 1e-14, "maxiter": 500})
    return _qp_value(z, cov, np.maximum(res.x, eps))


# --------------------------------------------------------------------------- p combiners
def _p(z: np.ndarray) -> list[float]:
    return [float(stats.norm.sf(v)) for v in z]


def bonferroni_ref(z: np.ndarray) -> float:
    """Eq. (11): ``-log(m min_l p_l)``, by a loop."""
    p = _p(z)
    smallest = p[0]
    for v in p:
        smallest = min(smallest, v)
    return -math.log(len(p) * smallest)


def simes_ref(z: np.ndarray) -> float:
    """Eq. (12): ``-log(min_l m p_(l) / l)`` with the sorted p-values, by a loop."""
    p = sorted(_p(z))
    m = len(p)
    return -math.log(min(m * p[i] / (i + 1) for i in range(m)))


def _kl_plus(t: float, x: float) -> float:
    if x >= t:
        return 0.0
    out = t * math.log(t / x)
    if t < 1.0:
        out += (1 - t) * math.log((1 - t) / (1 - x))
    return out


def hc_ref(z: np.ndarray) -> float:
    """Donoho and Jin (2004) HC* with alpha_0 = 1/2 on the sorted p-values."""
    p = sorted(_p(z))
    m = len(p)
    return max(math.sqrt(m) * ((i + 1) / m - p[i]) / math.sqrt(p[i] * (1 - p[i]))
               for i in range(max(1, m // 2)))


def bj_ref(z: np.ndarray) -> float:
    """Berk and Jones (1979): ``max_{i <= m/2} m K+(i/m, p_(i))``."""
    p = sorted(_p(z))
    m = len(p)
    return max(m * _kl_plus((i + 1) / m, p[i]) for i in range(max(1, m // 2)))


def alr_ref(z: np.ndarray) -> float:
    """Walther (2013): ``log sum_i w_i exp(m K+(i/m, p_(i)))``, ``w_i = (1/i) / H_k``."""
    p = sorted(_p(z))
    m = len(p)
    k = max(1, m // 2)
    h = sum(1.0 / (i + 1) for i in range(k))
    total = sum((1.0 / (i + 1)) / h * math.exp(m * _kl_plus((i + 1) / m, p[i]))
                for i in range(k))
    return math.log(total)


def csi_ref(cos, norm, shift, norm_train, shift_train) -> np.ndarray:
    """Eqs. (6)-(7), negated, by loops."""
    n, t = len(cos), len(cos[0])
    out = np.empty(n)
    for r in range(n):
        total = 0.0
        for j in range(t):
            lam_con = 1.0 / (sum(row[j] for row in norm_train) / len(norm_train))
            lam_shift = 1.0 / (sum(row[j] for row in shift_train) / len(shift_train))
            total += lam_con * cos[r][j] * norm[r][j] + lam_shift * shift[r][j]
        out[r] = -total
    return out


# --------------------------------------------------------------------------- Algorithms 2, 3
def algorithm2_ref(v: int, alpha: float, delta: float) -> int:
    """The paper's Algorithm 2 (bisection on the conformal level ``a``), literally.

    Returns ``l = floor((v + 1) a_min)``; the algorithm's output is ``a = (l + 0.99) /
    (v + 1)``. ``l = 0`` is the degenerate Beta whose FAR is 0 (taken as ``alpha_delta = 0``).
    """
    a_min, a_max = 0.0, 1.0
    while math.floor((v + 1) * a_max) - math.floor((v + 1) * a_min) > 1:
        a = 0.5 * (a_min + a_max)
        ll = math.floor((v + 1) * a)
        alpha_delta = 0.0 if ll == 0 else stats.beta.ppf(1 - delta, ll, v + 1 - ll)
        if alpha_delta > alpha:
            a_max = a
        else:
            a_min = a
    return math.floor((v + 1) * a_min)


def algorithm3_ref(cal: np.ndarray, s: np.ndarray, a: float) -> np.ndarray:
    """Algorithm 3, line 3-4: OOD iff the conformal p-value of eq. (22) is ``<= a``."""
    return pvalues_ref(cal, s, conformal=True) <= a
