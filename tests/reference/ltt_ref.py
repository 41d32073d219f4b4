"""Brute-force references for Learn-then-Test on a selective risk (abstain._certify.ltt).

Written from the sources with plain loops, one threshold and one row at a time:

* the binomial tail ``P(Binomial(m, a) <= k)`` summed term by term from ``math.comb``;
* the Hoeffding-Bentkus p-value of Bates, Angelopoulos, Lei, Malik and Jordan (2021),
  "Distribution-free, risk-controlling prediction sets", Proposition 3:
  ``min(exp(-m h1(min(r, a), a)), e P(Binomial(m, a) <= ceil(m r)))``;
* the Waudby-Smith-Ramdas betting p-value in the form of the same paper, Proposition 5
  (``nu_i = min(1, sqrt(2 log(1/delta) / (m sigma_{i-1}^2)))``, capital
  ``prod (1 - nu_i (L_i - a))``, p-value ``1 / max capital``);
* fixed-sequence testing (Angelopoulos, Bates, Candes, Jordan and Lei 2021, "Learn then
  Test", section 4): test the grid from its start upwards, stop at the first failure.

The grid and the start follow the documented plan: every tenth row learns, the grid is 200
linearly interpolated quantiles of the learning scores and ``+inf``, the start is the grid
point whose projected binomial p-value at the target (the learning count ``c`` less
``sqrt(c)``, and the learning loss capped at that, scaled to the testing rows) is at most
``delta / 20``, else the point of least projected p-value.
"""

from __future__ import annotations

import math

from scipy import special


def binomial_cdf_ref(k: int, m: int, a: float) -> float:
    """``P(Binomial(m, a) <= k)`` from the sum of ``comb(m, i) a^i (1 - a)^(m - i)``."""
    if k < 0:
        return 0.0
    return math.fsum(math.comb(m, i) * a**i * (1 - a) ** (m - i) for i in range(min(k, m) + 1))


def binomial_pvalue_ref(losses: list[float], a: float) -> float:
    if a >= 1.0:
        return 0.0
    if not losses:
        return 1.0
    return binomial_cdf_ref(round(sum(losses)), len(losses), a)


def hb_pvalue_ref(losses: list[float], a: float) -> float:
    if a >= 1.0:
        return 0.0
    m = len(losses)
    if m == 0:
        return 1.0
    r = sum(losses) / m
    b = min(r, a)
    h1 = (b * math.log(b / a) if b > 0 else 0.0) + (1 - b) * math.log((1 - b) / (1 - a))
    hoeffding = math.exp(-m * h1)
    bentkus = math.e * binomial_cdf_ref(math.ceil(m * r), m, a)
    return min(hoeffding, bentkus, 1.0)


def wsr_pvalue_ref(losses: list[float], a: float, delta: float) -> float:
    if a >= 1.0:
        return 0.0
    m = len(losses)
    if m == 0:
        return 1.0
    total, squares, sigma2 = 0.0, 0.0, 0.25
    log_capital, best = 0.0, 0.0
    for i, x in enumerate(losses, start=1):
        nu = min(1.0, math.sqrt(2 * math.log(1 / delta) / (m * sigma2)))
        log_capital += math.log(1 - nu * (x - a))
        best = max(best, log_capital)
        total += x
        mu = (0.5 + total) / (i + 1)
        squares += (x - mu) ** 2
        sigma2 = (0.25 + squares) / (i + 1)
    return min(1.0, math.exp(-best))


PVALUE_REF = {"binomial": lambda xs, a, d: binomial_pvalue_ref(xs, a),
              "hb": lambda xs, a, d: hb_pvalue_ref(xs, a),
              "wsr": wsr_pvalue_ref}


def _quantile(sorted_u: list[float], q: float) -> float:
    """Linear interpolation between order statistics (NumPy's default quantile)."""
    h = (len(sorted_u) - 1) * q
    lo = math.floor(h)
    if lo + 1 >= len(sorted_u):
        return sorted_u[-1]
    return sorted_u[lo] + (h - lo) * (sorted_u[lo + 1] - sorted_u[lo])


def ltt_ref(u: list[float], x: list[float], a: float, delta: float,
            bound: str) -> float | None:
    """The certified threshold of fixed-sequence Learn-then-Test, or None."""
    learn = [i for i in range(len(u)) if i % 10 == 0]
    test = [i for i in range(len(u)) if i % 10 != 0]
    su = sorted(u[i] for i in learn)
    grid = sorted(set([_quantile(su, j / 200) for j in range(1, 201)] + [math.inf]))
    best, start, safe = math.inf, 0, None
    for j, t in enumerate(grid):
        acc = [i for i in learn if u[i] <= t]
        counted = max(len(acc) - math.sqrt(len(acc)), 0.0)  # one standard deviation off
        m = counted * len(test) / len(learn)
        k = min(sum(x[i] for i in acc), counted) * len(test) / len(learn)
        # P(Binomial(m, a) <= k) continued to real k, m
        p = special.betainc(m - k, k + 1, 1 - min(a, 1.0)) if m > 0 and k < m else 1.0
        if p <= delta / 20 and safe is None:
            safe = j
        if p < best:
            best, start = p, j
    if safe is not None:
        start = safe
    last = None
    for t in grid[start:]:
        accepted = [x[i] for i in test if u[i] <= t]  # row order
        if PVALUE_REF[bound](accepted, a, delta) > delta:
            break
        last = t
    return last


def certified_tpr_fpr_ref(s: list[float], is_ood: list[bool], losses: list[float],
                          tpr: float, fpr: float, delta: float) -> tuple[float, float] | None:
    """One score: every threshold "accept s <= t" at an observed score, its TPR certified by
    ``P(Binomial(#ID, tpr) >= accepted ID) <= delta / 2`` and its FPR by
    ``P(Binomial(#OOD, fpr) <= accepted OOD) <= delta / 2``; the least empirical selective
    risk, then the most accepted ID, then the fewest OOD. Returns ``(threshold, risk)``."""
    m_id = sum(not o for o in is_ood)
    m_ood = sum(is_ood)
    best = None
    for t in sorted(set(s)):
        k = sum(1 for v, o in zip(s, is_ood, strict=True) if v <= t and not o)
        j = sum(1 for v, o in zip(s, is_ood, strict=True) if v <= t and o)
        loss = sum(x for v, o, x in zip(s, is_ood, losses, strict=True) if v <= t and not o)
        p_tpr = 1.0 - binomial_cdf_ref(k - 1, m_id, tpr) if tpr < 1 else 1.0
        p_fpr = binomial_cdf_ref(j, m_ood, fpr) if fpr < 1 else 0.0
        if k == 0 or p_tpr > delta / 2 or p_fpr > delta / 2:
            continue
        key = (loss / k, -k, j)
        if best is None or key < best[0]:
            best = (key, t)
    return None if best is None else (best[1], best[0][0])
