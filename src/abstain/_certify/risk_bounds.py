"""Upper confidence bounds on a selective risk and the guaranteed-risk search (SGR).

Selection with guaranteed risk (Geifman and El-Yaniv, 2017) binary-searches the tie
groups of a calibration sample for the largest prefix whose risk bound meets a target;
:func:`sgr_search` also returns the least bound among its failed tests, which is the
smallest target the search can meet. :func:`crc_search` is conformal risk control
(Angelopoulos, Bates, Fisch, Lei and Schuster 2022) of the joint risk
``E[loss * 1{accepted}]``, a guarantee in expectation.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._core.exact import sum_round_off
from .._core.groups import TieGroups
from .ltt import PVALUE_SLACK


def risk_upper_bound(
    total: float, count: float, level: float, bound: float, binary: bool, second: float
) -> float:
    """Upper confidence bound on a mean loss from ``count`` samples summing to ``total``.

    ``second`` is the sum of squared losses (for the empirical Bernstein bound).
    """
    m = count
    if binary:
        k = round(total)
        if k >= m:
            return 1.0
        from scipy import stats  # imported on first use: the command line starts faster

        # the upper tail's quantile: beta.ppf(1 - level) rounded 1 - 5e-17 to 1 (bound 1.0)
        # and lost the last digits of tiny levels. isf's tail is accurate to about 1e-11
        # (relative, levels down to 1e-290), one time in two above the level (the exact
        # test then fails): taken at the level lowered by PVALUE_SLACK, and one float up
        # (near 1, where an ulp moves the tail most)
        q = float(stats.beta.isf(level / (1.0 + PVALUE_SLACK), k + 1, m - k))
        return min(math.nextafter(q, 2.0), 1.0)
    mean = total / m / bound
    # each of the two bounds at level / 2: Hoeffding's one-sided tail at confidence d has
    # ln(1 / d), the empirical Bernstein bound (Maurer and Pontil 2009, theorem 4) ln(2 / d)
    hoeffding = mean + math.sqrt(math.log(2.0 / level) / (2.0 * m))
    if m > 1:
        log_term = math.log(4.0 / level)
        var = max(second / bound**2 / m - mean**2, 0.0) * m / (m - 1)
        bernstein = mean + math.sqrt(2.0 * var * log_term / m) + 7.0 * log_term / (3.0 * (m - 1))
    else:
        bernstein = math.inf
    return min(hoeffding, bernstein, 1.0) * bound


def sgr_search(
    groups: TieGroups,
    target: float,
    delta: float,
    bound: float,
    binary: bool,
    squares: TieGroups | None,
) -> tuple[int, float, float]:
    """Binary search for the largest tie-group prefix whose risk bound meets ``target``.

    ``squares`` groups the squared losses by the same scores (for the variance term).
    Returns ``(group index or -1, its bound, the least bound among the failed tests)``.
    When every test fails the search has walked one fixed chain of prefixes, so that
    least failed bound is the smallest target the search can meet.
    """
    n_groups = groups.counts.size
    tests = max(1, math.ceil(math.log2(n_groups + 1)))
    level = delta / tests
    second = None if squares is None else squares.cum_sums
    low, high = -1, n_groups  # low: best group index known to pass; high: known to fail
    best_bound, least_failed = math.nan, math.inf
    while high - low > 1:
        mid = (low + high) // 2
        b = risk_upper_bound(
            float(groups.cum_sums[mid]),
            float(groups.cum_counts[mid]),
            level,
            bound,
            binary,
            0.0 if second is None else float(second[mid]),
        )
        if b <= target:
            low, best_bound = mid, b
        else:
            high, least_failed = mid, min(least_failed, b)
    return low, best_bound, least_failed



def crc_search(groups: TieGroups, target: float, loss_bound: float,
               exact: bool = True) -> tuple[int, float, float]:
    """Conformal risk control of the joint risk ``E[loss * 1{accepted}]`` of a new row.

    The rules are ``r = (v, nu)``: accept ``s < v``, and ``s == v`` with probability ``nu``,
    ordered lexicographically (``(-inf, 1)`` rejects all, ``(+inf, 1)`` accepts all). The
    loss of row ``i`` under ``r``, averaged over the acceptance draw, is
    ``L_i(r) = l_i * (1{s_i < v} + nu * 1{s_i == v})``: in ``[0, B]`` and non-decreasing
    in ``r``. The search returns the largest rule with::

        (sum_{i <= n} L_i(r) + B) / (n + 1) <= target                           (*)

    Guarantee: if the ``n`` calibration rows and a new row are exchangeable, then
    ``E[L_{n+1}(r_hat)] <= target`` over all ``n + 1`` rows and the acceptance draw.
    Proof (Angelopoulos et al. 2022, Theorem 1, for this family): let ``r'`` be the
    largest rule with ``sum_{i <= n+1} L_i(r') <= (n + 1) target``. The sum is continuous
    in ``nu`` and ``(v, 1)`` equals ``(v_next, 0)``, so the largest such rule exists, and it
    is a symmetric function of the ``n + 1`` rows. Since ``L_{n+1} <= B``, (*) makes
    ``r_hat`` satisfy the same inequality, so ``r_hat <= r'`` (the feasible rules form a
    down-set because the sum is monotone) and ``L_{n+1}(r_hat) <= L_{n+1}(r')``. By
    exchangeability ``E[L_{n+1}(r')] = E[sum_{i <= n+1} L_i(r')] / (n + 1) <= target``.
    The proof uses only that ``r_hat`` satisfies (*), so any smaller rule (whole bins) is
    valid too. The conditional risk ``E[loss | accepted]`` is not controlled: its
    linearised loss ``(l_i - target) * 1{accepted}`` is not monotone in ``r``.

    (*) holds exactly, in rational arithmetic on the float inputs. ``exact``: the group
    sums are exact (:func:`~abstain._core.exact.sums_exact` of the losses, or a table's
    sums, which are its data); the budget ``(n + 1) target - B`` is then compared in
    rationals and ``nu`` rounded down, so the rule is the largest one to the last bit.
    Otherwise the sums may be off in their last bits, and the budget is divided by one plus
    their relative round-off, ``4 (n + 2) eps`` (the sums' terms are non-negative), so that
    accepting groups of no loss meets (*) wherever ``(n + 1) target >= B``.

    Returns ``(g, nu, bound)``: accept the groups before ``g`` and group ``g`` with
    probability ``nu`` in (0, 1]; ``g = G - 1, nu = 1`` when (*) holds for the rule that
    accepts all (its threshold is then ``+inf``), ``g = -1`` when no rule that accepts
    anything meets (*) (``n + 1 < B / target``, or exactly equal with a loss in the first
    group). ``bound`` is the left side of (*) at the returned rule, at most ``target``
    (NaN for ``g = -1``).
    """
    n_groups = groups.counts.size
    cum = groups.cum_sums
    n1 = groups.n + 1.0
    # what the accepted losses may sum to, in rationals
    budget = Fraction(target) * int(n1) - Fraction(loss_bound)
    if not exact and budget > 0:
        # lowered by the round-off of the sums: a float sum of non-negative terms is within
        # a relative sum_round_off of the exact one, so an accepted sum (a prefix sum plus a
        # share of the next group's) at most budget / (1 + that) is exactly at most budget
        # (a sum of no loss, 0, is exact whatever the rest)
        budget /= 1 + Fraction(sum_round_off(groups.n))
    k = int(np.searchsorted(cum, float(budget), side="right"))  # then to the last bit
    while k > 0 and Fraction(float(cum[k - 1])) > budget:
        k -= 1
    while k < n_groups and Fraction(float(cum[k])) <= budget:
        k += 1
    if budget < 0:
        return -1, 1.0, math.nan
    if k == n_groups:
        g, nu, accepted = n_groups - 1, 1.0, float(cum[-1])
    else:
        before = float(cum[k - 1]) if k > 0 else 0.0
        # in [0, 1): cum[k] > budget; rounded down, so that (*) holds
        share = (budget - Fraction(before)) / Fraction(float(groups.sums[k]))
        nu = float(share)
        if Fraction(nu) > share:
            nu = math.nextafter(nu, 0.0)
        if nu > 0.0 and 1.0 - nu < 1.0:  # a share below half an ulp of 1 accepts no row
            g, accepted = k, before + nu * float(groups.sums[k])
        elif k > 0:
            g, nu, accepted = k - 1, 1.0, before
        else:
            return -1, 1.0, math.nan
    # (*) holds exactly, so its left side rounds to at most target
    return g, nu, min((accepted + loss_bound) / n1, target)


def crc_least(groups: TieGroups, loss_bound: float, above: float, exact: bool) -> float:
    """The least float target at least ``above`` at which :func:`crc_search` accepts
    anything: ``B / (n + 1)`` where the lowest group has no loss, else a few ulps above it
    (the budget, divided by one plus its round-off where the sums are not exact, is 0
    there either way)."""
    start = loss_bound / (groups.n + 1.0)
    least = max(start * (1.0 - 2.0**-50), above)
    while crc_search(groups, least, loss_bound, exact)[0] < 0:  # a few ulps at most
        least = math.nextafter(least, math.inf)
    return least
