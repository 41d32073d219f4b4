"""Learn-then-Test for a selective risk: p-values and fixed-sequence testing over thresholds.

Learn-then-Test (Angelopoulos, Bates, Candes, Jordan and Lei, 2021) certifies a threshold
``t`` of the rule "accept ``s <= t``" by rejecting the null hypothesis ``H_t: R(t) > alpha``,
where ``R(t) = E[loss | s <= t]`` is the true selective risk. For a threshold fixed before
the data are seen, the losses of the accepted calibration rows are, given how many rows are
accepted, i.i.d. draws with mean ``R(t)``; so any valid p-value for "the mean of ``m``
i.i.d. losses in ``[0, 1]`` is above ``alpha``" tests ``H_t``. Three are offered:

* ``"binomial"`` (0/1 losses): ``P(Binomial(m, alpha) <= k)`` for ``k`` errors, exact;
* ``"hb"``: the Hoeffding-Bentkus p-value (Bates et al. 2021, Proposition 3),
  ``min(exp(-m h(min(r, alpha), alpha)), e * P(Binomial(m, alpha) <= ceil(m r)))`` for the
  mean loss ``r`` and ``h(a, b) = a log(a / b) + (1 - a) log((1 - a) / (1 - b))``;
* ``"wsr"``: the Waudby-Smith-Ramdas betting test in the form of Bates et al. (2021,
  Proposition 5): the capital ``K_i = prod_{j <= i} (1 - nu_j (L_j - alpha))`` with the
  predictable bets ``nu_j = min(1, sqrt(2 log(1 / delta) / (m sigma_{j-1}^2)))``, running mean
  ``mu_j = (1/2 + sum L) / (j + 1)`` and variance ``sigma_j^2 = (1/4 + sum (L - mu)^2) / (j + 1)``
  (``sigma_0^2 = 1/4``), taken over the accepted rows in row order; the p-value is
  ``min(1, 1 / max_i K_i)`` (Ville's inequality: ``K`` is a non-negative supermartingale
  under the null).

Multiple testing is fixed-sequence testing, which spends the whole ``delta`` on every test
and stops at the first failure. The sequence must be fixed before the tested rows are seen,
so the rows are split by position: every ``LEARN_EVERY``-th row (rows 0, 10, 20, ...) is a
*learning* row that fixes the grid of thresholds (``GRID_SIZE`` quantiles of its scores and
``+inf``) and the start of the sequence (the lowest grid point whose test at the target
looks safe when projected from the learning rows alone); the other rows test the grid from
the start upwards. The family-wise error over the tested thresholds is at most ``delta``,
so the last threshold of the passing run has ``R(t) <= alpha`` with probability at least
``1 - delta``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._core.exact import sums_exact

__all__ = [
    "GRID_SIZE",
    "LEARN_EVERY",
    "LTT_BOUNDS",
    "START_MARGIN",
    "LttResult",
    "binomial_pvalue",
    "hb_pvalue",
    "ltt_least",
    "ltt_search",
    "upper_bound",
    "wsr_pvalue",
]

LTT_BOUNDS = ("binomial", "hb", "wsr")
LEARN_EVERY = 10
GRID_SIZE = 200
#: The start is the lowest grid point whose projected p-value is at most ``delta / START_MARGIN``.
START_MARGIN = 20


def _binom_cdf(k: NDArray[np.float64], m: NDArray[np.float64],
               alpha: float) -> NDArray[np.float64]:
    """``P(Binomial(m, alpha) <= k)`` for whole numbers ``k`` and ``m`` (SciPy's ``bdtr``)."""
    from scipy import special  # on first use: commands start faster

    k = np.minimum(k, m)
    return special.bdtr(k.astype(np.int64), m.astype(np.int64), alpha)  # type: ignore[no-any-return]


def binomial_pvalue(errors: NDArray[np.float64], m: NDArray[np.float64],
                    alpha: float) -> NDArray[np.float64]:
    """``P(Binomial(m, alpha) <= errors)``: the exact p-value of ``mean > alpha`` for 0/1
    losses (1 where ``m == 0``; 0 where ``alpha >= 1``)."""
    errors, m = np.asarray(errors, float), np.asarray(m, float)
    if alpha >= 1.0:
        return np.zeros(np.broadcast(errors, m).shape)
    return np.where(m > 0, _binom_cdf(errors, m, alpha), 1.0)


def hb_pvalue(total: NDArray[np.float64], m: NDArray[np.float64],
              alpha: float) -> NDArray[np.float64]:
    """Hoeffding-Bentkus p-value of ``mean > alpha`` for ``m`` losses in ``[0, 1]`` with the
    given loss total (1 where ``m == 0``; 0 where ``alpha >= 1``)."""
    total, m = np.asarray(total, float), np.asarray(m, float)
    if alpha >= 1.0:
        return np.zeros(np.broadcast(total, m).shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(m > 0, total / np.maximum(m, 1.0), 0.0)
    a = np.minimum(mean, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(a > 0, a * np.log(a / alpha), 0.0) + (1 - a) * np.log((1 - a) / (1 - alpha))
        hoeffding = np.exp(-m * h)
        # the ceil of the loss total itself (m times the mean rounded 26 up to 26.000...04,
        # and the ceil to 27: a p-value 60 % too large)
        bentkus = math.e * _binom_cdf(np.ceil(total), m, alpha)
    return np.where(m > 0, np.minimum(np.minimum(hoeffding, bentkus), 1.0), 1.0)


def wsr_pvalue(losses: NDArray[np.float64], accepted: NDArray[np.bool_], alpha: float,
               delta: float) -> NDArray[np.float64]:
    """Waudby-Smith-Ramdas betting p-values of ``mean > alpha``, one per row of ``accepted``.

    ``losses`` (shape (n,)) lie in ``[0, 1]``; row ``a`` of ``accepted`` (shape (M, n))
    selects the losses of one threshold, taken in their order. 1 where nothing is accepted.
    """
    if alpha >= 1.0:
        return np.zeros(accepted.shape[0])
    if accepted.shape[1] == 0:
        return np.ones(accepted.shape[0])
    w = accepted.astype(np.float64)
    x = w * losses[None, :]
    count = np.cumsum(w, axis=1)
    m = count[:, -1:]
    mu = (0.5 + np.cumsum(x, axis=1)) / (1.0 + count)
    sq = w * (losses[None, :] - mu) ** 2
    q = np.cumsum(sq, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the variance before row j: (1/4 + sum of earlier squares) / (earlier count + 1)
        sigma_prev = (0.25 + q - sq) / np.maximum(count, 1.0)
        nu = np.minimum(1.0, np.sqrt(2.0 * math.log(1.0 / delta) / (m * sigma_prev)))
    factor = np.where(accepted, 1.0 - nu * (losses[None, :] - alpha), 1.0)
    with np.errstate(divide="ignore"):  # a factor of 0 loses all the capital: log 0 = -inf
        log_k = np.cumsum(np.log(factor), axis=1)
    best = np.max(log_k, axis=1)
    return np.minimum(1.0, np.exp(-best))


def _pvalues(bound: str, u: NDArray[np.float64], x: NDArray[np.float64],
             grid: NDArray[np.float64], alpha: float, delta: float) -> NDArray[np.float64]:
    """p-values of ``R(t) > alpha`` at each threshold of ``grid`` from rows ``(u, x)``."""
    if bound == "wsr":
        return wsr_pvalue(x, u[None, :] <= grid[:, None], alpha, delta)
    return _count_pvalues(bound, *_accepted_totals(u, x, grid), alpha)


def _accepted_totals(u: NDArray[np.float64], x: NDArray[np.float64],
                     grid: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Accepted rows ``m`` and their summed loss at each threshold of ``grid``: the running
    sum of the losses ordered by score, then by loss, whatever the row order (the one total
    of the search and of :func:`upper_bound`)."""
    order = np.lexsort((x, u))
    us = u[order]
    xs = x[order]
    sums = np.concatenate(([0.0], np.cumsum(xs)))
    m = np.searchsorted(us, grid, side="right").astype(np.float64)
    return m, _ceil_exact(sums[m.astype(np.intp)], m, xs)


def _ceil_exact(total: NDArray[np.float64], m: NDArray[np.float64],
                xs: NDArray[np.float64]) -> NDArray[np.float64]:
    """``total`` (running sums of ``xs`` at ``m`` rows) with each total within its round-off
    of a whole number replaced by the least float at or above the exact sum, so that its
    ceiling, the count of the Hoeffding-Bentkus bound, is the exact sum's: a sum just above
    22 that rounds to 22.0 took the ceiling 22 for 23 (a p-value too small, a target
    certified that the exact test rejects). Exact sums (0/1 losses) are left as they are."""
    if sums_exact(xs):
        return total
    out = total.copy()
    near = np.flatnonzero(np.abs(total - np.rint(total)) <= 4 * m * 2.0**-53 * total)
    if near.size == 0:
        return out
    acc, done = Fraction(0), 0
    for j in near[np.argsort(m[near], kind="stable")]:  # one pass over the rows, in order
        upto = int(m[j])
        acc += sum((Fraction(v) for v in xs[done:upto].tolist()), Fraction(0))
        done = upto
        f = float(acc)
        out[j] = f if Fraction(f) >= acc else math.nextafter(f, math.inf)
    return out


#: The count p-values are raised by this relative amount before they meet ``delta``:
#: SciPy's ``bdtr`` and ``beta.isf`` are accurate to about 1e-14 (1e-11 in far tails), so a
#: p-value computed at or just below ``delta`` may be above it exactly
#: (0.05000000000000026 passed at delta 0.05).
PVALUE_SLACK = 1e-9
#: Selective risks within this relative distance are a tie in :func:`certified_tpr_fpr`, as
#: in the searches without ``delta``.
RISK_TIE = 1e-12


def _count_pvalues(bound: str, m: NDArray[np.float64], total: NDArray[np.float64],
                   alpha: float) -> NDArray[np.float64]:
    """The ``"binomial"`` or ``"hb"`` p-values from the accepted counts and loss totals,
    raised by :data:`PVALUE_SLACK` (relative)."""
    if bound == "binomial":
        p = binomial_pvalue(np.round(total).astype(np.float64), m, alpha)
    else:
        p = hb_pvalue(total, m, alpha)
    return p * (1.0 + PVALUE_SLACK)


def in_units(target: float, scale: float) -> float:
    """The largest float ``a`` with ``a * scale <= target`` exactly (``target / scale``
    rounded down): a bound certified at ``a`` is at most ``target`` in the units of
    ``scale`` (``target / scale`` rounded to nearest gave a bound one ulp above it)."""
    a = target / scale
    while scale != 1.0 and math.isfinite(a) and Fraction(a) * Fraction(scale) > Fraction(target):
        a = math.nextafter(a, -math.inf)
    return a


def upper_bound(bound: str, u: NDArray[np.float64], x: NDArray[np.float64], threshold: float,
                delta: float, passed: float = 1.0) -> float:
    """The least ``alpha`` in ``[0, 1]`` whose p-value at ``threshold`` is at most ``delta``:
    the level-``delta`` upper confidence bound that the test inverts (bisection to a relative
    1e-12; the value returned passes the test; 1.0 when nothing passes). ``passed``: a
    level known to pass (the target the threshold was certified at), so the bound found
    is at most it; the test reads the loss total of :func:`_accepted_totals`, as the
    search did."""
    if bound == "wsr":
        xa = x[u <= threshold]

        def pvalue(a: float) -> float:
            return float(wsr_pvalue(xa, np.ones((1, xa.size), bool), a, delta)[0])
    else:
        m, total = _accepted_totals(u, x, np.array([threshold]))

        def pvalue(a: float) -> float:
            return float(_count_pvalues(bound, m, total, a)[0])
    top = next((t for t in (min(1.0 - 1e-12, passed), 1.0 - 1e-12) if pvalue(t) <= delta),
               None)
    if top is None:
        return 1.0
    lo, hi = 0.0, top
    while hi - lo > 1e-12 * max(hi, 1e-3):
        mid = 0.5 * (lo + hi)
        if pvalue(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


class LttResult(NamedTuple):
    """What :func:`ltt_search` found.

    Attributes
    ----------
    threshold : float
        The certified threshold (accept ``s <= threshold``); ``nan`` when none passed.
    bound : float
        The level-``delta`` upper confidence bound at ``threshold`` (``nan`` when none).
    """

    threshold: float
    bound: float


def learn_rows(n: int) -> NDArray[np.bool_]:
    """The learning rows of a calibration sample of ``n`` rows: every ``LEARN_EVERY``-th."""
    return np.arange(n) % LEARN_EVERY == 0


def ltt_plan(u: NDArray[np.float64], x: NDArray[np.float64], n_test: int, alpha: float,
             delta: float) -> tuple[NDArray[np.float64], int]:
    """Grid and start of the fixed sequence, from the learning rows ``(u, x)`` alone.

    The grid is ``GRID_SIZE`` quantiles of ``u`` (linear interpolation, distinct values)
    and ``+inf``. At each grid point the test at ``alpha`` is projected from the learning
    rows: the binomial p-value ``P(Binomial(m, alpha) <= k)`` (continued to real ``k`` and
    ``m`` by the regularised incomplete beta function) with ``m`` the accepted learning
    count ``c`` less one standard deviation, ``c - sqrt(c)``, scaled to ``n_test`` rows, and
    ``k`` the accepted learning loss (at most that) scaled alike. The
    start is the lowest grid point whose projected p-value is at most
    ``delta / START_MARGIN`` (a margin for the noise of the learning rows: a start whose
    test fails ends the sequence at once, while the climb from a deeper start costs
    nothing), or the point of least projected p-value when none is. The margin was
    measured on simulated risk curves (docs/guarantees.md); any margin keeps the guarantee,
    since the start depends on the learning rows alone.
    """
    grid, m, k = _projection(u, x, n_test)
    return grid, _start(m, k, alpha, delta)


def _projection(u: NDArray[np.float64], x: NDArray[np.float64], n_test: int) -> tuple[
        NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The grid of :func:`ltt_plan` and the projected count ``m`` and loss ``k`` at each point."""
    levels = np.arange(1, GRID_SIZE + 1) / GRID_SIZE
    grid = np.unique(np.append(np.quantile(u, levels), np.inf))
    us = np.sort(u)
    order = np.argsort(u, kind="stable")
    sums = np.concatenate(([0.0], np.cumsum(x[order])))
    m_learn = np.searchsorted(us, grid, side="right")
    # one standard deviation off the learning count: a start resting on a handful of
    # learning rows must not be taken for a safe one
    counted = np.maximum(m_learn - np.sqrt(m_learn), 0.0)
    scale = n_test / u.size
    return grid, counted * scale, np.minimum(sums[m_learn], counted) * scale


def _start(m: NDArray[np.float64], k: NDArray[np.float64], alpha: float, delta: float) -> int:
    """The start of :func:`ltt_plan` from the projected counts and losses at ``alpha``."""
    p = _projected(m, k, alpha)
    safe = np.flatnonzero(p <= delta / START_MARGIN)
    return int(safe[0]) if safe.size else int(np.argmin(p))


def _split(u: NDArray[np.float64], x: NDArray[np.float64]) -> tuple[
        NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    learn = learn_rows(u.size)
    return u[learn], x[learn], u[~learn], x[~learn]


def ltt_search(u: NDArray[np.float64], x: NDArray[np.float64], alpha: float, delta: float,
               bound: str) -> LttResult:
    """Fixed-sequence Learn-then-Test over the grid of the learning rows.

    Parameters
    ----------
    u : ndarray of shape (n,)
        Scores (accept ``s <= t``), in row order.
    x : ndarray of shape (n,)
        Losses scaled to ``[0, 1]`` (0/1 for ``"binomial"``).
    alpha : float
        The target, in the units of ``x``.
    delta : float in (0, 1)
    bound : {"binomial", "hb", "wsr"}

    Returns
    -------
    LttResult
    """
    ul, xl, ut, xt = _split(u, x)
    grid, start = ltt_plan(ul, xl, ut.size, alpha, delta)
    tail = grid[start:]
    # the betting p-values cost O(rows) per threshold: test in blocks, stop at a failure
    block = 32 if bound == "wsr" else tail.size
    run = 0
    for lo in range(0, tail.size, block):
        passed = _pvalues(bound, ut, xt, tail[lo:lo + block], alpha, delta) <= delta
        if not np.all(passed):
            run = lo + int(np.argmin(passed))
            break
        run = lo + passed.size
    if run == 0:
        return LttResult(math.nan, math.nan)
    theta = float(tail[run - 1])
    return LttResult(theta, upper_bound(bound, ut, xt, theta, delta, passed=alpha))


def ltt_least(u: NDArray[np.float64], x: NDArray[np.float64], delta: float, bound: str, *,
              scale: float = 1.0, above: float = 0.0) -> float:
    """The least target ``t >= above`` at which ``ltt_search(u, x, t / scale, delta, bound)``
    finds a rule (``t`` in the units of ``x * scale``; every ``t >= scale`` is feasible).

    The search finds a rule exactly when the test at its start passes, and the start moves
    with the target: feasibility is **not monotone** in the target (a larger target can
    start the sequence lower, at a threshold whose test fails). So the least feasible
    target is found from the exact criterion, not by bisection on the target: the targets
    are cut into pieces on which the start is one grid point ``j`` (the change points of
    the start, found between 1,025 evenly spaced targets and the targets at which a grid
    point turns safe, to adjacent floats); the test at ``j`` passes on a piece from a least
    target on, as every p-value falls with the target, so the first piece whose last
    target passes holds the answer, found by bisection on the floats of the piece. The
    value returned is feasible and the float below it is not (unless it is ``above``).
    """
    ul, xl, ut, xt = _split(u, x)
    grid, m, k = _projection(ul, xl, ut.size)
    start_memo: dict[float, int] = {}

    def start(t: float) -> int:
        if t not in start_memo:
            start_memo[t] = _start(m, k, in_units(t, scale), delta)
        return start_memo[t]

    if bound != "wsr":  # the counts and totals of every grid point, once
        m_test, total = _accepted_totals(ut, xt, grid)

    def passes(j: int, t: float) -> bool:
        if bound == "wsr":
            p = _pvalues(bound, ut, xt, grid[j:j + 1], in_units(t, scale), delta)
        else:
            p = _count_pvalues(bound, m_test[j:j + 1], total[j:j + 1], in_units(t, scale))
        return bool(p[0] <= delta)

    lo = max(float(above), 0.0)
    if lo >= scale:
        return lo
    # where each grid point turns safe (its projected p-value falls with the target)
    a, b = np.full(grid.size, _bits(lo)), np.full(grid.size, _bits(scale))
    while np.any(b - a > 1):  # bisection on the float bits of every grid point at once
        mid = (a + b) // 2
        safe = _projected(m, k, mid.view(np.float64) / scale) <= delta / START_MARGIN
        a, b = np.where(safe, a, mid), np.where(safe, mid, b)
    turns = b.view(np.float64)
    samples = np.unique(np.concatenate((np.linspace(lo, scale, 1025), turns)))
    pieces = [(float(samples[0]), start(float(samples[0])))]
    for t0, t1 in zip(samples[:-1], samples[1:], strict=True):
        _change_points(float(t0), float(t1), start, pieces)
    for i, (left, j) in enumerate(pieces):
        last = scale if i + 1 == len(pieces) else _prev(pieces[i + 1][0])
        if passes(j, last):
            return _least_float(left, last, partial(passes, j))
    return scale


def _projected(m: NDArray[np.float64], k: NDArray[np.float64],
               alpha: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """The projected p-values of :func:`ltt_plan` at ``alpha`` (a target, or one per point)."""
    from scipy import special  # on first use: commands start faster

    a = np.clip(alpha, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((m > 0) & (k < m),  # type: ignore[no-any-return]
                        special.betainc(m - k, k + 1.0, 1.0 - a), 1.0)


def _prev(t: float) -> float:
    return math.nextafter(t, -math.inf)


def _least_float(lo: float, hi: float, ok: Callable[[float], bool]) -> float:
    """The least float in ``[lo, hi]`` where ``ok`` holds, for ``ok`` monotone there
    (``inf`` when false at ``hi``): bisection on the float bits."""
    if not ok(hi):
        return math.inf
    if ok(lo):
        return lo
    a, b = _bits(lo), _bits(hi)
    while b - a > 1:
        mid = (a + b) // 2
        if ok(_float(mid)):
            b = mid
        else:
            a = mid
    return _float(b)


def _change_points(a: float, b: float, start: Callable[[float], int],
                   pieces: list[tuple[float, int]]) -> None:
    """Append ``(t, start(t))`` for each change point ``t`` of ``start`` in ``(a, b]`` that
    bisection between ``a`` and ``b`` finds (to adjacent floats), in order."""
    stack = [(_bits(a), _bits(b))]
    while stack:
        lo, hi = stack.pop()
        if start(_float(lo)) == start(_float(hi)):
            continue
        if hi - lo == 1:
            pieces.append((_float(hi), start(_float(hi))))
            continue
        mid = (lo + hi) // 2
        stack += [(mid, hi), (lo, mid)]  # the lower half first


def _bits(t: float) -> int:
    return int(np.float64(t).view(np.int64))


def _float(bits: int) -> float:
    return float(np.int64(bits).view(np.float64))


def certified_tpr_fpr(s: NDArray[np.float64], is_ood: NDArray[np.bool_],
                      losses: NDArray[np.float64], directions: NDArray[np.float64],
                      tpr: float, fpr: float,
                      delta: float) -> tuple[float, float, float, float, NDArray[np.float64],
                                             float] | None:
    """The least-risk threshold rule whose TPR >= ``tpr`` and FPR <= ``fpr`` are certified.

    Each rate is a risk of one class: ``1 - TPR`` is the rejected share of ID rows and FPR
    the accepted share of OOD rows, so each is tested with :func:`binomial_pvalue` from the
    counts of its own class (i.i.d. within the class given the class sizes). Along one
    direction both rates only grow with the threshold, so fixed-sequence testing from the
    safe end (``+inf`` for TPR, ``-inf`` for FPR) certifies exactly the thresholds whose
    p-value is at most its level; the levels are ``delta / 2`` per rate, Bonferroni-split
    again over the ``directions`` (a grid fixed before the data). Every certified rule
    holds both rates with probability ``>= 1 - delta`` simultaneously, so the one of least
    empirical selective risk is returned (ties: larger accepted ID count, then fewer OOD).

    Parameters
    ----------
    s : ndarray of shape (n, k)
    is_ood : ndarray of bool, shape (n,)
    losses : ndarray of shape (n,)
        Ignored on OOD rows.
    directions : ndarray of shape (d, k)
    tpr, fpr, delta : float

    Returns
    -------
    tuple or None
        ``(accepted ID, accepted OOD, accepted ID loss, risk, weights, threshold)`` of the
        rule "accept ``s @ weights <= threshold``", or None when no rule is certified.
    """
    level = delta / (2.0 * directions.shape[0])
    m_id, m_ood = float(np.count_nonzero(~is_ood)), float(np.count_nonzero(is_ood))
    best: tuple[float, float, float, float, NDArray[np.float64], float] | None = None
    slack = 1.0 + PVALUE_SLACK  # round-off never certifies a rule (as _count_pvalues)
    for w in directions:
        proj = s[:, 0] * w[0]
        for j in range(1, s.shape[1]):
            proj = proj + s[:, j] * w[j]
        order = np.argsort(proj, kind="stable")
        ps = proj[order]
        last = np.append(ps[1:] != ps[:-1], True)  # the last row of each tie group
        ood = is_ood[order]
        k = np.cumsum(~ood)[last].astype(np.float64)
        o = np.cumsum(ood)[last].astype(np.float64)
        loss = np.cumsum(np.where(ood, 0.0, losses[order]))[last]
        ok = ((binomial_pvalue(m_id - k, np.full(k.size, m_id), 1.0 - tpr) * slack <= level)
              & (binomial_pvalue(o, np.full(o.size, m_ood), fpr) * slack <= level) & (k > 0))
        if not np.any(ok):
            continue
        idx = np.flatnonzero(ok)
        risk = loss[idx] / k[idx]
        # least risk (risks within a relative RISK_TIE are equal: sums of the same losses in
        # another order), then most ID accepted, then fewest OOD accepted
        near = idx[risk <= risk.min() * (1.0 + RISK_TIE)]
        pick = near[np.lexsort((o[near], -k[near]))[0]]
        cand = (float(k[pick]), float(o[pick]), float(loss[pick]), float(loss[pick] / k[pick]),
                w, float(ps[last][pick]))
        if best is None or cand[3] < best[3] * (1.0 - RISK_TIE) or (
                cand[3] <= best[3] * (1.0 + RISK_TIE)
                and (-cand[0], cand[1]) < (-best[0], best[1])):
            best = cand
    return best
