"""Tie groups of a calibration sample: the one sort every metric and reject model shares.

The sample is sorted by uncertainty (ascending: the lowest uncertainty is accepted
first) and cut into groups of equal uncertainty. Every randomised threshold rule
``(theta, nu)`` accepts a prefix of whole groups plus a fraction ``nu`` of the
next one, so its expected accepted count ``x`` and expected accepted loss ``C(x)``
lie on the piecewise-linear curve through the knots ``(N_g, C_g)``: ``N_g`` is the
number of samples in groups ``0..g`` and ``C_g`` their summed loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._validation import as_losses, as_scores, check_same_length


@dataclass(frozen=True)
class TieGroups:
    """Sorted distinct uncertainty values with the count and loss sum of each group.

    Attributes
    ----------
    values : ndarray of shape (G,)
        Distinct uncertainty values, ascending.
    counts : ndarray of shape (G,)
        Number of samples per group (float64, exact up to 2**53).
    sums : ndarray of shape (G,)
        Summed loss per group.
    cum_counts, cum_sums : ndarray of shape (G,)
        ``N_g`` and ``C_g``: running totals up to and including group ``g``.
    """

    values: NDArray[np.float64]
    counts: NDArray[np.float64]
    sums: NDArray[np.float64]
    cum_counts: NDArray[np.float64]
    cum_sums: NDArray[np.float64]

    @property
    def n(self) -> float:
        return float(self.cum_counts[-1])

    def loss_at(self, x: float) -> float:
        """Expected accepted loss ``C(x)`` when ``x`` samples are accepted in expectation."""
        return float(np.interp(x, self.knots_x, self.knots_y))

    @property
    def knots_x(self) -> NDArray[np.float64]:
        return np.concatenate(([0.0], self.cum_counts))

    @property
    def knots_y(self) -> NDArray[np.float64]:
        return np.concatenate(([0.0], self.cum_sums))

    def rule_at(self, x: float) -> tuple[int, float]:
        """The canonical rule accepting ``x`` samples in expectation, ``0 < x <= n``.

        Returns the group index ``g`` whose value is the threshold and the acceptance
        probability ``nu`` in (0, 1] of that group.
        """
        g = int(np.searchsorted(self.cum_counts, x, side="left"))
        g = min(g, len(self.counts) - 1)
        before = self.cum_counts[g] - self.counts[g]
        nu = (x - before) / self.counts[g]
        return g, float(min(max(nu, 0.0), 1.0))

    def max_accepted_at_risk(self, target_risk: float) -> float:
        """Largest expected accepted count ``x`` with ``C(x) <= target_risk * x``; 0 if none.

        ``C(x) - target_risk * x`` is linear between knots and zero at ``x = 0``, so the
        answer is the last knot whose risk meets the target, extended into the next
        group up to the point where the risk of the partial acceptance hits the target.
        """
        risk = self.cum_sums / self.cum_counts
        ok = np.flatnonzero(risk <= target_risk)
        if ok.size == 0:
            return 0.0
        g = int(ok[-1])
        x = float(self.cum_counts[g])
        if g + 1 < self.counts.size:
            slack = target_risk * x - self.cum_sums[g]
            excess = self.sums[g + 1] - target_risk * self.counts[g + 1]
            if excess > 0 and slack > 0:
                x += float(self.counts[g + 1] * min(slack / excess, 1.0))
        return x


def sorted_by_uncertainty(
    losses: NDArray[np.float64], uncertainty: NDArray[np.float64], *, stable: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """Sort ascending by uncertainty; return sorted scores, sorted losses, group end indices.

    ``stable=True`` keeps the row order among ties (the paper's index rule); otherwise
    the order inside a tie group is arbitrary and only group totals may be used. A
    stable sort is slower, so it is run only when the fast sort found ties.
    """
    order = np.argsort(uncertainty)
    u = uncertainty[order]
    ends = np.flatnonzero(u[1:] != u[:-1])
    if stable and ends.size < u.size - 1:
        order = np.argsort(uncertainty, kind="stable")
        u = uncertainty[order]
    ends = np.append(ends, u.size - 1)
    return u, losses[order], ends


def tie_groups(losses: NDArray[np.float64], uncertainty: NDArray[np.float64]) -> TieGroups:
    """Group validated arrays by distinct uncertainty value."""
    u, ls, ends = sorted_by_uncertainty(losses, uncertainty, stable=False)
    cum_sums = np.cumsum(ls)[ends]
    cum_counts = (ends + 1).astype(np.float64)
    counts = np.diff(cum_counts, prepend=0.0)
    # Adding a non-negative number never lowers a float, so group sums are >= 0.
    sums = np.diff(cum_sums, prepend=0.0)
    return TieGroups(u[ends], counts, sums, cum_counts, cum_sums)


def validated_groups(losses: object, uncertainty: object) -> TieGroups:
    """Validate ``losses`` and ``uncertainty`` and group them."""
    ls = as_losses(losses)  # type: ignore[arg-type]
    u = as_scores(uncertainty)  # type: ignore[arg-type]
    check_same_length(losses=ls, uncertainty=u)
    return tie_groups(ls, u)
