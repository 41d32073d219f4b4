"""Brute-force reference for conformal risk control of the joint risk.

Angelopoulos, Bates, Fisch, Lei and Schuster (2022), "Conformal risk control": for losses
``L_i(r)`` in ``[0, B]`` that are monotone in the rule ``r``, take the largest rule with
``(sum_i L_i(r) + B) / (n + 1) <= alpha``. Here the rules are ``(v, nu)``: accept
``s < v`` and ``s == v`` with probability ``nu``; the loss of row ``i`` is its loss times
its acceptance probability. Written with plain loops over the candidate ``v`` (every
distinct score and ``+inf``, largest first) and over the rows, in exact rational
arithmetic: the first ``v`` at which some ``nu > 0`` meets the inequality gives the rule.
"""

from __future__ import annotations

import math
from fractions import Fraction


def crc_ref(uncertainty: list[float], losses: list[float], alpha: float,
            loss_bound: float) -> tuple[float, Fraction, Fraction | None]:
    """``(v, nu, bound)`` of the largest rule; ``(-inf, 1, None)`` when none accepts anything.

    ``v = +inf`` means "accept everything"; ``bound`` is ``(sum_i L_i + B) / (n + 1)``.
    """
    n = len(uncertainty)
    budget = Fraction(alpha) * (n + 1) - Fraction(loss_bound)
    for v in [math.inf, *sorted(set(uncertainty), reverse=True)]:
        below = sum((Fraction(l_) for s, l_ in zip(uncertainty, losses, strict=True) if s < v),
                    Fraction(0))
        at = sum((Fraction(l_) for s, l_ in zip(uncertainty, losses, strict=True) if s == v),
                 Fraction(0))
        if v == math.inf:
            if below <= budget:
                return v, Fraction(1), (below + Fraction(loss_bound)) / (n + 1)
            continue
        if at == 0:
            nu = Fraction(1) if below <= budget else Fraction(0)
        else:
            nu = min(Fraction(1), (budget - below) / at)
        if nu > 0:
            return v, nu, (below + nu * at + Fraction(loss_bound)) / (n + 1)
    return -math.inf, Fraction(1), None
