"""Upper confidence bounds on a selective risk and the guaranteed-risk search (SGR).

Selection with guaranteed risk (Geifman and El-Yaniv, 2017) binary-searches the tie
groups of a calibration sample for the largest prefix whose risk bound meets a target;
:func:`sgr_search` also returns the least bound among its failed tests, which is the
smallest target the search can meet.
"""

from __future__ import annotations

import math

from scipy import stats

from .groups import TieGroups


def risk_upper_bound(
    total: float, count: float, level: float, bound: float, binary: bool, second: float
) -> float:
    """Upper confidence bound on a mean loss from ``count`` samples summing to ``total``.

    ``second`` is the sum of squared losses (for the empirical Bernstein bound).
    """
    m = count
    if binary:
        k = round(total)
        return 1.0 if k >= m else float(stats.beta.ppf(1.0 - level, k + 1, m - k))
    mean = total / m / bound
    log_term = math.log(2.0 / level)  # each of the two bounds at level / 2
    hoeffding = mean + math.sqrt(log_term / (2.0 * m))
    if m > 1:
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

